// Package bridgeboot builds the bridge's handler at cold start (see
// package boot): the function that consumes the ingress queue of Stripe's
// EventBridge destination (package bridge). It imports only what the
// bridge runs: the ingest path (store and queue) and the handled types;
// no signature check (EventBridge signs nothing), no mirror, processor,
// reconciler or Stripe API client (TestDependencies in package boot holds
// it to that).
package bridgeboot

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/bridge"
)

// New builds the bridge's handler from the environment the template
// gives it: the common variables (package boot), EVENTBRIDGE_SOURCE (the
// partner event source the bus is associated with), EVENTBRIDGE_ACCOUNT
// (the stack's AWS account), INGRESS_DLQ_URL (where rejected messages
// go) and STRIPE_CONNECT ("true" on a Connect platform: each connected
// account an event is stored of is recorded, boot.RecordAccounts). effects are the team's effects (hooks.Registry()); the bridge reads
// only their event types, its allowlist beside the mirror's
// (boot.HandledTypeList), the very list the stack's rule routes. It reads
// no secret and makes no network call.
func New(_ context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*bridge.Handler, error) {
	r := boot.NewReader(env, cfg)
	c := r.Common()
	src := r.Checked("EVENTBRIDGE_SOURCE", "", func(v string) error {
		if !strings.HasPrefix(v, bridge.PartnerSourcePrefix+"/") {
			return fmt.Errorf("%q is not a Stripe partner event source (%s/ed_...)", v, bridge.PartnerSourcePrefix)
		}
		return nil
	})
	account := r.Required("EVENTBRIDGE_ACCOUNT")
	dlq := r.Required("INGRESS_DLQ_URL")
	connect := r.Checked("STRIPE_CONNECT", "false", func(v string) error {
		if v != "true" && v != "false" {
			return fmt.Errorf("STRIPE_CONNECT=%q: want true or false", v)
		}
		return nil
	}) == "true"
	if err := r.Err("bridge"); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	events := c.Events(dynamodb.NewFromConfig(cfg))
	in := boot.NewIngesterOn(events, cfg, c, boot.HandledTypes(env, effects))
	if connect {
		// A Connect platform's destination sends its connected accounts'
		// events too: each account is recorded for the reconciler to
		// list, as the receiver records those of its Connect endpoint.
		boot.RecordAccounts(in, events)
	}
	return bridge.New(bridge.Config{
		Ingester:      in,
		Source:        src,
		Account:       account,
		Livemode:      c.Livemode,
		APIVersion:    stripe.APIVersion,
		DeadLetters:   sqs.NewFromConfig(cfg),
		DeadLetterURL: dlq,
		Logger:        logger,
	})
}

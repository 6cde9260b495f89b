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

// Config is the bridge's configuration: what ConfigFromEnv reads from
// the environment the template gives the function, or what a caller in
// the same process builds.
type Config struct {
	boot.Common
	// EventTypes is Stripe's allowlist (EVENT_TYPES); nil: the default
	// (boot.HandledTypeList), the very list the stack's rule routes.
	EventTypes []string
	// Source is the partner event source the bus is associated with
	// (EVENTBRIDGE_SOURCE), Account the stack's AWS account
	// (EVENTBRIDGE_ACCOUNT), DeadLetterURL where rejected messages go
	// (INGRESS_DLQ_URL).
	Source, Account, DeadLetterURL string
	// Connect is true on a Connect platform (STRIPE_CONNECT): each
	// connected account an event is stored of is recorded
	// (boot.RecordAccounts).
	Connect bool
}

// ConfigFromEnv reads the bridge's configuration from env, reporting every
// problem at once.
func ConfigFromEnv(env boot.Env, cfg aws.Config) (Config, error) {
	r := boot.NewReader(env, cfg)
	c := Config{Common: r.Common(), EventTypes: r.EventTypes()}
	c.Source = r.Checked("EVENTBRIDGE_SOURCE", "", func(v string) error {
		if !strings.HasPrefix(v, bridge.PartnerSourcePrefix+"/") {
			return fmt.Errorf("%q is not a Stripe partner event source (%s/ed_...)", v, bridge.PartnerSourcePrefix)
		}
		return nil
	})
	c.Account = r.Required("EVENTBRIDGE_ACCOUNT")
	c.DeadLetterURL = r.Required("INGRESS_DLQ_URL")
	c.Connect = r.Checked("STRIPE_CONNECT", "false", func(v string) error {
		if v != "true" && v != "false" {
			return fmt.Errorf("STRIPE_CONNECT=%q: want true or false", v)
		}
		return nil
	}) == "true"
	return c, r.Err("bridge")
}

// New builds the bridge's handler from c (ConfigFromEnv in Lambda).
// effects are the team's effects (hooks.Registry()); the bridge reads
// only their event types, its allowlist beside the mirror's
// (boot.HandledTypeList), the very list the stack's rule routes. It reads
// no secret and makes no network call.
func New(_ context.Context, c Config, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*bridge.Handler, error) {
	if logger == nil {
		logger = slog.Default()
	}
	events := c.Events(dynamodb.NewFromConfig(cfg))
	in := boot.NewIngesterOn(events, cfg, c.Common, boot.HandledTypes(c.EventTypes, effects))
	if c.Connect {
		// A Connect platform's destination sends its connected accounts'
		// events too: each account is recorded for the reconciler to
		// list, as the receiver records those of its Connect endpoint.
		boot.RecordAccounts(in, events)
	}
	return bridge.New(bridge.Config{
		Ingester:      in,
		Source:        c.Source,
		Account:       c.Account,
		Livemode:      c.Livemode,
		APIVersion:    stripe.APIVersion,
		DeadLetters:   sqs.NewFromConfig(cfg),
		DeadLetterURL: c.DeadLetterURL,
		Logger:        logger,
	})
}

// FromEnv is ConfigFromEnv then New: the bridge as Lambda builds it from
// the environment env, for a harness that derives that environment from
// the template (the local stack, the failure-point runs).
func FromEnv(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*bridge.Handler, error) {
	c, err := ConfigFromEnv(env, cfg)
	if err != nil {
		return nil, err
	}
	return New(ctx, c, cfg, logger, effects)
}

package receiverboot

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/signature"
)

// New builds the receiver's handler. effects are the team's effects
// (hooks.Registry()); the receiver reads only their event types, which it
// accepts beside the mirror's (boot.HandledTypeList).
//
// The signing secrets (STRIPE_WEBHOOK_SECRETS_PARAMETER; STRIPE_WEBHOOK_SECRET
// locally) are read now, the one network call of the receiver's cold start:
// the handler cannot verify a delivery without them.
func New(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*receiver.Handler, error) {
	r := boot.NewReader(env, cfg)
	c := r.Common()
	tolerance := r.Duration("SIGNATURE_TOLERANCE", signature.DefaultTolerance)
	skew := r.Duration("SIGNATURE_FUTURE_SKEW", signature.DefaultFutureSkew)
	maxBody := r.Integer("MAX_BODY_BYTES", receiver.DefaultMaxBodyBytes)
	budget := r.Duration("RECEIVER_BUDGET", receiver.DefaultBudget)
	secret := r.Secret("STRIPE_WEBHOOK_SECRET", true)
	if err := r.Err("receiver"); err != nil {
		return nil, err
	}
	raw, err := secret.Value(ctx)
	if err != nil {
		return nil, fmt.Errorf("boot receiver: %w", err)
	}
	v, err := signature.New(secrets.List(raw), signature.Options{Tolerance: tolerance, FutureSkew: skew})
	if err != nil {
		return nil, fmt.Errorf("boot receiver: %w", err)
	}
	return receiver.New(receiver.Config{
		Verifier:     v,
		Ingester:     boot.NewIngester(cfg, c, boot.HandledTypes(env, effects)),
		Livemode:     c.Livemode,
		APIVersion:   stripe.APIVersion,
		MaxBodyBytes: maxBody,
		Budget:       budget,
		Logger:       logger,
	}), nil
}

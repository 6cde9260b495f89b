package receiverboot

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/signature"
)

// New builds the receiver's handler. effects are the team's effects
// (hooks.Registry()); the receiver reads only their event types, which it
// accepts beside the mirror's (boot.HandledTypeList), and builds none of
// them.
//
// It makes no network call: the signing secrets
// (STRIPE_WEBHOOK_SECRETS_PARAMETER) are read on the first delivery, and
// read again, at most once a minute, when a delivery matches none of them
// (signature.Keyring), so a rotated secret takes effect within a minute.
// While they cannot be read, or hold no secret, each delivery is answered
// 503 (outcome secrets_unavailable), and each tries to read them again. A
// secret in hand (STRIPE_WEBHOOK_SECRET, outside Lambda) that holds no
// secret fails here instead.
func New(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*receiver.Handler, error) {
	r := boot.NewReader(env, cfg)
	c := r.Common()
	opts := signature.Options{
		Tolerance:  r.Duration("SIGNATURE_TOLERANCE", signature.DefaultTolerance),
		FutureSkew: r.Duration("SIGNATURE_FUTURE_SKEW", signature.DefaultFutureSkew),
	}
	maxBody := r.Integer("MAX_BODY_BYTES", receiver.DefaultMaxBodyBytes)
	budget := r.Duration("RECEIVER_BUDGET", receiver.DefaultBudget)
	secret := r.Secret("STRIPE_WEBHOOK_SECRET", true)
	if err := r.Err("receiver"); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	keys := signature.NewKeyring(secret, opts)
	if secret.InHand() {
		// A local variable costs no network call: a bad one fails now.
		if err := keys.Check(ctx); err != nil {
			return nil, err
		}
	}
	return receiver.New(receiver.Config{
		Verifier:     keys,
		Ingester:     boot.NewIngester(cfg, c, boot.HandledTypes(env, effects)),
		Livemode:     c.Livemode,
		APIVersion:   stripe.APIVersion,
		MaxBodyBytes: maxBody,
		Budget:       budget,
		Logger:       logger,
	}), nil
}

package receiverboot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/secrets"
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
	// Each other provider is served only when its secret is configured:
	// its local variable, or its parameter's name.
	others := map[string]*secrets.Secret{}
	for _, name := range provider.Names {
		if s := r.Secret(boot.WebhookSecretVariable(name), false); s != nil {
			others[name] = s
		}
	}
	if err := r.Err("receiver"); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	ingester := boot.NewIngester(cfg, c, boot.HandledTypes(env, effects))
	providers := map[string]receiver.Provider{}
	for name, s := range others {
		in := *ingester
		in.Provider, in.Handled = name, boot.ProviderTypes(env, name, effects)
		k := &providerKeys{secret: s, build: func(raw string) (provider.Verifier, error) {
			return provider.New(name, secrets.List(raw), provider.Options{Tolerance: opts.Tolerance, FutureSkew: opts.FutureSkew})
		}}
		if s.InHand() {
			// A local variable costs no network call: a bad one fails now.
			if err := k.Check(ctx); err != nil {
				return nil, err
			}
		}
		providers[name] = receiver.Provider{Verifier: k, Ingester: &in}
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
		Providers:    providers,
	}), nil
}

// providerKeys verifies one provider's deliveries against the secrets its
// parameter holds, as signature.Keyring does Stripe's: read on the first
// delivery for that provider; read again (secrets.Secret.Refresh, at most
// once a minute) when a signature matches none of them, so a rotated
// secret takes effect within a minute; a value that builds no verifier is
// forgotten, so a fixed parameter is picked up without a redeploy. While
// they cannot be had, Verify's error wraps signature.ErrNoSecrets (the
// receiver answers 503).
type providerKeys struct {
	secret *secrets.Secret
	build  func(raw string) (provider.Verifier, error)

	mu  sync.Mutex
	raw string // the value v was built from
	v   provider.Verifier
}

// Verify verifies one delivery and returns its envelope.
func (k *providerKeys) Verify(ctx context.Context, body []byte, headers map[string]string) (event.Envelope, error) {
	raw, err := k.secret.Value(ctx)
	if err != nil {
		return event.Envelope{}, fmt.Errorf("%w: %v", signature.ErrNoSecrets, err)
	}
	v, err := k.use(raw)
	if err != nil {
		return event.Envelope{}, err
	}
	env, err := v.Verify(body, headers)
	if !errors.Is(err, provider.ErrNoMatch) {
		return env, err
	}
	// The secret may have been rotated since it was read.
	fresh, changed, rerr := k.secret.Refresh(ctx, raw)
	if !changed {
		if rerr != nil {
			return env, fmt.Errorf("%w (reading the secrets again failed: %v)", err, rerr)
		}
		return env, err
	}
	nv, err := k.use(fresh)
	if err != nil {
		return event.Envelope{}, err
	}
	return nv.Verify(body, headers)
}

// Check reads the secrets now and reports whether they make a verifier:
// for secrets in hand (a local variable), whose mistakes fail the cold
// start.
func (k *providerKeys) Check(ctx context.Context) error {
	raw, err := k.secret.Value(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", signature.ErrNoSecrets, err)
	}
	_, err = k.use(raw)
	return err
}

// use returns the verifier of raw, building it when raw is not the value
// the current one was built from.
func (k *providerKeys) use(raw string) (provider.Verifier, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.v != nil && k.raw == raw {
		return k.v, nil
	}
	v, err := k.build(raw)
	if err != nil {
		err = fmt.Errorf("%w: %s holds no usable secret: %v", signature.ErrNoSecrets, k.secret.Name(), err)
		k.secret.Forget(err)
		return nil, err
	}
	k.raw, k.v = raw, v
	return v, nil
}

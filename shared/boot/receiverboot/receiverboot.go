package receiverboot

import (
	"context"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// New builds the receiver's handler. effects are the team's effects
// (hooks.Registry()); the receiver reads only their event types, which it
// accepts beside the mirror's (boot.HandledTypeList), and builds none of
// them.
//
// It serves every provider of package provider whose signing secrets are
// configured (Stripe's, STRIPE_WEBHOOK_SECRETS_PARAMETER, always, and a
// Connect endpoint's beside it when STRIPE_CONNECT_WEBHOOK_SECRETS_PARAMETER
// is set: provider.StripeEndpoints), each through a provider.Keyring, with the same tolerance, future skew and
// mode. It makes no network call: the secrets are read on the first
// delivery that could verify, and read again, at most once a minute, when
// a delivery matches none of them, so a rotated secret takes effect within
// a minute. While they cannot be read, or hold no secret, such deliveries
// are answered 503 (outcome secrets_unavailable), and the parameter is
// read again at most once per secrets.FailureBackoff; a delivery without
// a signature header, or with one that cannot be a signature, is answered
// 400 without any read. A secret in hand (STRIPE_WEBHOOK_SECRET and the
// like, outside Lambda) that holds no secret fails here instead.
//
// It serves each sender GENERIC_SENDERS declares (provider.Sender) the
// same way, on /webhooks/<name>, with the secrets boot.Reader.SenderSecret
// finds for it.
func New(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*receiver.Handler, error) {
	r := boot.NewReader(env, cfg)
	c := r.Common()
	opts := provider.Options{
		Tolerance:  r.Duration("SIGNATURE_TOLERANCE", provider.DefaultTolerance),
		FutureSkew: r.Duration("SIGNATURE_FUTURE_SKEW", provider.DefaultFutureSkew),
		Livemode:   c.Livemode,
	}
	maxBody := r.Integer("MAX_BODY_BYTES", receiver.DefaultMaxBodyBytes)
	budget := r.Duration("RECEIVER_BUDGET", receiver.DefaultBudget)
	// Stripe's secret is required; each other provider is served only when
	// its secret is configured: its local variable, or its parameter's
	// name.
	keys := map[string]*secrets.Secret{}
	for _, name := range provider.Names {
		if s := r.Secret(boot.WebhookSecretVariable(name), name == provider.Stripe); s != nil {
			keys[name] = s
		}
	}
	// A Connect platform's Connect endpoint signs with secrets of its own.
	connect := r.Secret(boot.StripeConnectSecretVariable, false)
	// Any other sender is declared in GENERIC_SENDERS, each with its own
	// secrets: a declaration that cannot be verified as written, or would
	// trust an unsigned id, fails the cold start.
	senders, err := provider.ParseSenders(env(provider.SendersVariable))
	if err != nil {
		r.Fail(err)
	}
	senderKeys := make([]*secrets.Secret, len(senders))
	for i, s := range senders {
		senderKeys[i] = r.SenderSecret(s.Name)
	}
	if err := r.Err("receiver"); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	events := c.Events(dynamodb.NewFromConfig(cfg))
	base := boot.NewIngesterOn(events, cfg, c, boot.HandledTypes(env, effects))
	providers := map[string]receiver.Provider{}
	for _, name := range provider.Names {
		s, ok := keys[name]
		if !ok {
			continue
		}
		k, err := keyring(ctx, name, s, settings(env, name, opts))
		if err != nil {
			return nil, err
		}
		in := *base
		p := receiver.Provider{Verifier: k, Ingester: &in, Bodies: events}
		if name == provider.Stripe {
			p.APIVersion = stripe.APIVersion
			// Platform events verify with the platform's secrets only,
			// connected accounts' with the Connect endpoint's only.
			endpoints := provider.StripeEndpoints{Platform: k}
			if connect != nil {
				if endpoints.Connect, err = keyring(ctx, name, connect, opts); err != nil {
					return nil, err
				}
				// Only a Connect endpoint's secrets admit connected
				// accounts' events: each account is recorded for the
				// reconciler to list.
				boot.RecordAccounts(&in, events)
			}
			p.Verifier = endpoints
		} else {
			in.Provider, in.Handled = name, boot.ProviderTypes(env, name, effects)
		}
		providers[name] = p
	}
	for i, s := range senders {
		k := provider.NewKeyringFor(s.Spec(), senderKeys[i], opts)
		if senderKeys[i].InHand() {
			if err := k.Load(ctx); err != nil {
				return nil, err
			}
		}
		in := *base
		in.Provider, in.Handled = s.Name, boot.ProviderTypes(env, s.Name, effects)
		providers[s.Name] = receiver.Provider{Verifier: k, Ingester: &in, Bodies: events}
	}
	return receiver.New(receiver.Config{
		Providers:    providers,
		MaxBodyBytes: maxBody,
		Budget:       budget,
		Logger:       logger,
	}), nil
}

// keyring returns the named provider's Keyring of s. A secret in hand (a
// local variable) costs no network call, so a bad one fails now.
func keyring(ctx context.Context, name string, s *secrets.Secret, opts provider.Options) (*provider.Keyring, error) {
	k, err := provider.NewKeyring(name, s, opts)
	if err != nil {
		return nil, err
	}
	if s.InHand() {
		if err := k.Load(ctx); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// settings returns opts with the named provider's own settings
// (provider.Spec.Settings), each read from its variable
// (provider.SettingVariable); opts when it has none.
func settings(env boot.Env, name string, opts provider.Options) provider.Options {
	spec, err := provider.Lookup(name)
	if err != nil || len(spec.Settings) == 0 {
		return opts
	}
	opts.Settings = map[string]string{}
	for _, s := range spec.Settings {
		if v := strings.TrimSpace(env(provider.SettingVariable(name, s))); v != "" {
			opts.Settings[s] = v
		}
	}
	return opts
}

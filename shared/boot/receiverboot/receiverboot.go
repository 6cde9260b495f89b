package receiverboot

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// New builds the receiver's handler from c (ConfigFromEnv in Lambda). effects are the team's effects
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
//
// Those rules are read by ConfigFromEnv: New builds what c says.
func New(ctx context.Context, c Config, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*receiver.Handler, error) {
	if logger == nil {
		logger = slog.Default()
	}
	c.setClock()
	opts := provider.Options{Tolerance: c.Tolerance, FutureSkew: c.FutureSkew, Livemode: c.Livemode}
	events := c.Events(dynamodb.NewFromConfig(cfg))
	base := boot.NewIngesterOn(events, cfg, c.Common, boot.HandledTypes(c.EventTypes, effects))
	providers := map[string]receiver.Provider{}
	for _, name := range provider.Names {
		s, ok := c.Secrets[name]
		if !ok || s == nil {
			continue
		}
		p, err := c.provider(ctx, name, s, opts, base, events, effects)
		if err != nil {
			return nil, err
		}
		providers[name] = p
	}
	for _, s := range c.Senders {
		k := provider.NewKeyringFor(s.Spec(), s.Secret, opts)
		if s.Secret.InHand() {
			if err := k.Load(ctx); err != nil {
				return nil, err
			}
		}
		in := *base
		in.Provider, in.Handled = s.Name, boot.ProviderTypes(c.ProviderEventTypes[s.Name], s.Name, effects)
		providers[s.Name] = receiver.Provider{Verifier: k, Ingester: &in, Bodies: events}
	}
	return receiver.New(receiver.Config{
		Providers:    providers,
		MaxBodyBytes: c.MaxBodyBytes,
		Budget:       c.Budget,
		Logger:       logger,
	}), nil
}

// provider builds what serves the provider name, whose signing secrets
// are s: its own copy of base, and its verifier (for Stripe, the platform
// endpoint's and, with c.ConnectSecret, a Connect endpoint's).
func (c Config) provider(ctx context.Context, name string, s *secrets.Secret, opts provider.Options,
	base *ingest.Ingester, events *store.Events, effects *effect.Registry,
) (receiver.Provider, error) {
	k, err := keyring(ctx, name, s, withSettings(opts, c.Settings[name]))
	if err != nil {
		return receiver.Provider{}, err
	}
	in := *base
	p := receiver.Provider{Verifier: k, Ingester: &in, Bodies: events}
	if name != provider.Stripe {
		in.Provider, in.Handled = name, boot.ProviderTypes(c.ProviderEventTypes[name], name, effects)
		return p, nil
	}
	p.APIVersion = stripe.APIVersion
	// Platform events verify with the platform's secrets only, connected
	// accounts' with the Connect endpoint's only.
	endpoints := provider.StripeEndpoints{Platform: k}
	if c.ConnectSecret != nil {
		if endpoints.Connect, err = keyring(ctx, name, c.ConnectSecret, opts); err != nil {
			return receiver.Provider{}, err
		}
		// Only a Connect endpoint's secrets admit connected accounts'
		// events: each account is recorded for the reconciler to list.
		boot.RecordAccounts(&in, events)
	}
	p.Verifier = endpoints
	return p, nil
}

// setClock gives every secret of c the clock c.Now, when set.
func (c Config) setClock() {
	if c.Now == nil {
		return
	}
	for _, s := range c.Secrets {
		if s != nil {
			s.SetClock(c.Now)
		}
	}
	if c.ConnectSecret != nil {
		c.ConnectSecret.SetClock(c.Now)
	}
	for _, s := range c.Senders {
		if s.Secret != nil {
			s.Secret.SetClock(c.Now)
		}
	}
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

// withSettings returns opts with a provider's own settings
// (Config.Settings); opts when it has none.
func withSettings(opts provider.Options, set map[string]string) provider.Options {
	if set != nil {
		opts.Settings = set
	}
	return opts
}

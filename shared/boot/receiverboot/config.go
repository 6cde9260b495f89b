package receiverboot

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// Config is the receiver's configuration: what ConfigFromEnv reads from
// the environment the template gives the function, or what a caller in
// the same process (the local stack, the tools, the tests) builds.
type Config struct {
	boot.Common
	// EventTypes is Stripe's allowlist (EVENT_TYPES); nil: the default
	// (boot.HandledTypeList).
	EventTypes []string
	// ProviderEventTypes is each other provider's or sender's allowlist
	// (boot.ProviderTypesVariable); absent: the default
	// (boot.ProviderTypeList).
	ProviderEventTypes map[string][]string
	// Tolerance and FutureSkew bound a signature's timestamp
	// (SIGNATURE_TOLERANCE, SIGNATURE_FUTURE_SKEW).
	Tolerance, FutureSkew time.Duration
	// MaxBodyBytes (MAX_BODY_BYTES) and Budget (RECEIVER_BUDGET): see
	// receiver.Config.
	MaxBodyBytes int
	Budget       time.Duration
	// Secrets holds the signing secrets of each provider served, by name
	// (provider.Names): Stripe's always, another's when it is configured.
	Secrets map[string]*secrets.Secret
	// ConnectSecret is a Connect endpoint's signing secrets, beside the
	// platform's (provider.StripeEndpoints); nil: none.
	ConnectSecret *secrets.Secret
	// Settings holds each provider's own settings (provider.Spec.Settings)
	// that are set, by provider name.
	Settings map[string]map[string]string
	// Senders are the senders GENERIC_SENDERS declares, each with its
	// signing secrets.
	Senders []Sender
	// Now is the clock the secrets measure their backoff and refresh
	// interval with (secrets.Secret.SetClock); nil: the real one.
	Now func() time.Time
}

// Sender is a declared sender (provider.Sender) with its signing secrets.
type Sender struct {
	provider.Sender
	Secret *secrets.Secret
}

// ConfigFromEnv reads the receiver's configuration from env, reporting
// every problem at once. Secrets held in SSM are read through cfg on first
// need, never now.
func ConfigFromEnv(env boot.Env, cfg aws.Config) (Config, error) {
	r := boot.NewReader(env, cfg)
	c := Config{
		Common:             r.Common(),
		EventTypes:         r.EventTypes(),
		ProviderEventTypes: map[string][]string{},
		Tolerance:          r.Duration("SIGNATURE_TOLERANCE", provider.DefaultTolerance),
		FutureSkew:         r.Duration("SIGNATURE_FUTURE_SKEW", provider.DefaultFutureSkew),
		MaxBodyBytes:       r.Integer("MAX_BODY_BYTES", receiver.DefaultMaxBodyBytes),
		Budget:             r.Duration("RECEIVER_BUDGET", receiver.DefaultBudget),
		Secrets:            map[string]*secrets.Secret{},
		Settings:           map[string]map[string]string{},
	}
	// Stripe's secret is required; each other provider is served only when
	// its secret is configured: its local variable, or its parameter's
	// name.
	for _, name := range provider.Names {
		if s := r.Secret(boot.WebhookSecretVariable(name), name == provider.Stripe); s != nil {
			c.Secrets[name] = s
		}
		if name != provider.Stripe {
			c.readTypes(r, name)
		}
		if set := settings(env, name); set != nil {
			c.Settings[name] = set
		}
	}
	// A Connect platform's Connect endpoint signs with secrets of its own.
	c.ConnectSecret = r.Secret(boot.StripeConnectSecretVariable, false)
	// Any other sender is declared in GENERIC_SENDERS, each with its own
	// secrets: a declaration that cannot be verified as written, or would
	// trust an unsigned id, fails the cold start.
	senders, err := provider.ParseSenders(env(provider.SendersVariable))
	if err != nil {
		r.Fail(err)
	}
	for _, s := range senders {
		c.Senders = append(c.Senders, Sender{Sender: s, Secret: r.SenderSecret(s.Name)})
		c.readTypes(r, s.Name)
	}
	return c, r.Err("receiver")
}

// readTypes reads the allowlist of name, when it is set.
func (c *Config) readTypes(r *boot.Reader, name string) {
	if types := r.ProviderEventTypes(name); types != nil {
		c.ProviderEventTypes[name] = types
	}
}

// settings returns the named provider's own settings
// (provider.Spec.Settings) that are set, each read from its variable
// (provider.SettingVariable); nil when it has none.
func settings(env boot.Env, name string) map[string]string {
	spec, err := provider.Lookup(name)
	if err != nil || len(spec.Settings) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, s := range spec.Settings {
		if v := strings.TrimSpace(env(provider.SettingVariable(name, s))); v != "" {
			out[s] = v
		}
	}
	return out
}

// FromEnv is ConfigFromEnv then New: the receiver as Lambda builds it from
// the environment env, for a harness that derives that environment from
// the template (the local stack, the failure-point runs).
func FromEnv(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*receiver.Handler, error) {
	c, err := ConfigFromEnv(env, cfg)
	if err != nil {
		return nil, err
	}
	return New(ctx, c, cfg, logger, effects)
}

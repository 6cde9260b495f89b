// Package effect is the registry of a team's own effects: code that runs once
// per event of a given type, such as provisioning an account when an invoice
// is paid, without touching the pipeline.
//
// An effect is declared (Spec): its name, the event types it runs on, the
// settings and secrets it reads, and how to build it. The receiver and the
// reconciler read only the types (Registry.Types); the processor alone
// builds the effects (Registry.Build), at its cold start, giving each its
// settings and its secrets (Config), which are read on first need. So an
// effect's set-up never runs where the effect does not, and costs its
// function's cold start no network call.
//
// "Once" has two halves. Writes a handler returns are committed in the same
// DynamoDB transaction that marks the event processed, so they happen exactly
// once. Calls a handler makes to the outside world may be repeated when a
// later step fails, so each handler gets a stable idempotency key (event id +
// handler name) to pass along, for example as Stripe's Idempotency-Key
// header: a retried call is then not a second charge, e-mail or provisioning.
package effect

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

// Event is what a handler sees of one event.
type Event struct {
	Record  event.Record
	Payload []byte
	// IdempotencyKey is stable across every retry of this event for this
	// handler: "<event id>:<handler name>" for Stripe's events, and
	// "<provider>#<event id>:<handler name>" for the others', so the same
	// id from two providers never shares a key.
	IdempotencyKey string
}

// Handler runs an effect. It returns the DynamoDB writes to commit with the
// event, or an error: wrap it in *fault.Permanent when retrying cannot help.
type Handler interface {
	Name() string
	Handle(ctx context.Context, ev Event) ([]types.TransactWriteItem, error)
}

// Func adapts a function to a Handler.
type Func struct {
	HandlerName string
	Fn          func(ctx context.Context, ev Event) ([]types.TransactWriteItem, error)
}

// Name returns the handler's name.
func (f Func) Name() string { return f.HandlerName }

// Handle calls f.Fn.
func (f Func) Handle(ctx context.Context, ev Event) ([]types.TransactWriteItem, error) {
	return f.Fn(ctx, ev)
}

// Spec declares an effect: what it runs on, what it needs, and how to
// build it. One mechanism gives every effect its configuration
// (docs/design.md, "Your own effects"):
//
//   - Settings are not secret (a URL, an account id): the template's
//     EffectSettings parameter carries them to the processor as
//     EFFECT_SETTINGS, NAME=value pairs separated by commas.
//   - Secrets (a token, a key) are SSM SecureString parameters of the
//     stage, /webhook-inbox/<stage>/effects/<name>, which the processor may
//     read when the template's EffectSecrets parameter names them (its
//     policy grants ssm:GetParameter on that path then, and only then).
//     Each is a secrets.Secret: read on first need, read again on a
//     refusal (Refresh), never at the cold start. Outside Lambda (the
//     local stack) EFFECT_SECRET_<NAME> (upper case, - as _) gives one
//     directly.
//
// The processor's cold start fails, naming each, when a declared setting
// or secret is not configured, and when a configured one is declared by no
// effect.
type Spec struct {
	// Name names the effect's handler: its idempotency keys end in it.
	Name string
	// Provider is the provider whose events it runs on; Stripe's when
	// empty.
	Provider string
	// Types are the event types it runs on (as the receiver names them);
	// "*" for every type of the provider.
	Types []string
	// Settings and Secrets are the names of what it reads (Config).
	Settings []string
	Secrets  []string
	// Optional effects are off (not built) while none of their Settings
	// is configured; the others are always on.
	Optional bool
	// New builds the effect from its configuration. It runs once, at the
	// processor's cold start: it must make no network call.
	New func(Config) (Handler, error)
}

// Config is an effect's configuration, as its Spec declared it.
type Config struct {
	settings map[string]string
	secrets  map[string]*secrets.Secret
}

// NewConfig returns the configuration of settings and secrets, for the
// processor's wiring and for tests.
func NewConfig(settings map[string]string, secrets map[string]*secrets.Secret) Config {
	return Config{settings: settings, secrets: secrets}
}

// Setting returns the setting name ("" when not configured).
func (c Config) Setting(name string) string { return c.settings[name] }

// Secret returns the secret name, nil when not configured. Nothing is read
// before its Value.
func (c Config) Secret(name string) *secrets.Secret { return c.secrets[name] }

// Registry maps event types, per provider, to effects: built handlers (On,
// OnProvider), and declared effects (Add) that only Build builds. The zero
// value is empty and ready. Register at cold start; Run is safe for
// concurrent use after.
type Registry struct {
	entries []*entry
	byType  map[key][]*entry
}

// key is a provider's event type: the same type name from two providers
// (a Standard Webhooks sender's "invoice.paid" and Stripe's) is two keys.
type key struct{ provider, eventType string }

// entry is one registration: a handler, or a Spec not yet built, for a
// provider's types.
type entry struct {
	handler  Handler
	spec     *Spec
	provider string
	types    []string
}

func (r *Registry) add(e *entry) {
	if r.byType == nil {
		r.byType = map[key][]*entry{}
	}
	r.entries = append(r.entries, e)
	for _, t := range e.types {
		k := key{e.provider, t}
		r.byType[k] = append(r.byType[k], e)
	}
}

// On registers h for each of Stripe's event types; "*" matches every
// Stripe type. h is built already: for an effect that needs no
// configuration. It is OnProvider for event.ProviderStripe.
func (r *Registry) On(h Handler, eventTypes ...string) {
	r.OnProvider(event.ProviderStripe, h, eventTypes...)
}

// OnProvider registers h for each of provider's event types (as the
// receiver names them: "pull_request.opened", "orders/create"); "*"
// matches every type of that provider.
func (r *Registry) OnProvider(provider string, h Handler, eventTypes ...string) {
	r.add(&entry{handler: h, provider: provider, types: eventTypes})
}

// Add declares the effect s, built by Build only (the processor's).
func (r *Registry) Add(s Spec) {
	provider := s.Provider
	if provider == "" {
		provider = event.ProviderStripe
	}
	r.add(&entry{spec: &s, provider: provider, types: s.Types})
}

// Specs lists the declared effects, in registration order.
func (r *Registry) Specs() []Spec {
	var out []Spec
	for _, e := range r.entries {
		if e.spec != nil {
			out = append(out, *e.spec)
		}
	}
	return out
}

// Build returns a registry holding r's handlers and, built with their
// configuration, the declared effects configs has an entry for; the others
// are off. It returns every effect's error together.
func (r *Registry) Build(configs map[string]Config) (*Registry, error) {
	out := &Registry{}
	var errs []error
	for _, e := range r.entries {
		if e.spec == nil {
			out.add(e)
			continue
		}
		cfg, on := configs[e.spec.Name]
		if !on {
			continue
		}
		h, err := e.spec.New(cfg)
		if err != nil {
			errs = append(errs, fmt.Errorf("effect %s: %w", e.spec.Name, err))
			continue
		}
		out.add(&entry{handler: h, provider: e.provider, types: e.types})
	}
	return out, errors.Join(errs...)
}

// Handles reports whether any effect is registered for Stripe's
// eventType.
func (r *Registry) Handles(eventType string) bool {
	return r.HandlesFor(event.ProviderStripe, eventType)
}

// HandlesFor reports whether any effect is registered for provider's
// eventType.
func (r *Registry) HandlesFor(provider, eventType string) bool {
	return len(r.byType[key{provider, eventType}]) > 0 || len(r.byType[key{provider, "*"}]) > 0
}

// Types lists Stripe's event types with an effect, sorted: what the
// receiver accepts and the reconciler lists for the team's effects. It
// builds nothing.
func (r *Registry) Types() []string { return r.TypesFor(event.ProviderStripe) }

// TypesFor lists provider's event types with an effect, sorted.
func (r *Registry) TypesFor(provider string) []string {
	var out []string
	for k := range r.byType {
		if k.provider == provider && k.eventType != "*" {
			out = append(out, k.eventType)
		}
	}
	sort.Strings(out)
	return out
}

// Key is the idempotency key of handler name for Stripe's event id.
func Key(eventID, handler string) string { return eventID + ":" + handler }

// KeyFor is the idempotency key of handler name for provider's event id:
// Key for Stripe (the keys issued before other providers came stay as
// they were), the provider-qualified id for the others.
func KeyFor(provider, eventID, handler string) string {
	if provider == event.ProviderStripe {
		return Key(eventID, handler)
	}
	return Key(event.Key(provider, eventID), handler)
}

// Run runs every handler for the record's provider and type in
// registration order (those for "*" after those for the type) and returns
// their writes. The first error stops the run. A record without a provider
// is Stripe's. A declared effect that was not built (Run on a registry
// Build did not return) is an error: it would otherwise be skipped
// silently.
func (r *Registry) Run(ctx context.Context, rec event.Record, payload []byte) ([]types.TransactWriteItem, error) {
	var writes []types.TransactWriteItem
	provider := rec.Provider
	if provider == "" {
		provider = event.ProviderStripe
	}
	for _, es := range [][]*entry{r.byType[key{provider, rec.Type}], r.byType[key{provider, "*"}]} {
		for _, e := range es {
			if e.handler == nil {
				return nil, fmt.Errorf("effect %s: declared but not built (the processor builds effects with Registry.Build)", e.spec.Name)
			}
			w, err := e.handler.Handle(ctx, Event{Record: rec, Payload: payload, IdempotencyKey: KeyFor(provider, rec.ID, e.handler.Name())})
			if err != nil {
				return nil, fmt.Errorf("effect %s: %w", e.handler.Name(), err)
			}
			writes = append(writes, w...)
		}
	}
	return writes, nil
}

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

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/secrets"
)

// Event is what a handler sees of one event.
type Event struct {
	Record  event.Record
	Payload []byte
	// IdempotencyKey is stable across every retry of this event for this
	// handler: "<event id>:<handler name>".
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
	// Types are the event types it runs on; "*" for every type.
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

// Registry maps event types to effects: built handlers (On), and declared
// effects (Add) that only Build builds. The zero value is empty and ready.
// Register at cold start; Run is safe for concurrent use after.
type Registry struct {
	entries []*entry
	byType  map[string][]*entry
}

// entry is one registration: a handler, or a Spec not yet built.
type entry struct {
	handler Handler
	spec    *Spec
}

func (r *Registry) add(e *entry, eventTypes []string) {
	if r.byType == nil {
		r.byType = map[string][]*entry{}
	}
	r.entries = append(r.entries, e)
	for _, t := range eventTypes {
		r.byType[t] = append(r.byType[t], e)
	}
}

// On registers h for each of the event types; "*" matches every type. h
// is built already: for an effect that needs no configuration.
func (r *Registry) On(h Handler, eventTypes ...string) { r.add(&entry{handler: h}, eventTypes) }

// Add declares the effect s, built by Build only (the processor's).
func (r *Registry) Add(s Spec) { r.add(&entry{spec: &s}, s.Types) }

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
			out.add(e, r.typesOf(e))
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
		out.add(&entry{handler: h}, e.spec.Types)
	}
	return out, errors.Join(errs...)
}

// typesOf returns the types e was registered for.
func (r *Registry) typesOf(e *entry) []string {
	var out []string
	for t, es := range r.byType {
		for _, x := range es {
			if x == e {
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Handles reports whether any effect is registered for eventType.
func (r *Registry) Handles(eventType string) bool {
	return len(r.byType[eventType]) > 0 || len(r.byType["*"]) > 0
}

// Types lists the event types with an effect, sorted: what the receiver
// accepts and the reconciler lists for the team's effects. It builds
// nothing.
func (r *Registry) Types() []string {
	var out []string
	for t := range r.byType {
		if t != "*" {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// Key is the idempotency key of handler name for event id.
func Key(eventID, handler string) string { return eventID + ":" + handler }

// Run runs every handler for the record's type in registration order
// (those for "*" after those for the type) and returns their writes. The
// first error stops the run. A declared effect that was not built (Run on
// a registry Build did not return) is an error: it would otherwise be
// skipped silently.
func (r *Registry) Run(ctx context.Context, rec event.Record, payload []byte) ([]types.TransactWriteItem, error) {
	var writes []types.TransactWriteItem
	for _, es := range [][]*entry{r.byType[rec.Type], r.byType["*"]} {
		for _, e := range es {
			if e.handler == nil {
				return nil, fmt.Errorf("effect %s: declared but not built (the processor builds effects with Registry.Build)", e.spec.Name)
			}
			w, err := e.handler.Handle(ctx, Event{Record: rec, Payload: payload, IdempotencyKey: Key(rec.ID, e.handler.Name())})
			if err != nil {
				return nil, fmt.Errorf("effect %s: %w", e.handler.Name(), err)
			}
			writes = append(writes, w...)
		}
	}
	return writes, nil
}

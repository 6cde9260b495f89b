// Package effect is the registry of a team's own effects: code that runs once
// per event of a given type, such as provisioning an account when an invoice
// is paid, without touching the pipeline.
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
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
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

// Registry maps event types, per provider, to handlers. The zero value is
// empty and ready. Register handlers at cold start; Run is safe for
// concurrent use after.
type Registry struct {
	byType map[key][]Handler
}

// key is a provider's event type: the same type name from two providers
// (a Standard Webhooks sender's "invoice.paid" and Stripe's) is two keys.
type key struct{ provider, eventType string }

// On registers h for each of Stripe's event types; "*" matches every
// Stripe type. It is OnProvider for event.ProviderStripe.
func (r *Registry) On(h Handler, eventTypes ...string) {
	r.OnProvider(event.ProviderStripe, h, eventTypes...)
}

// OnProvider registers h for each of provider's event types (as the
// receiver names them: "pull_request.opened", "orders/create"); "*"
// matches every type of that provider.
func (r *Registry) OnProvider(provider string, h Handler, eventTypes ...string) {
	if r.byType == nil {
		r.byType = map[key][]Handler{}
	}
	for _, t := range eventTypes {
		k := key{provider, t}
		r.byType[k] = append(r.byType[k], h)
	}
}

// Handles reports whether any handler is registered for Stripe's
// eventType.
func (r *Registry) Handles(eventType string) bool {
	return r.HandlesFor(event.ProviderStripe, eventType)
}

// HandlesFor reports whether any handler is registered for provider's
// eventType.
func (r *Registry) HandlesFor(provider, eventType string) bool {
	return len(r.byType[key{provider, eventType}]) > 0 || len(r.byType[key{provider, "*"}]) > 0
}

// Types lists Stripe's event types with a handler, sorted.
func (r *Registry) Types() []string { return r.TypesFor(event.ProviderStripe) }

// TypesFor lists provider's event types with a handler, sorted.
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
// registration order and returns their writes. The first error stops the
// run. A record without a provider is Stripe's.
func (r *Registry) Run(ctx context.Context, rec event.Record, payload []byte) ([]types.TransactWriteItem, error) {
	var writes []types.TransactWriteItem
	provider := rec.Provider
	if provider == "" {
		provider = event.ProviderStripe
	}
	handlers := append(append([]Handler(nil), r.byType[key{provider, rec.Type}]...), r.byType[key{provider, "*"}]...)
	for _, h := range handlers {
		w, err := h.Handle(ctx, Event{Record: rec, Payload: payload, IdempotencyKey: KeyFor(provider, rec.ID, h.Name())})
		if err != nil {
			return nil, fmt.Errorf("effect %s: %w", h.Name(), err)
		}
		writes = append(writes, w...)
	}
	return writes, nil
}

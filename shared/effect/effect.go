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

// Registry maps event types to handlers. The zero value is empty and ready.
// Register handlers at cold start; Run is safe for concurrent use after.
type Registry struct {
	byType map[string][]Handler
}

// On registers h for each of the event types; "*" matches every type.
func (r *Registry) On(h Handler, eventTypes ...string) {
	if r.byType == nil {
		r.byType = map[string][]Handler{}
	}
	for _, t := range eventTypes {
		r.byType[t] = append(r.byType[t], h)
	}
}

// Handles reports whether any handler is registered for eventType.
func (r *Registry) Handles(eventType string) bool {
	return len(r.byType[eventType]) > 0 || len(r.byType["*"]) > 0
}

// Types lists the event types with a handler, sorted.
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

// Run runs every handler for the record's type in registration order and
// returns their writes. The first error stops the run.
func (r *Registry) Run(ctx context.Context, rec event.Record, payload []byte) ([]types.TransactWriteItem, error) {
	var writes []types.TransactWriteItem
	handlers := append(append([]Handler(nil), r.byType[rec.Type]...), r.byType["*"]...)
	for _, h := range handlers {
		w, err := h.Handle(ctx, Event{Record: rec, Payload: payload, IdempotencyKey: Key(rec.ID, h.Name())})
		if err != nil {
			return nil, fmt.Errorf("effect %s: %w", h.Name(), err)
		}
		writes = append(writes, w...)
	}
	return writes, nil
}

// Package hooks is where a team declares its own effects: code that runs
// exactly once per event of a type (see package effect), such as telling
// a billing API that an invoice was paid.
//
// Edit Register: declare each effect with its effect.Spec (the event types
// it runs on, the settings and secrets it reads, how to build it). Each
// function's main passes Registry() to its constructor
// (receiverboot.New, processorboot.New, reconcilerboot.New), so the three
// never disagree about which types matter: the receiver accepts the
// effects' types (on top of the mirror's) and the reconciler lists them,
// reading only the types; the processor alone builds the effects, with
// their configuration, and runs them. docs/design.md, "Your own effects",
// walks through adding one.
package hooks

import (
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect/billing"
)

// Register declares the team's effects in r.
func Register(r *effect.Registry) {
	// The example (package billing): on invoice.paid, POST to your billing
	// API with the event's idempotency key. Off until the template's
	// EffectSettings sets BILLING_API_URL.
	r.Add(billing.Spec)
}

// Registry returns a registry holding the team's effects, declared, not
// built.
func Registry() *effect.Registry {
	r := &effect.Registry{}
	Register(r)
	return r
}

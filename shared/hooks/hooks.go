// Package hooks is where a team registers its own effects: code that runs
// exactly once per event of a type (see package effect), such as unlocking an
// account when an invoice is paid.
//
// Edit Register, and nothing else: the receiver accepts the event types
// registered here (on top of the ones the mirror handles), the reconciler
// lists them, and the processor runs the handlers. Each function's main
// passes Registry() to its constructor (receiverboot.New, processorboot.New,
// reconcilerboot.New), so the three never disagree about which types
// matter; the receiver and the reconciler read only the types.
package hooks

import "github.com/webhook-inbox/webhook-inbox/shared/effect"

// Register adds the team's effects to r. For example:
//
//	r.On(effect.Func{HandlerName: "unlock-account", Fn: unlockAccount}, "invoice.paid")
//
// where unlockAccount returns the DynamoDB writes to commit with the event
// (exactly once), and passes ev.IdempotencyKey to any outside call it makes.
func Register(r *effect.Registry) {
	_ = r // no effects registered yet
}

// Registry returns a registry holding the team's effects.
func Registry() *effect.Registry {
	r := &effect.Registry{}
	Register(r)
	return r
}

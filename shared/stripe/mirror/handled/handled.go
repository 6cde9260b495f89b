// Package handled lists the Stripe event types the mirror handles (see
// package mirror, whose Types is this list). It is a package of its own,
// importing nothing, so that the receiver, which accepts exactly these
// types by default, links the list and not the mirror.
package handled

// Types lists the event types the mirror handles: the receiver's default
// allowlist, with the team's effects' types.
var Types = []string{
	"customer.created", "customer.updated", "customer.deleted",
	"customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted",
	"customer.subscription.paused", "customer.subscription.resumed", "customer.subscription.trial_will_end",
	"invoice.created", "invoice.finalized", "invoice.paid", "invoice.payment_succeeded", "invoice.payment_failed", "invoice.voided",
	"checkout.session.completed", "checkout.session.async_payment_succeeded", "checkout.session.async_payment_failed",
	"product.created", "product.updated", "product.deleted",
	"price.created", "price.updated", "price.deleted",
}

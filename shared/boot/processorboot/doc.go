// Package processorboot builds the processor's handler at cold start (see
// package boot): the store, the mirror, the team's effects with the
// built-in forward effect, and Stripe's API for events too large to store.
// It never imports the reconciler (TestDependencies in package boot holds
// it to that), and its cold start makes no network call: the API key and
// the forward secret are read on first need.
package processorboot

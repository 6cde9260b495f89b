// Package reconcilerboot builds the reconciler's handler at cold start
// (see package boot): Stripe's API for the listing, the ingest path for
// what is missing, and the store for checkpoints and the stuck sweep.
// inboxctl and the local stack build it the same way to run it once.
package reconcilerboot

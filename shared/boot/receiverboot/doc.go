// Package receiverboot builds the receiver's handler at cold start (see
// package boot). It imports only what the receiver runs: the signature
// check, the ingest path (store and queue) and the handled types; not the
// mirror, the processor, the reconciler or Stripe's API client
// (TestDependencies in package boot holds it to that).
package receiverboot

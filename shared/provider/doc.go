// Package provider verifies the webhook deliveries of the providers other
// than Stripe (GitHub, Shopify, Standard Webhooks senders) and reads from
// each the envelope the pipeline routes and stores: the event id, its type
// and, where the provider gives them, its time and its object.
//
// Stripe keeps its own package (shared/signature) and its own envelope
// (event.DecodeEnvelope): its header parser, tolerance, future skew and
// mode checks are Stripe's alone.
//
// Each provider is one file: a Verifier that checks the signature over the
// raw body in constant time against every configured secret, then reads
// the id and type. Adding a provider is adding a file like these, its name
// to Names and New, and a test with the provider's own published values
// (docs/providers.md). The Standard Webhooks signature is checked by the
// specification's own Go library; GitHub's and Shopify's are one HMAC-SHA256
// each, compared with hmac.Equal, for which no library is needed.
package provider

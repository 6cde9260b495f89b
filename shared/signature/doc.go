// Package signature verifies that a webhook delivery was signed by the
// provider, over the exact bytes received.
//
// Stripe signs "<timestamp>.<raw body>" with HMAC-SHA256 and sends the result
// in the Stripe-Signature header as "t=<unix>,v1=<hex>[,v1=<hex>...]". The
// comparison itself is stripe-go's (hmac.Equal over every v1 signature); this
// package adds what stripe-go leaves out: several secrets at once for
// rotation, a bound on timestamps in the future, and an injectable clock.
//
// # One parser, one timestamp
//
// ParseHeader is the only reading of the header: Verify (the receiver) and
// Diagnose (inboxctl verify) both start with it, and the timestamp it returns
// is the one the age checks use. Its grammar is strict, a subset of what
// Stripe sends and of what stripe-go parses:
//
//	header = pair *( "," pair )
//	pair   = key "=" value
//	key    = 1*( ALPHA / DIGIT )
//	value  = 1*( any visible ASCII character except "," and "=" )
//
// with exactly one t, whose value is a Unix time in decimal digits (no sign,
// no leading zero, at most an int64); every v1 value exactly 64 hex digits;
// and other keys (v0, a scheme added later) ignored, as Stripe's libraries
// ignore them. Whitespace around the whole value is not part of it (RFC 9110
// field values); whitespace anywhere else, an empty pair, a second t and a
// v1 that is not an HMAC-SHA256 are malformed.
//
// Exactly one t matters: stripe-go takes the last t= for the HMAC, and a
// header carrying a second t= (put in front of a captured delivery's header,
// or a second Stripe-Signature header, which API Gateway joins to the first
// with a comma) could otherwise be checked for its age against one
// timestamp and for its signature against another, so a captured delivery
// could be replayed at will. Once ParseHeader has accepted a header, stripe-go
// reads exactly the same t and v1 values from it, so the signature check is
// still stripe-go's own (webhook.ValidatePayloadIgnoringTolerance) on the
// header as parsed, and nothing here computes or compares an HMAC.
//
// The age checks compare whole Unix seconds, never time.Duration values: a
// Duration saturates about 292 years out, and a timestamp further in the
// future than that once looked fresh.
//
// Diagnose is the operator's side of the same check (inboxctl verify): given
// a captured delivery it says exactly why it fails, including bodies changed
// on their way by proxies and frameworks, which it detects by undoing the
// usual changes until the signature verifies. Whatever it says, Verify
// decides the same way (Problem.Err).
package signature

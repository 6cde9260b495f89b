// Package provider is the one vocabulary for verifying webhook deliveries,
// whoever sends them: Stripe, GitHub, Shopify, Standard Webhooks senders
// (Svix's header names included), Paddle Billing, Razorpay, Lemon
// Squeezy, Square, LiveKit, Twilio.
// It checks each delivery's signature over the raw body, exactly as
// received, in constant time against every configured secret, and reads
// from it the envelope the pipeline routes and stores: the event id, its
// type and, where the provider gives them, its time, account and object.
//
// # One interface, one table
//
// Every provider is a Verifier, and one row (Spec) of the table All: its
// name, its Check (what can be refused before any secret is read), its
// constructor and its signer (for inboxctl send and tests). The Keyring
// is a Verifier too: it reads a provider's secrets from Parameter Store on
// first use, refuses what Check refuses before reading anything, reads
// again when a signature matches none of them (a rotation) and backs off
// while they cannot be read. The errors are this package's sentinels (and
// event.ErrMalformed, event.ErrMissingID for an envelope), and Outcome is
// the one switch from them to the receiver's outcomes. Options (tolerance,
// future skew, mode, clock) and their defaults are the same for every
// provider.
//
// Each provider is one file: stripe.go, github.go, shopify.go,
// standard.go, paddle.go, razorpay.go, lemonsqueezy.go, square.go,
// livekit.go, twilio.go. Stripe's parser of its header and DiagnoseStripe (inboxctl
// verify) are in files of their own, and their names say Stripe.
//
// # What each signature covers
//
// A provider's verifier returns Verified.ReplayKey when its signature does
// not cover the event's id (GitHub and Shopify sign the body only), or
// covers no time (Square, Lemon Squeezy, Razorpay, Twilio, a declared
// sender without a timestamp): the receiver then accepts one event id per
// key, for good, so a captured body sent again under a fresh id, or after
// its record has expired, is refused (ErrReplay). Stripe and Standard Webhooks sign a timestamp with the
// body (and Standard Webhooks the id): a replay is older than the
// tolerance, or a duplicate of its id. docs/providers.md says, provider by
// provider, which fields are signed and which the inbox trusts.
//
// # Libraries
//
// Stripe's signatures are compared by stripe-go (webhook.
// ValidatePayloadIgnoringTolerance, after a strict parse of the header:
// StripeHeader says why), the Standard Webhooks signature by the
// specification's own Go library, LiveKit's token by golang-jwt;
// GitHub's, Shopify's, Paddle's, Razorpay's, Lemon Squeezy's, Square's
// and Twilio's are one HMAC each over a canonical string, compared with
// hmac.Equal, for which no library is needed (each file's doc says why
// its vendor's own library is not used).
package provider

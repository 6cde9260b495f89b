// Package billing is the example of a team's own effect, complete: on
// invoice.paid it tells a billing API of yours that the invoice was paid,
// exactly once as far as that API can tell, whatever the retries.
//
// It is declared in shared/pipeline/hooks (Spec) and off until configured, through
// the one mechanism every effect uses (effect.Spec; docs/design.md, "Your
// own effects"):
//
//   - BILLING_API_URL, a setting (the template's EffectSettings): where it
//     POSTs, https (or http to a loopback host, for the local stack);
//   - billing-api-token, a secret (named in EffectSecrets, stored as the
//     SecureString /webhook-inbox/<stage>/effects/billing-api-token): sent
//     as "Authorization: Bearer <token>", read on the first invoice.paid,
//     and read again (at most once a minute) when the API answers 401, so a
//     rotated token takes effect without a redeploy.
//
// The request: POST BILLING_API_URL with
//
//	Content-Type: application/json
//	Authorization: Bearer <token>
//	Idempotency-Key: <event id>:billing   (a connected account's: <account>:<event id>:billing)
//	{"event_id": "evt_...", "account": "acct_...", "invoice": "in_...", "customer": "cus_...",
//	 "amount_paid": 2000, "currency": "usd", "paid_at": 1700000000}
//
// ("account" only for a connected account's invoice, Stripe Connect.)
//
// The Idempotency-Key is the same on every retry of the event: the API
// must treat a repeated key as done, because a crash after its 2xx and
// before the processor's commit repeats the call. Answers: 2xx completes
// the effect; 429, 5xx, a network error, and a 401 or 403 that survives
// re-reading the token are retried with the processor's backoff (the
// retry budget); any other 4xx, and any redirect (never followed: it would
// take the token elsewhere), fails the event permanently.
//
// Copy it to write your own: declare the effect's settings and secrets in
// its Spec, build nothing in New that needs the network, read secrets
// with their Value when handling an event, and pass ev.IdempotencyKey to
// the outside world.
package billing

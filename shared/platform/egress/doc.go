// Package egress decides which URLs the inbox may send a secret to: the
// forward effect's target (the payload, its signature and the idempotency
// key) and Stripe's API base (the API key). Both must be https, so nothing
// on the path reads or changes what is sent; plain http is allowed only to
// a loopback host (127.0.0.0/8, ::1, localhost), which never leaves the
// machine, for the local stack and tests.
//
// Following a redirect would send the same secrets to a host nobody
// configured, so the callers also refuse redirects: Send for the effects,
// NoRedirect for a client built on an SDK that adds its credential in the
// transport (githubapi).
package egress

// Package console is the operator's web console: events and their
// timelines, objects and entitlements, the dead-letter queue, the
// reconciler's checkpoints and runs, and the two actions an operator takes
// (replay an event, redrive the dead-letter queue), served on the
// operator's own machine by `inboxctl console` and by `make dev`.
//
// It is a view. It reads through the packages that own each table (the
// store's one listing, Events.List, for every list of events; the mirror's
// reader) and acts only through Actions, which the operations package
// implements (internal/ops, the code inboxctl's own replay and dlq
// commands run), so the console and the CLI never disagree about what an
// action does.
//
// # Serving
//
// Pages are rendered on the server with html/template from templates
// embedded in the binary, with an embedded stylesheet and no script: there
// is no build step and nothing is loaded from the network. Every control
// is a native link, button or labelled form field, usable from the
// keyboard; collapsible parts are <details>. Times are shown in UTC with
// their age.
//
// # Access
//
// The console binds a loopback address only (Listen) and is opened with a
// URL that carries a random token made for the run, under a path made for
// the run (RunPath, derived from the token); every request outside that
// path, or without the token (in the URL, or in the cookie the first
// request sets), is answered 401. The cookie is host-only, HttpOnly,
// SameSite=Strict and scoped to the run's path: browsers keep cookies by
// host, not port, so a cookie on "/" would go to every other web server on
// 127.0.0.1 the browser visits, while no other server is visited at the
// run's path. The answer to the token in the URL, and every other
// redirect, goes to a path of the run's (cleaned and escaped, never
// "//host" or "/\host"). A request naming another Host (a DNS rebinding
// page) gets 403. Actions are POST forms behind a confirmation page,
// checked twice against cross-site requests: net/http's
// CrossOriginProtection (Sec-Fetch-Site and Origin) and a per-run form
// token. Pages never show a signature header (none is stored) nor a
// secret: the values of payload members named like a credential are shown
// redacted, by one rule on the member's name (sensitive, in view.go:
// client_secret, access_token, apiKey, X-Hub-Signature-256, ...).
package console

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
// URL that carries a random token made for the run; every request without
// it (in the URL, or in the cookie the first request sets) is answered 401.
// A request naming another Host (a DNS rebinding page) gets 403. Actions
// are POST forms behind a confirmation page, checked twice against
// cross-site requests: net/http's CrossOriginProtection (Sec-Fetch-Site and
// Origin) and a per-run form token. Pages never show a signature header
// (none is stored) nor a secret: payload fields whose name says secret,
// password, signature, api key or authorization are shown redacted.
package console

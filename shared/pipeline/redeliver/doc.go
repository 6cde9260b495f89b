// Package redeliver repairs GitHub's missed deliveries: it finds the
// failed deliveries the store does not hold whole and asks GitHub to send
// them again. It runs as a turn of each reconciler run (package reconcile,
// Config.Redeliverer), after Stripe's groups and whatever became of them.
//
// GitHub does not retry a failed delivery; it keeps each hook's deliveries
// for three days and redelivers one when asked. For each configured hook
// (Config.Hooks: repository, organization or GitHub App hooks, package
// githubapi), a sweep lists the hook's deliveries newest first, cursor by
// cursor, down to its checkpoint (store.Checkpoints, "github#<hook>",
// conditional writes on its sequence number; the cursor is kept while a
// window is under way) minus the overlap, never further back than GitHub
// keeps. A guid's newest attempt is looked at when none of its attempts in
// the list got a 2xx and it is older than the settle delay (a younger one
// may still be under way); the store is asked, one call per page
// (store.Events.Held), whether it holds the event whole: a record with its
// payload, or one settled. One it does not (no record, or a record the
// receiver stored without its payload: its payload's put failed and it
// answered 5xx) is scheduled for redelivery (store.Redeliveries), once per
// event. A first sweep starts where Stripe's first run does (the run's
// FirstLookback): what failed before the deployment is history.
//
// Then the redeliveries due are asked of GitHub, soonest due first, each
// hook within its own budget (Config.MaxRedeliveries, under GitHub's
// secondary limit on writes): one a run's budget leaves is due for the
// next, and counted (github_redelivery_backlog). After each ask the next
// is due after Config.RedeliveryBackoff, doubled per ask, so a redelivery
// that fails again (the receiver still down) is asked for less and less
// often, not every run; after Config.MaxAsks asks one still not held whole
// is given up, counted (github_redeliveries_abandoned) and logged as an
// error. A redelivery's schedule ends when the store holds the event
// whole, or an attempt got a 2xx: GitHub then signed and sent it through
// the receiver like any other, and the receiver stored its payload
// whatever the record's status (package ingest). The reconciler never
// ingests a GitHub event itself, for it has no payload GitHub signed.
//
// A delivery the receiver refused on purpose (a 4xx but 408 and 429: no
// secret configured, a bad signature, a body over the size limit) would be
// refused again: a scheduled run leaves it alone and counts it
// (github_rejected); an operator's sweep (Turn.Since), run after fixing
// the cause, schedules it.
//
// One hook's page budget, error or backlog does not keep the next hook
// from its turn. GitHub's rate limits (403 or 429, primary or secondary)
// are waited out when they lift within Config.MaxWait, and otherwise stop
// the sweep cleanly (Result.Stopped = rate_limited) with a log line; each
// checkpoint holds the last page fully handled.
//
// # What it shares with package reconcile
//
// A sweep is one turn of a reconciler run, so the run owns what the two
// share and hands it over in a Turn: its id, clock, logger and deadline,
// the operator's sweep (Since), the page budget, the window settings
// (overlap, settle delay, first lookback) and the count of rate-limit
// answers in a row. The sweep reports a Result the run logs on its one
// line (Result.Metrics) and counts in its outcome. The stop reasons the two
// share are package outcome's (outcome.Stop*), the run's vocabulary, with
// one of this package's own (StopMaxRedeliveries). Package reconcile
// imports this one, not the other way round: the run composes its turns,
// and this package knows nothing of Stripe. The checkpoint and events
// interfaces are declared here again, as small as the sweep uses them
// (*store.Checkpoints and *store.Events implement both packages').
//
// # Reporting
//
// Its metrics, on the reconciler run's line only where hooks are
// configured: github_deliveries_listed, github_redelivered,
// github_redelivery_refused, github_redeliveries_scheduled,
// github_redelivery_backlog, github_redeliveries_abandoned,
// github_rejected, github_checkpoint_age and github_throttled. The template
// alarms on github_checkpoint_age staying high (a checkpoint that stops
// advancing), on a redelivery backlog run after run and on any delivery
// given up.
package redeliver

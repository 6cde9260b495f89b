// Package reconcile proves, on a schedule, that no event was lost: it lists
// the provider's events, compares them with the store, ingests what never
// arrived, and re-enqueues what arrived but got stuck.
//
// Webhooks bring speed; only reconciliation brings completeness. Stripe stops
// retrying a delivery after three days (a few hours in test mode), endpoints
// get misconfigured, and a deploy can drop deliveries.
//
// # Missing events
//
// The handled types are split into groups of at most 20, the most one list
// request may filter on, and each group is reconciled on its own. A run's
// page budget (Config.MaxPages) is shared fairly: each group gets its
// share first, the least advanced first, and what is left goes to those
// their share did not bring to the present, so a backlog in one group
// never keeps the others from being listed. A group
// lists a window of creation times, newest first, 100 events per request:
// from its checkpoint minus an overlap (DefaultOverlap: events can show up
// in the list a little after their creation time) to a little before now
// (events that young may still be on their way as webhooks), and never
// older than Stripe's 30-day retention, so each event is compared about
// once. Each page is compared with the store in one call
// (store.Events.Existing, one batch read of keys, eventually consistent:
// an event stored a moment before that the read misses is ingested again,
// and its conditional put loses to the stored record, which changes
// nothing and is counted as raced). Events not in the store are
// ingested through package ingest, the receiver's own path (same
// conditional put, same enqueue), with source "reconciler", so a late
// webhook for the same event is a plain duplicate.
//
// # Checkpoint
//
// Each group's progress is a checkpoint kept by package store
// (store.Checkpoints), written after each page is fully handled with a
// conditional write on its sequence number: a run only ever replaces the
// state it read, so two overlapping runs cannot move a checkpoint
// backwards or skip a page; the one that loses the race stops and leaves
// the rest to the other. A window is worked newest first, so until it is
// finished the checkpoint holds the window and a cursor, and a run that
// stops (near its deadline, after its page budget, under a storm of 429s)
// is resumed from there by the next.
//
// # Where reconciliation starts
//
// A group's first run (no checkpoint yet) records the group's start in its
// checkpoint (store.Checkpoint.HistoryBefore), once: the run's own start less
// Config.FirstLookback, one period of the reconciler's schedule, which
// covers the stretch between a deployment and its first scheduled run.
// Nothing created before it is listed, by a scheduled run or a sweep:
// that is history, which a new deployment does not replay through the
// team's effects (a first run once looked back Stripe's 30 days and did).
// History comes in only by an operator's backfill (RunOptions.Backfill),
// as source backfill, which the processor applies to the mirror without
// running effects; missing events created after the start are lost
// webhooks, and come in as always. A new set of handled types is a new
// group, which starts the same way.
//
// # Thin events
//
// Stripe's thin events (event destinations) are not listed: the API v1
// Events API this package lists holds every thin v1. event's snapshot
// twin, so a missed thin event is found, ingested and applied as its twin,
// and one already processed is held by the twin's record its commit made
// (store.Events.TwinWrite), which Existing finds. A thin event that names
// no twin leaves no such record: its twin is ingested as missing, and the
// processor pairs the two by a twin claim (store.TwinKey), so the change
// has one effect. API v2 events of their own (the health event) are not
// listed.
//
// # Stuck events
//
// Records still received, failed or processing a while after their last
// transition (15 minutes by default), and, when failed, after their
// backoff's end (retry_at), have lost their queue message: the
// process died between the put and the send, the message went to the DLQ
// while the record said otherwise, or a worker died on the last receive.
// The store finds them without a scan (store.Events.Stuck: the pending lane
// of its sparse index, every shard), and their pointer is sent again; the
// processor's claim makes a pointer sent twice harmless.
//
// # GitHub's missed deliveries
//
// When Config.Redeliverer is set, each run, after Stripe's groups and
// whatever became of them, gives GitHub's redelivery (package redeliver)
// its turn, with the run's deadline, options and window settings; what it
// did is Result.GitHub, and its metrics are on the run's line.
//
// # Reporting
//
// Every run ends with one JSON log line carrying its metrics in the
// Embedded Metric Format (namespace WebhookInbox, dimension function =
// reconciler): listed, missing_found, backfilled, stuck_requeued, pages,
// run_duration, checkpoint_age, throttled, raced; with GitHub hooks
// configured, also package redeliver's (github_*). missing_found above
// zero means webhooks are being lost upstream; the template alarms on it
// and on checkpoint_age staying high (a checkpoint that stops advancing).
// backfilled counts history a backfill ingested, never a loss. Why a run
// stopped early (its stopped field) is one of outcome.Stop*.
package reconcile

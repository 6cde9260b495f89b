package outcome

// Outcome is one value of the vocabulary.
type Outcome string

// What the receiver did with one webhook request, and what ingesting an event
// did (the receiver's path, which the reconciler shares for events it found
// missing): the `outcome` field of the "webhook" log line and the dimension of
// its `requests` metric.
const (
	// Stored: a new record was stored and its pointer enqueued (200).
	Stored Outcome = "stored"
	// Requeued: the record existed as received or failed, so its pointer
	// was enqueued again; its earlier message may never have been sent (200).
	Requeued Outcome = "requeued"
	// Duplicate: the event is already in hand (its record needs nothing
	// from this delivery or message), acknowledged with no second effect.
	// The receiver answers 200; the processor deletes the message of a
	// record that is already finished.
	Duplicate Outcome = "duplicate"
	// Ignored: the event's type is not handled by this deployment. Its new
	// record is kept with status ignored as the record of what arrived and never
	// enqueued (200); the record's own outcome says the same.
	Ignored Outcome = "ignored"

	// RejectedMissingSignature: no signature header (400).
	RejectedMissingSignature Outcome = "rejected_missing_signature"
	// RejectedMalformedSignature: the signature header does not parse (400).
	RejectedMalformedSignature Outcome = "rejected_malformed_signature"
	// RejectedSignature: no signature matches any configured secret (400).
	RejectedSignature Outcome = "rejected_signature"
	// RejectedStaleTimestamp: the signed timestamp is older than the
	// tolerance (400).
	RejectedStaleTimestamp Outcome = "rejected_stale_timestamp"
	// RejectedFutureTimestamp: the signed timestamp is further ahead than
	// the allowed skew (400).
	RejectedFutureTimestamp Outcome = "rejected_future_timestamp"
	// RejectedReplay: the delivery carries a signature made for another
	// one: a body already accepted under another event id, from a provider
	// whose signature does not cover the id (GitHub, Shopify), or under
	// its own longer ago than records are kept, from one whose signature
	// covers no time; or a Stripe header with a second timestamp (400).
	RejectedReplay Outcome = "rejected_replay"
	// RejectedMalformed: the body is not valid base64, or not one JSON event
	// object, or a declared sender's id holds its template's separator
	// (400).
	RejectedMalformed Outcome = "rejected_malformed"
	// RejectedMissingID: the event has no id or no type (400).
	RejectedMissingID Outcome = "rejected_missing_id"
	// RejectedWrongMode: a live event at a test deployment or the reverse
	// (400).
	RejectedWrongMode Outcome = "rejected_wrong_mode"
	// RejectedWrongEndpoint: a Stripe event signed with the other kind of
	// endpoint's secret: a connected account's event verified only by a
	// platform endpoint's secret, or a platform event only by a Connect
	// endpoint's (400).
	RejectedWrongEndpoint Outcome = "rejected_wrong_endpoint"
	// RejectedUnknownProvider: the path names no provider, or one this
	// deployment has no signing secret for (404).
	RejectedUnknownProvider Outcome = "rejected_unknown_provider"
	// RejectedTooLarge: the body is over the size limit (413).
	RejectedTooLarge Outcome = "rejected_too_large"

	// PersistFailed: the record could not be stored (500); nothing was
	// acknowledged and the provider retries.
	PersistFailed Outcome = "persist_failed"
	// EnqueueFailed: the record was stored but its pointer not enqueued
	// (500); the provider's retry or the reconciler enqueues it.
	EnqueueFailed Outcome = "enqueue_failed"
	// Throttled: DynamoDB or SQS throttled the request (503).
	Throttled Outcome = "throttled"
	// Timeout: the request's time budget, or the Lambda deadline, ran out
	// (504).
	Timeout Outcome = "timeout"
	// SecretsUnavailable: the signing secrets cannot be read, or hold no
	// secret, so no signature can be checked (503); nothing is stored and
	// the provider retries.
	SecretsUnavailable Outcome = "secrets_unavailable"
)

// What the bridge did with one message of the ingress queue (an EventBridge
// event from Stripe's event destination): the `outcome` field of its
// "eventbridge event" log line and the dimension of its `events` metric.
// Beside these two it emits the ingest words above (Stored, Requeued,
// Duplicate, Ignored: the message is deleted), RejectedMalformed,
// RejectedMissingID and RejectedWrongMode (like the two below, the message
// is moved to the ingress dead-letter queue at once: retrying cannot help),
// and PersistFailed, EnqueueFailed, Throttled and Timeout (the message is
// reported as a batch item failure and comes back; see Bridge).
const (
	// RejectedWrongSource: the event's source is not the partner event
	// source this deployment is configured for.
	RejectedWrongSource Outcome = "rejected_wrong_source"
	// RejectedWrongAccount: the event's account is not this deployment's
	// AWS account.
	RejectedWrongAccount Outcome = "rejected_wrong_account"
)

// What the processor did with one queue message: the name of the metric
// that counts it on each batch's log line. Applied and Superseded are also
// the outcome a processed record keeps.
const (
	// Applied: the event's snapshot and effects were committed with the
	// status processed.
	Applied Outcome = "applied"
	// Superseded: a newer event of the same object had been applied first,
	// so the snapshot was left alone; the event's effects were committed and
	// it is processed.
	Superseded Outcome = "superseded"
	// Twinned: a Stripe event of a snapshot/thin pair (a thin event and
	// the snapshot event it names as its twin, snapshot_event) whose twin
	// had the pair's business effect already: the mirror was updated
	// under the ordering guard, no effect was committed, and it is
	// processed. A snapshot twin that arrives after its thin event finds
	// its record made processed, twinned, by that event's commit. A thin
	// event that names no twin and the snapshot event of the same change
	// the reconciler ingested are paired by a twin claim
	// (store.TwinKey): the second of the two is twinned.
	Twinned Outcome = "twinned"
	// Repaired: a Stripe event_generation_failure.resolved event: the
	// object it names was read from the API and written to the mirror
	// under the ordering guard; no effect ran, and it is processed.
	Repaired Outcome = "repaired"
	// Backfilled: history ingested by a backfill (source backfill): its
	// snapshot was applied to the mirror if newer than what it holds, no
	// effect ran, and it is processed.
	Backfilled Outcome = "backfilled"
	// Leased: another worker holds a live lease on the event, claimed from
	// a message of its own; this message is deleted and that worker
	// finishes the event.
	Leased Outcome = "leased"
	// LeaseWait: an earlier receive of this same message holds a live
	// lease it never knew it took (its claim's answer was lost); the
	// message comes back when the lease ends, since it may be the only
	// one the event has.
	LeaseWait Outcome = "lease_wait"
	// Missing: no record for the message (expired, or never stored); the
	// message is deleted.
	Missing Outcome = "missing"
	// BadMessage: the message is not a pointer to an event; it is logged
	// and deleted.
	BadMessage Outcome = "bad_message"
	// LeaseLost: the lease expired before the commit and another worker
	// took the event over; it finishes the event.
	LeaseLost Outcome = "lease_lost"
	// Failed: the attempt failed; the record is failed and the message comes
	// back after a backoff.
	Failed Outcome = "failed"
	// FailedPermanent: the attempt failed in a way no retry can fix, or the
	// message met a record an earlier attempt failed so; the record is
	// failed_permanent and the message deleted.
	FailedPermanent Outcome = "failed_permanent"
	// DeadLettered: the last receive the redrive policy allows failed; the
	// record is dead_lettered and the message moves to the DLQ.
	DeadLettered Outcome = "dead_lettered"
)

// How a reconciler run ended: the `outcome` field of its "reconcile run" log
// line.
const (
	// RunComplete: every group was reconciled up to the present.
	RunComplete Outcome = "complete"
	// RunPartial: the run stopped cleanly before the present (its
	// `stopped` field says why); the next run resumes from the checkpoint.
	RunPartial Outcome = "partial"
	// RunAborted: the run stopped on an error (its `error` field).
	RunAborted Outcome = "aborted"
)

// Receiver lists the receiver's outcomes, by answer.
var Receiver = []Outcome{
	Stored, Requeued, Duplicate, Ignored,
	RejectedMissingSignature, RejectedMalformedSignature, RejectedSignature,
	RejectedStaleTimestamp, RejectedFutureTimestamp, RejectedReplay, RejectedMalformed,
	RejectedMissingID, RejectedWrongMode, RejectedWrongEndpoint, RejectedUnknownProvider, RejectedTooLarge,
	PersistFailed, EnqueueFailed, Throttled, Timeout, SecretsUnavailable,
}

// Bridge lists the bridge's outcomes of a message: acknowledged, moved to
// the ingress dead-letter queue, retried.
var Bridge = []Outcome{
	Stored, Requeued, Duplicate, Ignored,
	RejectedMalformed, RejectedMissingID, RejectedWrongSource, RejectedWrongAccount, RejectedWrongMode,
	PersistFailed, EnqueueFailed, Throttled, Timeout,
}

// Processor lists the processor's outcomes of a message, in the order its
// batch line counts them.
var Processor = []Outcome{
	Applied, Superseded, Twinned, Repaired, Backfilled, Duplicate, Leased, LeaseWait, Missing, BadMessage, LeaseLost,
	Failed, FailedPermanent, DeadLettered,
}

// Run lists the outcomes of a reconciler run.
var Run = []Outcome{RunComplete, RunPartial, RunAborted}

// Why a reconciler run, or its GitHub sweep, stopped before the present:
// a partial run's stopped and github_stopped fields. Each is a clean stop:
// the checkpoint holds the last page fully handled and the next run
// resumes from it. They live here, beside the run's outcomes, because two
// packages stop for these reasons (reconcile, Stripe's listing; redeliver,
// GitHub's redelivery) and one word each must mean one thing.
const (
	StopDeadline        = "deadline"         // its context's deadline was near
	StopMaxPages        = "max_pages"        // it used its page budget
	StopRateLimited     = "rate_limited"     // the provider kept answering 429
	StopCheckpointMoved = "checkpoint_moved" // another run is at work
	StopCanceled        = "canceled"         // its context was canceled
)

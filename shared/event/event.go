// Package event defines what the pipeline knows about one provider event: the
// envelope read from a delivery, the record kept in the store, the pointer sent
// through the queue, and the status machine that connects them.
//
// The status machine, in full:
//
//	received ──claim──▶ processing ──commit──▶ processed
//	   ▲                    │  │
//	   │                    │  └──permanent error──▶ failed_permanent
//	   │                    └──retryable error──▶ failed ──claim──▶ processing
//	   │                                            └──last receive──▶ dead_lettered
//	ignored (type not handled; never enqueued)
//
// A record in processing whose lease has expired can be claimed again, so a
// worker that dies never blocks its event.
package event

import (
	"fmt"
	"strings"
)

// Status is where an event stands in the pipeline. Idempotency is decided by
// status, never by the mere existence of a record.
type Status string

// The statuses an event record can have.
const (
	StatusReceived        Status = "received"
	StatusProcessing      Status = "processing"
	StatusProcessed       Status = "processed"
	StatusFailed          Status = "failed"
	StatusFailedPermanent Status = "failed_permanent"
	StatusDeadLettered    Status = "dead_lettered"
	StatusIgnored         Status = "ignored"
)

// Statuses lists every status, in the order an operator reads them.
var Statuses = []Status{
	StatusReceived, StatusProcessing, StatusProcessed, StatusFailed,
	StatusFailedPermanent, StatusDeadLettered, StatusIgnored,
}

// Pending reports whether the status still needs work from the pipeline:
// such records are kept in the sparse "pending" index the reconciler reads.
func (s Status) Pending() bool {
	return s == StatusReceived || s == StatusProcessing || s == StatusFailed
}

// NeedsEnqueue reports whether a delivery that finds an existing record in
// this status must put it on the queue again. A record stays received when the
// process died between the put and the send, or failed when the last attempt
// failed: in both cases the queue may hold no message for it any more.
func (s Status) NeedsEnqueue() bool {
	return s == StatusReceived || s == StatusFailed
}

// ParseStatus returns the status named by s.
func ParseStatus(s string) (Status, error) {
	for _, st := range Statuses {
		if string(st) == s {
			return st, nil
		}
	}
	names := make([]string, len(Statuses))
	for i, st := range Statuses {
		names[i] = string(st)
	}
	return "", fmt.Errorf("event: unknown status %q (want one of %s)", s, strings.Join(names, ", "))
}

// Outcome says what processing did with an event.
type Outcome string

// The outcomes of processing.
const (
	// OutcomeApplied: the event's snapshot and effects were written.
	OutcomeApplied Outcome = "applied"
	// OutcomeSuperseded: a newer event had already been applied to the same
	// object, so the snapshot was left alone; the event is still processed.
	OutcomeSuperseded Outcome = "superseded"
	// OutcomeIgnored: the type is not handled; recorded for the audit trail.
	OutcomeIgnored Outcome = "ignored"
)

// Source says how an event reached the store.
type Source string

// The sources of an event record.
const (
	SourceWebhook    Source = "webhook"
	SourceReconciler Source = "reconciler"
)

// ProviderStripe is the only provider so far; keys carry the provider so
// others can share the tables later.
const ProviderStripe = "stripe"

// Key is the partition key of an event record.
func Key(provider, id string) string { return provider + "#" + id }

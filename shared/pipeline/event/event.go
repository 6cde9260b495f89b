// Package event defines what the pipeline knows about one provider event: the
// envelope read from a delivery, the record kept in the store, the pointer sent
// through the queue, and the status machine that connects them.
//
// The status machine, in short:
//
//	received ──claim──▶ processing ──commit──▶ processed
//	   ▲                    │  │
//	   │                    │  └──permanent error──▶ failed_permanent
//	   │                    └──retryable error──▶ failed ──claim──▶ processing
//	   │                                            └──last receive──▶ dead_lettered
//	ignored (type not handled; never enqueued)
//
// A record in processing whose lease has expired can be claimed again, so a
// worker that dies never blocks its event. The machine in full, each
// transition with its condition and the write that makes it, is one table,
// Transitions: shared/storage/store's test holds every conditional write to exactly
// it, and TestTheStatusMachineKeepsItsPromises explores it, with the
// actors around it, for every interleaving of a small world.
//
// # Reading a payload: one rule for repeated keys
//
// JSON leaves a key given twice in one object undefined, and decoders differ
// (the last value, the first, or an error). What matters is that every reader
// of one payload finds the same id, type and object: the receiver routes and
// orders by what DecodeEnvelope reads, and the processor (the mirror, a
// team's effects through stripe-go) decodes the same bytes again. All of them
// use encoding/json, so the rule is encoding/json's, everywhere: the last
// value of a repeated key wins, and a key matches a field case-insensitively
// when no key matches it exactly. DecodeEnvelope reads data.object in the
// same two steps as the mirror (raw, then its id and object), so the two
// agree even on a repeated "data" or "object"; FuzzDecodeEnvelope holds
// DecodeEnvelope to the mirror's reading and to stripe-go's.
//
// Repeated keys are not rejected. An earlier hand-written decoder did reject
// them, to stay out of the disagreement between decoders; with one decoder
// there is none to stay out of, and detecting them would take a second,
// token-by-token pass over every event (or hand-written scanning again) for
// payloads that only the holder of the signing secret can produce, and that
// Stripe never sends.
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

// Failing lists the statuses that need a person, in the order an operator
// on call reads them: failed (retrying, but failing), dead_lettered (the
// queue gave up), failed_permanent (the processor gave up). Operators'
// "failing" (inboxctl events --failing, the console's health page) means
// these.
var Failing = []Status{StatusFailed, StatusDeadLettered, StatusFailedPermanent}

// IsFailing reports whether the status is one of Failing.
func (s Status) IsFailing() bool {
	return s == StatusFailed || s == StatusDeadLettered || s == StatusFailedPermanent
}

// ByAttention is every status, those of Failing first, then the
// pipeline's own work, then the settled ones: the order of a health
// report.
var ByAttention = []Status{
	StatusFailed, StatusDeadLettered, StatusFailedPermanent,
	StatusReceived, StatusProcessing, StatusIgnored, StatusProcessed,
}

// Pending reports whether the status still needs work from the pipeline:
// the store keeps such records in the pending lane of its sparse index,
// which the reconciler's stuck sweep reads.
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

// NeedsPayload reports whether a record in this status may still need its
// payload: to be processed, or for an operator's redrive or replay. Only a
// settled record (processed, ignored) never does. A record can be stored
// without its payload (the payload's own put failed, or its writer died
// between the two) and still move on, the stuck sweep sending it to the
// processor: so a later delivery of the event stores its payload whatever
// the status, unless it is settled.
func (s Status) NeedsPayload() bool {
	return s != StatusProcessed && s != StatusIgnored
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

// Source says how an event reached the store.
type Source string

// The sources of an event record.
const (
	SourceWebhook    Source = "webhook"
	SourceReconciler Source = "reconciler"
	// SourceBackfill: history, created before the deployment's
	// reconciliation started, ingested by an operator's backfill
	// (inboxctl reconcile --backfill). The processor applies it to the
	// mirror and runs no effect: it happened before this deployment was
	// responsible for it (package reconcile).
	SourceBackfill Source = "backfill"
	// SourceEventBridge: delivered by Stripe's Amazon EventBridge event
	// destination (package bridge), the Stripe event as the EventBridge
	// event's detail. The same event id through the webhook endpoint is
	// the same record: whichever way stored it first, the other is a
	// duplicate.
	SourceEventBridge Source = "eventbridge"
	// SourceAudit is never a stored record's: it is the event an audit's
	// repair runs the team's effects as, when it is asked to
	// (audit.RepairEvent).
	SourceAudit Source = "audit"
	// SourceTwin: a Stripe snapshot event whose record was made by the
	// commit of its thin twin (the thin event naming it in
	// snapshot_event), processed before it arrived: the pair's business
	// effect was the thin event's, so the snapshot event's own delivery
	// is a duplicate. Its payload is not stored.
	SourceTwin Source = "twin"
)

// ProviderStripe is the first provider and the default; keys carry the
// provider, so the same id from two providers never collides.
const ProviderStripe = "stripe"

// Providers lists every provider whose events the tables may hold, in the
// order an operator's filter offers them (the console's) and the
// reconciler's stuck sweep reads their lanes. shared/providers/provider serves all
// but Stripe, and its test holds the two lists together.
var Providers = []string{ProviderStripe, "github", "shopify", "standard", "paddle", "razorpay", "lemonsqueezy", "square", "livekit", "twilio"}

// Key is the partition key of an event record.
func Key(provider, id string) string { return provider + "#" + id }

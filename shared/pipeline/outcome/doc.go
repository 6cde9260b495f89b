// Package outcome is the pipeline's one vocabulary of outcomes: the word that
// says what a step did with a delivery, a queue message, an event or a
// reconciler run. It is what log lines carry in their `outcome` field, what
// the receiver's `requests` metric is dimensioned by, what the processor's
// per-message metrics are named, and what an event record keeps in its
// `outcome` attribute. Each value means one thing wherever it appears:
// `duplicate` is an event already in hand, acknowledged with no second effect,
// at the receiver and at the processor alike; `ignored` is an event whose type
// this deployment does not handle, kept as the record of what arrived and never
// processed, on the delivery that stored it and on its record.
//
// An event's status (received, processing, processed, ...) is another
// vocabulary, package event's: a status is where a record stands, an outcome
// what one step did. So is the processor's error_class (a failure's kind).
//
// docs/outcomes.md describes every value once, with who emits it and the
// metric that counts it; a test holds that table to Receiver, Bridge,
// Processor and Run. Operators' queries, the dashboard and the alarms in template.yaml use
// these names: renaming one is a change to all of them.
package outcome

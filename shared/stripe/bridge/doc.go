// Package bridge takes Stripe's events from its Amazon EventBridge event
// destination into the pipeline: the second way in, beside the webhook
// endpoint (package receiver). Stripe puts each event on a partner event
// source (aws.partner/stripe.com/ed_...), the stack's event bus associated
// with it routes the handled types to the ingress queue, and the bridge
// function consumes that queue in batches. Each message is one EventBridge
// event whose detail is the Stripe event, snapshot or thin.
//
// Every message goes through the webhook's own path (package ingest): the
// record's and the payload's conditional puts, then the pointer on the
// webhook queue, with source eventbridge. The same event id arriving both
// ways (a team moving from the endpoint to EventBridge runs both for a
// while) is one record: whichever way came second finds it and is a
// duplicate, and the processor applies it once. The stored payload is the
// detail exactly as the message carries it.
//
// EventBridge signs nothing: what vouches for an event is the queue policy
// (only the stack's rule may send to the ingress queue) and the envelope,
// which the bridge checks before storing anything: its source must be the
// configured partner source, its account this AWS account, its detail a
// Stripe event (DecodeAnyEnvelope) of this deployment's mode.
//
// What happens to each message, by outcome (package outcome; each is one
// "eventbridge event" log line, counted by the `events` metric):
//
//	stored, requeued,       in the pipeline (or already in hand): deleted
//	duplicate, ignored
//	rejected_malformed,     can never be stored: moved at once to the
//	rejected_missing_id,    ingress dead-letter queue, its body unchanged,
//	rejected_wrong_source,  the outcome and the error as its message
//	rejected_wrong_account, attributes bridge_outcome and bridge_error,
//	rejected_wrong_mode     where the alarm sees it; never retried, never
//	                        dropped. Should the move fail, the message is
//	                        retried instead (dead_letter_failures)
//	persist_failed,         not safely in the pipeline: a batch item
//	enqueue_failed,         failure, so SQS delivers it again after the
//	throttled, timeout      visibility timeout; the queue's redrive policy
//	                        moves it to the same dead-letter queue after
//	                        maxReceiveCount receives
//
// A message is at most what EventBridge carries (an event of 256 KB); the
// store keeps a payload too large for its item out of the table, as it does
// a webhook's, and the processor reads it from Stripe's API instead.
//
// One message's failure never holds the others (partial batch responses).
// Nothing here panics or fails the invocation: an error of the whole
// invocation would retry every message of the batch.
package bridge

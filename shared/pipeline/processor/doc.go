// Package processor applies queued events exactly once.
//
// For each SQS message it claims the event's record (a conditional status
// transition with a lease bounded by the invocation's deadline), plans the
// mirror writes and runs the team's effects, then commits those writes and
// the status "processed" in one DynamoDB transaction conditioned on the lease
// still being ours. A duplicate message finds the record processed and does
// nothing; a worker that dies leaves a lease that expires; a failure is
// recorded on the record and reported in batchItemFailures so SQS retries it,
// and on the last receive the redrive policy allows the record is marked
// dead_lettered before the message moves to the DLQ, so the store and the
// DLQ agree.
//
// On the happy path an event costs three DynamoDB requests: the claim (an
// UpdateItem of the small record, which returns it), a GetItem of its
// payload (an item of its own, written once by the receiver) and the
// transaction. A duplicate costs one, the failed claim; a superseded event
// four; an event of the same second as the one its object holds (a tie,
// mirror.Tie) four and one read of the object from the provider's API
// (Config.API), whose state it commits (mirror.Mirror.Settle), counted by
// the api_reads metric. A record whose payload is not stored (too large, or its receiver
// died between the record and the payload) is read from the provider's
// API.
//
// With effects (and Config.Preread), a Stripe event the mirror keeps and
// an effect handles costs one request more, before the effects run: a
// strongly consistent BatchGetItem of its object's snapshot and, for a
// subscription, of the audit's effects claim for the state it carries
// (mirror.Prereader). A tie is then settled from the API before any
// effect's outside call, so an API read that fails fails the event with
// no outside call made, and a change whose effects the audit's repair
// already ran (mirror.ClaimPut) runs none; the commit checks the claim
// again (mirror.Mirror.ClaimCheck) against one written after the read,
// for an event that does not win, or once its snapshot write fails (a
// repair that claims writes the snapshot at or after the event's second):
// an event that wins pays for no check.
// The commit's own conflict handling stays the backstop for any other
// change after the read.
//
// Failures are classified (Class): an error marked *fault.Permanent makes
// the record failed_permanent and the message is acknowledged; any other
// error is retried with exponential backoff (ChangeMessageVisibility) until
// the last receive the redrive policy allows.
//
// A lease names the message it was claimed from (leaseOwner). A claim,
// commit or failure whose answer was lost is read back by the store;
// should the claim's read-back fail too, the message comes back when the
// lease it may hold ends, and that receive, finding a live lease claimed
// from this very message, comes back again when it ends (lease_wait)
// instead of being deleted as a duplicate: it may be the event's only
// message. A message meeting a failed_permanent record counts it
// (permanent), so its alarm sees it however the record got there.
package processor

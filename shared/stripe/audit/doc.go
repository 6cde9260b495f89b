// Package audit compares the mirror with Stripe's API and repairs the
// drift no event will ever show: an event lost more than the Events API's
// 30 days ago, one Stripe failed to generate, a mirror written by a bug
// since fixed, a subscription created before the inbox existed.
//
// A run lists every subscription Stripe has (stripeapi.ListSubscriptions:
// status=all, 100 a page, stripe-go's iterator, under the client's rate
// cap), reads the page's snapshots from the mirror in one batched read
// (mirror.Reader.Objects), and compares each (mirror.Differences: status,
// customer, price, current period end, cancel at period end). A
// difference, or a subscription the mirror lacks, is repaired by writing
// the API's object through the mirror's guarded write of an API state
// (mirror.Mirror.PlanRepair, Source audit, with what changed), at the time
// the page was requested: an event created after that still wins. The
// write is conditioned besides on the mirror holding exactly what the
// page's read found (the same last event, or nothing), and a snapshot
// whose version is of the page's second or later is not repaired at all:
// an event applied after the read, even one of the page's own second,
// stands (Raced; the next run compares again). With DryRun nothing is
// written and the result says what would be repaired.
//
// By default a repair runs no effect of the team's. With Effects
// (AUDIT_RUN_EFFECTS) it runs them as the event applying the object would
// (RepairEvent), with keys derived from the object and the state, and
// writes an effects claim for that change of state (mirror.ClaimPut) in
// the repair's transaction: the real event of that change, arriving later
// (Stripe's retry, the reconciler), finds the claim and runs none, so one
// change runs the effects once whichever comes first. History runs no
// effect (History): a subscription the mirror lacked that is in a final
// state (canceled, incomplete_expired) is written to the mirror only, as
// the processor writes a backfilled event. No other rule marks history: a
// live subscription the mirror lacked runs its effects as created.
//
// Before the effects' outside calls the repair reads the snapshot again,
// strongly consistent, and gives up (Raced) if an event was applied since
// the page's read. What remains is the moment between that read and the
// transaction: an event applied then, or the transaction failing, leaves
// the effects' outside calls made and nothing committed (no claim). Their
// keys are deterministic, so the next repair to the same state reuses
// them; but the event of that change, finding no claim, runs its effects
// under its own keys, so an application may see the change under both in
// that window. The ledger of committed effect writes stays exact.
//
// A run from the start to the end of the list also counts the
// subscriptions the mirror has that Stripe did not list (UnknownThere),
// from a keys-only scan of the mirror (mirror.Reader.SubscriptionIDs), per
// account the run listed (a connected account's key is never counted
// against the platform's list), and changes nothing for them.
//
// Connected accounts (Stripe Connect) are audited after the platform's own
// subscriptions, each under its own keys: listed with Stripe-Account,
// read and repaired at mirror.Key(account, id), recorded with their
// account (Repair.Account). The accounts are the configured ones
// (ConnectAccounts, STRIPE_CONNECT_ACCOUNTS), the ones the platform lists
// (ListAccounts, with STRIPE_CONNECT_LIST_ACCOUNTS) and the ones the inbox
// has stored an event of (SeenAccounts, paged), in sorted order; a
// failure to list them fails the run before any page. Options.Account
// audits one account alone.
//
// A run bounded by MaxPages (or StopAt) stops before the last account's
// list ends and says where (Result.Cursor: mirror.Key(account, id), or
// "<account>/" for the start of the next account); the next run resumes
// there (Options.StartingAfter), across accounts.
//
// Cost: one list request per 100 subscriptions, one batched read of the
// mirror per page, writes only on drift.
package audit

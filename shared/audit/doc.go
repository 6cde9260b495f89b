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
// the API's object through the mirror's one guarded write of an API state
// (mirror.Mirror.PlanState, Source audit, with what changed), at the time
// the page was requested: an event created after that still wins. A
// repair runs no effect of the team's. With DryRun nothing is written and
// the result says what would be repaired.
//
// A run from the start to the end of the list also counts the
// subscriptions the mirror has that Stripe did not list (UnknownThere),
// from a keys-only scan of the mirror (mirror.Reader.SubscriptionIDs),
// and changes nothing for them.
//
// A run bounded by MaxPages stops before the list ends and says where
// (Result.Cursor); the next run resumes there (Options.StartingAfter).
//
// Cost: one list request per 100 subscriptions, one batched read of the
// mirror per page, writes only on drift.
package audit

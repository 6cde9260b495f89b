// Package mirror keeps the latest snapshot of each Stripe billing object
// (customers, subscriptions, invoices, checkout sessions, products, prices)
// in DynamoDB, and a derived entitlement per customer.
//
// Every write carries an ordering guard: an object remembers the created time
// and id of the last event applied to it, and a write is conditioned on the
// new event being later. Stripe's created has whole seconds, so two events
// of one object can share it, and nothing they carry orders them: with
// TiesByAPI such an event loses the guard, the caller sees the tie (Tie)
// and settles it with the object read from the provider's API (Settle),
// whose state replaces any of that second and loses to a later event
// (PlanState, the one guarded write of a state the API gave, the audit's
// too). Without it, equal times are broken by event id, a total order but
// a coin toss. A deletion leaves a tombstone that only a
// later deletion can replace, so a late "updated" never resurrects a deleted
// object. Together these make the final state independent of the order in
// which events arrive: every permutation of an object's events ends where
// chronological order ends.
//
// A snapshot keeps only the fields of data.object its type's allowlist names
// (Fields: ids, status, amounts, periods by default; no e-mail, name,
// address, phone, shipping, free text or metadata), so the mirror keeps
// what entitlements and operators need and not the customer's personal
// data. A tombstone keeps no data at all: only the keys, the customer id
// and the ordering guard.
//
// An event that loses the guard cancels the processor's transaction on its
// snapshot write; the processor then commits the event as superseded, with
// its effects but without the snapshot.
//
// A customer's entitlement item holds one map per subscription (sub_<id>),
// each behind the same guard as that subscription's snapshot, and the
// entitlement is derived from them when read (DeriveEntitlement), so
// concurrent events of two subscriptions never overwrite each other.
//
// The processor reads an event's standing before its effects run
// (Prereader: one strongly consistent read of the snapshot and, for a
// subscription, its effects claim), so a tie is settled and a superseded
// event known before any effect's outside call. The audit repairs through
// PlanRepair (conditioned on the mirror holding what it read) and, when
// it runs the team's effects, writes an effects claim for the change
// (ClaimKey, ClaimPut): an event of that change created at or before the
// claim runs none (ClaimCheck in its commit is the backstop).
//
// Reader reads it back: Object for one snapshot, CustomerObjects for a
// customer's objects (the by_customer index), Entitlement for a customer.
// Their JSON is what inboxctl prints; see Snapshot and Entitlement. Eraser
// erases a customer's data.
//
// The mirror is the mirror table's one owner: no other package names one of
// its attributes or its index (a test scans the repository for them).
// Attribute values and the rule for large data are package ddbattr's.
package mirror

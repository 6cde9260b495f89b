// Package store keeps event records in DynamoDB and moves them through the
// status machine of package event with conditional writes.
//
// Every transition is conditioned on the state it starts from, so concurrent
// receivers, workers and reconcilers can race freely: exactly one of them wins
// each transition and the others learn what state they lost to, in the same
// call (ReturnValuesOnConditionCheckFailure=ALL_OLD).
//
// # Items
//
// An event is two items of the events table (docs/data-model.md describes
// them, their indexes and what each transition costs):
//
//   - its record (key "<provider>#<id>"): everything but the payload, a few
//     hundred bytes, so that every status transition rewrites less than
//     the 1 KB a write unit covers;
//   - its payload (key "payload#<provider>#<id>"): the raw body, deflated
//     against the provider's dictionary (ddbattr.PackWith), written once by
//     the receiver after the record, read by the processor after its
//     claim, kept for a shorter time (PayloadRetention) than the record,
//     which must outlive every delivery and reconciliation of the event.
//
// The record's indexes are keyed by values that never change (the day it
// was received, its object, its lane), project keys only or the type, and
// spread every key all events share over Shards values: the claim writes
// no index, and no key value receives more than a few hundred write units
// a second at 3,000 events a second. Readers of a sharded key (List, Stuck)
// read every shard and merge.
//
// The store is the events table's one owner: every read and write of it
// goes through this package, the reconciler's existence checks
// (Events.Existing), its stuck sweep (Events.Stuck), operators' listings
// (Events.List) and the reconciler's checkpoints (Checkpoints) included,
// so that no other package names one of the table's attributes or indexes
// or knows how a payload is stored (a test scans the repository for them).
// Attribute values and the rule for large payloads are package ddbattr's.
package store

// Package store keeps event records in DynamoDB and moves them through the
// status machine of package event with conditional writes.
//
// Every transition is conditioned on the state it starts from, so concurrent
// receivers, workers and reconcilers can race freely: exactly one of them wins
// each transition and the others learn what state they lost to, in the same
// call (ReturnValuesOnConditionCheckFailure=ALL_OLD).
//
// The store is the events table's one owner: every read and write of it
// goes through this package, the reconciler's existence checks
// (Events.Existing), its stuck sweep (Events.Stuck) and its checkpoints
// (Checkpoints) included, so that no other package names one of the
// table's attributes or indexes or knows how a payload is stored (a test
// scans the repository for them). Attribute values and the rule for large
// payloads are package ddbattr's.
package store

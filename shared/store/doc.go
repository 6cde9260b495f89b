// Package store keeps event records in DynamoDB and moves them through the
// status machine of package event with conditional writes.
//
// Every transition is conditioned on the state it starts from, so concurrent
// receivers, workers and reconcilers can race freely: exactly one of them wins
// each transition and the others learn what state they lost to, in the same
// call (ReturnValuesOnConditionCheckFailure=ALL_OLD).
package store

// Package ddbattr is how the inbox's tables put values into DynamoDB
// attributes and read them back: one set of helpers for package store (the
// events table) and package mirror (the mirror table), and one rule for
// large values.
//
// # Attribute values
//
// S, N, Bool, B, Millis and Strings build attribute values; GetS, GetN,
// GetBool, GetB, GetMillis and GetStrings read them from an item, the zero
// value when the attribute is absent or of another type (an item written
// before the attribute existed reads as its zero value). Times are Unix
// milliseconds in N.
//
// Items are built and read by hand with these helpers rather than by the
// SDK's feature/dynamodb/attributevalue, for two measured reasons and one
// of design:
//
//   - Linking attributevalue costs every function's cold start: it imports
//     the DynamoDB Streams schemas, whose package init allocates about
//     52 KB in 287 allocations (GODEBUG=inittrace=1), as much as a hello
//     world's whole init, in the receiver and the processor too, since both
//     link the store and the processor the mirror. The checkpoints and a
//     subscription's state on an entitlement, the items that map one to one
//     onto a struct and are written rarely, would be its only users.
//   - For the item written on every delivery (the receiver's conditional
//     put of a record), its reflection allocates about 1.7 times the bytes
//     in about the same time (BenchmarkNewItem in package store, one run);
//     when the record still carried the payload, which reflection copies,
//     it took three times as long.
//   - By hand, the attribute names are the owning package's constants, the
//     same ones its condition and update expressions use, where struct tags
//     would be a second spelling of each.
//
// Tests pin each item attribute for attribute (TestCheckpointItem in
// package store, TestEntryItem in package mirror), so that the items, and
// their billed sizes, change only on purpose.
//
// # Large values
//
// Pack, PackWith and Unpack are the one rule for a value that may be large
// (an event's raw payload, a snapshot's data): it is always stored
// compressed, because DynamoDB bills each write of an item per started KB
// of all of it: gzipped (Pack), or deflated against a preset dictionary of
// its vocabulary (PackWith and Dict: a provider's payloads, whose keys a
// dictionary holds, shrink by a further third), and when even so it is
// over MaxStored, it is not stored at all (the caller flags the item),
// because a DynamoDB item holds at most 400 KB with its other attributes.
// Unpack reads both, and inflates at most MaxInflated bytes, so a stored
// value that would inflate further (a gzip bomb) is an error of that item,
// not an out-of-memory crash of the function reading it. Items written
// before every value was compressed keep a flag saying which of their
// values are; their owners read both.
package ddbattr

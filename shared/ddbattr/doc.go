// Package ddbattr is how the inbox's tables put values into DynamoDB
// attributes and read them back: one set of helpers for package store (the
// events table) and package mirror (the mirror table), and one rule for
// large values.
//
// # Attribute values
//
// S, N, Bool, B and Millis build attribute values; GetS, GetN, GetBool, GetB
// and GetMillis read them from an item, the zero value when the attribute
// is absent or of another type (an item written before the attribute
// existed reads as its zero value). Times are Unix milliseconds in N.
//
// Items written on every delivery (the receiver's conditional put) and
// read on every claim are built by hand with these helpers rather than by
// the SDK's feature/dynamodb/attributevalue, for two reasons. Measured
// (BenchmarkNewItem in package store, one run): its reflection takes about
// three times as long for a new record's item and allocates about four
// times the bytes, because it copies the payload; a few microseconds of a
// delivery's compute, paid on every one. And by hand, the attribute names
// are the owning package's constants, the same ones its condition and
// update expressions use, where struct tags would be a second spelling of
// each. Items that are written rarely and map one to one onto a struct
// (the reconciler's checkpoints, a subscription's state on a customer's
// entitlement) use attributevalue.
//
// # Large values
//
// Pack and Unpack are the one rule for a value that may be large (an
// event's raw payload, a snapshot's data): up to CompressAbove bytes it is
// stored as it is; above, gzipped; and when even gzipped it is over
// MaxStored, it is not stored at all (the caller flags the item), because a
// DynamoDB item holds at most 400 KB with its other attributes. Unpack
// inflates at most MaxInflated bytes, so a stored value that would inflate
// further (a gzip bomb) is an error of that item, not an out-of-memory
// crash of the function reading it.
package ddbattr

// Package ingesttest holds in-memory stand-ins for the store and the queue
// an ingest.Ingester writes to, for the unit tests of the packages that
// ingest (ingest, receiver). Tests against real components use the emulator.
package ingesttest

import (
	"context"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Store answers Create with Err, else with Existing as a duplicate, else
// records the new record in Created. StorePayload records the record whose
// payload it stores in Payloads, or answers PayloadErr.
type Store struct {
	Existing   *event.Record
	Err        error
	Created    []event.Record
	PayloadErr error
	Payloads   []event.Record
}

// StorePayload implements ingest.Store.
func (f *Store) StorePayload(_ context.Context, r *event.Record) error {
	if f.PayloadErr != nil {
		return f.PayloadErr
	}
	f.Payloads = append(f.Payloads, *r)
	return nil
}

// Create implements ingest.Store.
func (f *Store) Create(_ context.Context, r *event.Record) (*event.Record, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	if f.Existing != nil {
		return f.Existing, nil
	}
	f.Created = append(f.Created, *r)
	return nil, nil
}

// Queue answers Send with Err, else records the pointer in Sent.
type Queue struct {
	Err  error
	Sent []event.Pointer
}

// Send implements ingest.Queue.
func (f *Queue) Send(_ context.Context, p event.Pointer) error {
	if f.Err != nil {
		return f.Err
	}
	f.Sent = append(f.Sent, p)
	return nil
}

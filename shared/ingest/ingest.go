// Package ingest is the one path by which an event enters the pipeline:
// a conditional put of its record, a put of its payload (an item of its
// own), then a pointer on the queue: three AWS calls for a new event, one
// for a duplicate of a settled record (processed, ignored). A duplicate
// of any other record stores its payload again, conditionally (a stored
// one stays), before it is answered: the record may have been stored
// without it and moved on since (event.Status.NeedsPayload). The receiver
// uses it for webhook deliveries and the reconciler for events it found
// missing, so both produce identical records and a late webhook for an event
// the reconciler already ingested is a plain duplicate.
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/outcome"
)

// Store creates event records; *store.Events implements it.
type Store interface {
	// Create stores a new record, then its payload; when a record with its
	// key exists, it returns it, and stores nothing.
	Create(ctx context.Context, r *event.Record) (existing *event.Record, err error)
	// StorePayload stores r's payload unless one is stored already.
	StorePayload(ctx context.Context, r *event.Record) error
}

// Queue sends pointers to the processor; *queue.Queue implements it.
type Queue interface {
	Send(ctx context.Context, p event.Pointer) error
}

// Errors of Ingest. Both mean the event is not safely in the pipeline yet and
// the sender must retry: a receiver answers them with 5xx, never 2xx.
var (
	ErrPersist = errors.New("ingest: event not persisted")
	ErrEnqueue = errors.New("ingest: event persisted but not enqueued")
)

// Result is what Ingest did with one event.
type Result struct {
	// Outcome is outcome.Stored, Ignored, Duplicate or Requeued.
	Outcome outcome.Outcome
	// Record is the stored record: the new one, or the existing one for
	// outcome.Duplicate and outcome.Requeued.
	Record event.Record
	// HashConflict is set when a record with the same id, from the same
	// source, exists with a different payload. The original is kept.
	HashConflict bool
}

// Ingester puts events into the pipeline.
type Ingester struct {
	Store    Store
	Queue    Queue
	Provider string
	// Handled reports whether the processor handles an event type; others
	// are recorded as ignored. Nil handles every type.
	Handled func(eventType string) bool
	Now     func() time.Time
}

// Ingest stores the event env, whose raw body is payload, and enqueues it
// when it needs processing. Duplicates are decided by the stored record's
// status, never by its mere existence.
func (in *Ingester) Ingest(ctx context.Context, env event.Envelope, payload []byte, source event.Source) (Result, error) {
	hash := Hash(payload)
	status := event.StatusReceived
	if in.Handled != nil && !in.Handled(env.Type) {
		status = event.StatusIgnored
	}
	rec := event.NewRecord(in.Provider, env, payload, hash, source, status, in.now())
	if status == event.StatusIgnored {
		rec.Outcome = outcome.Ignored
	}
	existing, err := in.Store.Create(ctx, &rec)
	if err != nil {
		return Result{Record: rec}, fmt.Errorf("%w: %w", ErrPersist, err)
	}
	if existing == nil {
		if status == event.StatusIgnored {
			return Result{Outcome: outcome.Ignored, Record: rec}, nil
		}
		if err := in.Queue.Send(ctx, event.PointerTo(rec)); err != nil {
			// The record stays received: the sender's retry, or the
			// reconciler, finds it and enqueues it again.
			return Result{Outcome: outcome.Stored, Record: rec}, fmt.Errorf("%w: %w", ErrEnqueue, err)
		}
		return Result{Outcome: outcome.Stored, Record: rec}, nil
	}
	// The API's copy of an event (the reconciler's) is not byte-equal to the
	// webhook's, so only a difference within one source is a conflict.
	conflict := existing.PayloadHash != hash && existing.Source == source
	res := Result{Outcome: outcome.Duplicate, Record: *existing, HashConflict: conflict}
	if existing.Status.NeedsPayload() && !existing.PayloadOmitted && !existing.PayloadErased && !conflict {
		// The record may have been stored without its payload (its
		// payload's put failed, or its writer died between the two puts:
		// Store.Create), and moved on since, whatever its status now.
		// This delivery brings it; a payload already there stays. Until it
		// is stored, the sender is not answered 2xx.
		if err := in.Store.StorePayload(ctx, &rec); err != nil {
			return res, fmt.Errorf("%w: %w", ErrPersist, err)
		}
	}
	if !existing.Status.NeedsEnqueue() {
		return res, nil
	}
	res.Outcome = outcome.Requeued
	if err := in.Queue.Send(ctx, event.PointerTo(*existing)); err != nil {
		return res, fmt.Errorf("%w: %w", ErrEnqueue, err)
	}
	return res, nil
}

func (in *Ingester) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

// Hash returns the payload hash Ingest stores.
func Hash(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

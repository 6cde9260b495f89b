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
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
)

// Store creates event records; *store.Events implements it.
type Store interface {
	// Create stores a new record, then its payload; when a record with its
	// key exists, it returns it, and stores nothing.
	Create(ctx context.Context, r *event.Record) (existing *event.Record, err error)
	// StorePayload stores r's payload unless one is stored already.
	StorePayload(ctx context.Context, r *event.Record) error
}

// Accounts remembers the connected accounts events are stored of, for the
// reconciler to list; *store.Accounts implements it.
type Accounts interface {
	Record(ctx context.Context, provider, account string) error
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
	// AccountErr is set when the event's connected account could not be
	// recorded (Ingester.Accounts). The event is in the pipeline all the
	// same; the next event of the account records it again.
	AccountErr error
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
	// Accounts, when set, is told each connected account (Stripe
	// Connect) an event is stored of, the first time this process sees
	// it: one write per account and container, never one per event.
	// Copies of an Ingester share it.
	Accounts *AccountRecorder
}

// AccountRecorder records each connected account once per process.
type AccountRecorder struct {
	Store Accounts

	mu   sync.Mutex
	done map[[2]string]bool
}

// Record records provider's account unless this recorder did already. A
// failure is returned and not remembered, so the account's next event
// tries again.
func (a *AccountRecorder) Record(ctx context.Context, provider, account string) error {
	k := [2]string{provider, account}
	a.mu.Lock()
	done := a.done[k]
	a.mu.Unlock()
	if done {
		return nil
	}
	if err := a.Store.Record(ctx, provider, account); err != nil {
		return fmt.Errorf("ingest: account %s: %w", account, err)
	}
	a.mu.Lock()
	if a.done == nil {
		a.done = map[[2]string]bool{}
	}
	a.done[k] = true
	a.mu.Unlock()
	return nil
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
	res, err := in.store(ctx, rec, existing, hash, source)
	// After the record is stored, whatever became of the rest: an event
	// whose queue write failed is still the account's.
	res.AccountErr = in.recordAccount(ctx, env.Account)
	return res, err
}

func (in *Ingester) store(ctx context.Context, rec event.Record, existing *event.Record, hash string, source event.Source) (Result, error) {
	status := rec.Status
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

// recordAccount records the event's connected account. A failure never
// fails the event, which is stored already.
func (in *Ingester) recordAccount(ctx context.Context, account string) error {
	if in.Accounts == nil || account == "" {
		return nil
	}
	return in.Accounts.Record(ctx, in.Provider, account)
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

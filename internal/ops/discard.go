package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// What a discard did about one event (DiscardResult.Action).
const (
	DiscardDiscarded = "discarded"
	DiscardNotFound  = "not_found"  // no record
	DiscardNoMessage = "no_message" // nothing in the DLQ points to it
	DiscardError     = "error"
)

// DiscardResult is what a discard did about one event.
type DiscardResult struct {
	ID string
	// Provider is the provider whose event it is, when its record was
	// found.
	Provider string
	// Status is the record's status before the discard, StatusAfter after
	// it (dead_lettered for a record that was still pending).
	Status, StatusAfter string
	// Action is one of the Discard constants.
	Action   string
	Messages int
	Detail   string
}

// Discard removes the messages that point to each of ids from the
// dead-letter queue, for events nobody should process again, recording
// reason on each event's record first: a discard is never silent. A record
// still pending becomes dead_lettered, so the reconciler's stuck sweep
// does not send it through again (store.Events.Discard); it stays
// replayable.
//
// An id is looked up under provider, or, when provider is empty, under
// every provider the tables hold (event.Providers): the id of one
// provider's event. An id stored under several is refused until provider
// names one, and only that provider's messages are deleted. An id with no
// record is refused (there is nothing to record the decision on), as is
// one no message points to; either leaves the queue as it was.
//
// The error is for a discard that could not run (the table unreadable, the
// queue unreachable); what happened to each event is in its result.
func (s *Stack) Discard(ctx context.Context, provider string, ids []string, reason string) ([]DiscardResult, error) {
	results := []DiscardResult{}
	// The record first: with none, there is nothing to record the
	// decision on, and the message is left alone.
	var wanted []DiscardResult
	for _, id := range ids {
		r, err := s.discardTarget(ctx, provider, id)
		if err != nil {
			return nil, err
		}
		if r.Action != "" {
			results = append(results, r)
			continue
		}
		wanted = append(wanted, r)
	}
	if len(wanted) == 0 {
		return results, nil
	}
	keys := make([]string, len(wanted))
	for i, r := range wanted {
		keys[i] = eventKey(r.Provider, r.ID)
	}
	f, err := s.findMessages(ctx, keys, eventKeyOf)
	// Visible again whatever happens next, even after Ctrl-C; the messages
	// deleted below are taken out of the list first.
	defer func() { s.releaseFound(ctx, f) }()
	if err != nil {
		return nil, err
	}
	for _, r := range wanted {
		results = append(results, s.discardOne(ctx, f, r, reason))
	}
	return results, nil
}

// discardTarget reads the record of id: a result with Provider and Status
// set and no Action when there is one to discard, a refusal otherwise.
func (s *Stack) discardTarget(ctx context.Context, provider, id string) (DiscardResult, error) {
	providers := event.Providers
	if provider != "" {
		providers = []string{provider}
	}
	var recs []event.Record
	for _, p := range providers {
		rec, err := s.Events.Get(ctx, p, id)
		var pe *store.PayloadError
		if errors.As(err, &pe) {
			rec, err = pe.Record, nil // the decision needs no payload
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return DiscardResult{}, s.explain(s.Events.Table, err)
		default:
			recs = append(recs, rec)
		}
	}
	switch len(recs) {
	case 0:
		return DiscardResult{ID: id, Action: DiscardNotFound,
			Detail: "no record (expired by its TTL?): nothing to record the discard on; `inboxctl dlq redrive --event " + id +
				"` instead, which the processor acknowledges as missing"}, nil
	case 1:
		return DiscardResult{ID: id, Provider: recs[0].Provider, Status: string(recs[0].Status)}, nil
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Provider)
	}
	return DiscardResult{ID: id, Action: DiscardError,
		Detail: fmt.Sprintf("%d providers have an event %s (%s): name one with --provider; nothing changed", len(recs), id, strings.Join(names, ", "))}, nil
}

// discardOne records the discard of r's event, then deletes its messages
// of f.
func (s *Stack) discardOne(ctx context.Context, f *found, r DiscardResult, reason string) DiscardResult {
	key := eventKey(r.Provider, r.ID)
	msgs := f.byKey[key]
	if len(msgs) == 0 {
		r.Action, r.Detail = DiscardNoMessage, "nothing in the dead-letter queue points to it; nothing changed"
		return r
	}
	rec, err := s.Events.Discard(ctx, r.Provider, r.ID, reason, s.now())
	if err != nil {
		r.Action, r.Detail = DiscardError, fmt.Sprintf("record the discard: %v; the message was left in the dead-letter queue", err)
		return r
	}
	r.StatusAfter = string(rec.Status)
	n, err := s.deleteMessages(ctx, msgs)
	r.Messages = n
	if err != nil {
		r.Action, r.Detail = DiscardError, fmt.Sprintf("recorded on the event, but %v: run the discard again", err)
		return r
	}
	delete(f.byKey, key) // deleted: nothing to release
	r.Action, r.Detail = DiscardDiscarded, fmt.Sprintf("%d message(s) deleted from the dead-letter queue; the reason is on the event's record", n)
	return r
}

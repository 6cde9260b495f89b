package ingest

import (
	"context"
	"errors"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/ingest/ingesttest"
	"github.com/webhook-inbox/webhook-inbox/shared/outcome"
)

func TestIngest(t *testing.T) {
	payload := []byte(`{"id":"evt_1"}`)
	env := event.Envelope{ID: "evt_1", Type: "invoice.paid", Created: 7, ObjectID: "in_1"}
	existing := func(st event.Status, hash string) *event.Record {
		return &event.Record{Provider: "stripe", ID: "evt_1", Type: "invoice.paid", Created: 7, ObjectID: "in_1", Status: st, PayloadHash: hash, Source: event.SourceWebhook}
	}
	same := Hash(payload)
	tests := []struct {
		name         string
		eventType    string
		existing     *event.Record
		storeErr     error
		queueErr     error
		wantOutcome  outcome.Outcome
		wantErr      error
		wantSent     int
		wantConflict bool
	}{
		{name: "new event is stored and enqueued", wantOutcome: outcome.Stored, wantSent: 1},
		{name: "type outside the allowlist is recorded as ignored", eventType: "charge.refunded", wantOutcome: outcome.Ignored},
		{name: "duplicate of processed", existing: existing(event.StatusProcessed, same), wantOutcome: outcome.Duplicate},
		{name: "duplicate of ignored", existing: existing(event.StatusIgnored, same), wantOutcome: outcome.Duplicate},
		{name: "duplicate while processing", existing: existing(event.StatusProcessing, same), wantOutcome: outcome.Duplicate},
		{name: "duplicate of dead-lettered", existing: existing(event.StatusDeadLettered, same), wantOutcome: outcome.Duplicate},
		{name: "received: the earlier enqueue may have failed, so enqueue again", existing: existing(event.StatusReceived, same), wantOutcome: outcome.Requeued, wantSent: 1},
		{name: "failed: enqueue again", existing: existing(event.StatusFailed, same), wantOutcome: outcome.Requeued, wantSent: 1},
		{name: "same id, other payload: original kept, conflict flagged", existing: existing(event.StatusProcessed, "other"), wantOutcome: outcome.Duplicate, wantConflict: true},
		{name: "reconciler's copy differs from the webhook's: not a conflict", existing: func() *event.Record {
			r := existing(event.StatusProcessed, "api-copy")
			r.Source = event.SourceReconciler
			return r
		}(), wantOutcome: outcome.Duplicate},
		{name: "store down", storeErr: errors.New("dynamodb unavailable"), wantErr: ErrPersist},
		{name: "queue down after the put", queueErr: errors.New("sqs unavailable"), wantOutcome: outcome.Stored, wantErr: ErrEnqueue},
		{name: "queue down when requeueing", existing: existing(event.StatusReceived, same), queueErr: errors.New("sqs unavailable"), wantOutcome: outcome.Requeued, wantErr: ErrEnqueue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &ingesttest.Store{Existing: tc.existing, Err: tc.storeErr}
			q := &ingesttest.Queue{Err: tc.queueErr}
			in := &Ingester{Store: st, Queue: q, Provider: "stripe", Handled: func(t string) bool { return t == "invoice.paid" }}
			e := env
			if tc.eventType != "" {
				e.Type = tc.eventType
			}
			res, err := in.Ingest(context.Background(), e, payload, event.SourceWebhook)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error: got %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == ErrPersist {
				return
			}
			if res.Outcome != tc.wantOutcome {
				t.Errorf("outcome: got %s, want %s", res.Outcome, tc.wantOutcome)
			}
			if len(q.Sent) != tc.wantSent {
				t.Errorf("sent: got %d, want %d", len(q.Sent), tc.wantSent)
			}
			if res.HashConflict != tc.wantConflict {
				t.Errorf("conflict: got %v, want %v", res.HashConflict, tc.wantConflict)
			}
			if tc.wantSent == 1 && len(q.Sent) == 1 {
				if p := q.Sent[0]; p.ID != "evt_1" || p.ObjectID != "in_1" || p.Type != "invoice.paid" || p.Provider != "stripe" {
					t.Errorf("pointer: got %+v", p)
				}
			}
			if tc.existing == nil && len(st.Created) == 1 {
				got := st.Created[0]
				wantStatus := event.StatusReceived
				if tc.wantOutcome == outcome.Ignored {
					wantStatus = event.StatusIgnored
				}
				if got.Status != wantStatus || got.Source != event.SourceWebhook || got.PayloadHash != same {
					t.Errorf("created record: got status %s source %s hash %s", got.Status, got.Source, got.PayloadHash)
				}
			}
		})
	}
}

// TestAReceivedDuplicateStoresThePayloadBeforeEnqueueing: a record still
// received may have been stored without its payload (its writer died
// between the two puts), so the delivery that finds it stores the payload
// (a stored one stays) before sending the pointer; when that fails, nothing
// is sent and the sender must retry. Records in other statuses, and a
// conflicting payload, are left alone.
func TestAReceivedDuplicateStoresThePayloadBeforeEnqueueing(t *testing.T) {
	payload := []byte(`{"id":"evt_1"}`)
	env := event.Envelope{ID: "evt_1", Type: "invoice.paid", Created: 7, ObjectID: "in_1"}
	existing := func(st event.Status, hash string) *event.Record {
		return &event.Record{Provider: "stripe", ID: "evt_1", Type: "invoice.paid", Status: st, PayloadHash: hash, Source: event.SourceWebhook}
	}
	tests := []struct {
		name         string
		existing     *event.Record
		payloadErr   error
		wantPayloads int
		wantSent     int
		wantErr      error
	}{
		{name: "received: payload, then pointer", existing: existing(event.StatusReceived, Hash(payload)), wantPayloads: 1, wantSent: 1},
		{name: "received, the payload's put fails: no pointer", existing: existing(event.StatusReceived, Hash(payload)), payloadErr: errors.New("throttled"), wantErr: ErrPersist},
		{name: "failed: it was claimed, so its payload is there", existing: existing(event.StatusFailed, Hash(payload)), wantSent: 1},
		{name: "received with another payload of the same source: the original's stays", existing: existing(event.StatusReceived, "other"), wantSent: 1},
		{name: "processed", existing: existing(event.StatusProcessed, Hash(payload))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &ingesttest.Store{Existing: tc.existing, PayloadErr: tc.payloadErr}
			q := &ingesttest.Queue{}
			in := &Ingester{Store: st, Queue: q, Provider: "stripe"}
			_, err := in.Ingest(context.Background(), env, payload, event.SourceWebhook)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error: got %v, want %v", err, tc.wantErr)
			}
			if len(st.Payloads) != tc.wantPayloads || len(q.Sent) != tc.wantSent {
				t.Errorf("got %d payloads stored and %d pointers sent, want %d and %d", len(st.Payloads), len(q.Sent), tc.wantPayloads, tc.wantSent)
			}
			if len(st.Payloads) == 1 && string(st.Payloads[0].Payload) != string(payload) {
				t.Errorf("stored payload %q, want this delivery's", st.Payloads[0].Payload)
			}
		})
	}
}

package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/ingesttest"
)

func TestIngest(t *testing.T) {
	payload := []byte(`{"id":"evt_1"}`)
	env := event.Envelope{ID: "evt_1", Type: "invoice.paid", Created: 7, ObjectID: "in_1"}
	existing := func(st event.Status, hash string) *event.Record {
		return &event.Record{
			Provider:    "stripe",
			ID:          "evt_1",
			Type:        "invoice.paid",
			Created:     7,
			ObjectID:    "in_1",
			Status:      st,
			PayloadHash: hash,
			Source:      event.SourceWebhook,
		}
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
		{
			name:        "received: the earlier enqueue may have failed, so enqueue again",
			existing:    existing(event.StatusReceived, same),
			wantOutcome: outcome.Requeued,
			wantSent:    1,
		},
		{name: "failed: enqueue again", existing: existing(event.StatusFailed, same), wantOutcome: outcome.Requeued, wantSent: 1},
		{
			name:         "same id, other payload: original kept, conflict flagged",
			existing:     existing(event.StatusProcessed, "other"),
			wantOutcome:  outcome.Duplicate,
			wantConflict: true,
		},
		{name: "reconciler's copy differs from the webhook's: not a conflict", existing: func() *event.Record {
			r := existing(event.StatusProcessed, "api-copy")
			r.Source = event.SourceReconciler
			return r
		}(), wantOutcome: outcome.Duplicate},
		{name: "store down", storeErr: errors.New("dynamodb unavailable"), wantErr: ErrPersist},
		{name: "queue down after the put", queueErr: errors.New("sqs unavailable"), wantOutcome: outcome.Stored, wantErr: ErrEnqueue},
		{
			name:        "queue down when requeueing",
			existing:    existing(event.StatusReceived, same),
			queueErr:    errors.New("sqs unavailable"),
			wantOutcome: outcome.Requeued,
			wantErr:     ErrEnqueue,
		},
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

// TestARetryStoresThePayloadWhateverTheRecordsStatus: a record may have
// been stored without its payload (its writer's payload put failed, or
// it died between the two puts), and the stuck sweep may have sent it to
// the processor meanwhile, which moves it on (failed, processing,
// dead_lettered) without ever reading a payload. So the retry of the
// delivery that finds a record, in whatever status it is, stores the
// payload (the put is conditional: a payload already there stays) before
// it answers or enqueues, unless the record is settled (processed,
// ignored) or its payload can never be stored (omitted, erased); when
// the payload's put fails, nothing is sent and the sender must retry.
// Every status a record can be in is tried.
func TestARetryStoresThePayloadWhateverTheRecordsStatus(t *testing.T) {
	payload := []byte(`{"id":"evt_1"}`)
	env := event.Envelope{ID: "evt_1", Type: "invoice.paid", Created: 7, ObjectID: "in_1"}
	existing := func(st event.Status, hash string) *event.Record {
		return &event.Record{Provider: "stripe", ID: "evt_1", Type: "invoice.paid", Status: st, PayloadHash: hash, Source: event.SourceWebhook}
	}
	wantPayload := map[event.Status]bool{
		event.StatusReceived: true, event.StatusProcessing: true, event.StatusFailed: true,
		event.StatusFailedPermanent: true, event.StatusDeadLettered: true,
		event.StatusProcessed: false, event.StatusIgnored: false,
	}
	wantSent := map[event.Status]bool{event.StatusReceived: true, event.StatusFailed: true}
	if len(wantPayload) != len(event.Statuses) {
		t.Fatalf("the test names %d statuses, event.Statuses has %d: say what a retry does for each", len(wantPayload), len(event.Statuses))
	}
	for _, st := range event.Statuses {
		t.Run(string(st), func(t *testing.T) {
			st2 := &ingesttest.Store{Existing: existing(st, Hash(payload))}
			q := &ingesttest.Queue{}
			in := &Ingester{Store: st2, Queue: q, Provider: "stripe"}
			if _, err := in.Ingest(context.Background(), env, payload, event.SourceWebhook); err != nil {
				t.Fatal(err)
			}
			if got := len(st2.Payloads) == 1; got != wantPayload[st] {
				t.Errorf("payload stored: got %t, want %t", got, wantPayload[st])
			}
			if got := len(q.Sent) == 1; got != wantSent[st] {
				t.Errorf("pointer sent: got %t, want %t", got, wantSent[st])
			}
			if len(st2.Payloads) == 1 && string(st2.Payloads[0].Payload) != string(payload) {
				t.Errorf("stored payload %q, want this delivery's", st2.Payloads[0].Payload)
			}
			if !wantPayload[st] {
				return
			}
			// The payload's put fails: no answer of success, nothing sent.
			st3 := &ingesttest.Store{Existing: existing(st, Hash(payload)), PayloadErr: errors.New("throttled")}
			q3 := &ingesttest.Queue{}
			in = &Ingester{Store: st3, Queue: q3, Provider: "stripe"}
			if _, err := in.Ingest(context.Background(), env, payload, event.SourceWebhook); !errors.Is(err, ErrPersist) {
				t.Errorf("the payload's put failed: got error %v, want ErrPersist", err)
			}
			if len(q3.Sent) != 0 {
				t.Errorf("the payload's put failed, and %d pointers were sent", len(q3.Sent))
			}
		})
	}
}

// TestARetryLeavesAPayloadItCannotStoreAlone: a conflicting payload (same
// id and source, other bytes), one too large to store (omitted) or one an
// operator erased is not stored by a retry.
func TestARetryLeavesAPayloadItCannotStoreAlone(t *testing.T) {
	payload := []byte(`{"id":"evt_1"}`)
	env := event.Envelope{ID: "evt_1", Type: "invoice.paid", Created: 7, ObjectID: "in_1"}
	for _, tc := range []struct {
		name     string
		existing event.Record
		wantSent int
	}{
		{name: "received with another payload of the same source: the original's stays", existing: event.Record{Status: event.StatusReceived, PayloadHash: "other"}, wantSent: 1},
		{name: "failed, its payload too large to store", existing: event.Record{Status: event.StatusFailed, PayloadHash: Hash(payload), PayloadOmitted: true}, wantSent: 1},
		{name: "dead_lettered, its payload erased", existing: event.Record{Status: event.StatusDeadLettered, PayloadHash: Hash(payload), PayloadErased: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.existing
			r.Provider, r.ID, r.Type, r.Source = "stripe", "evt_1", "invoice.paid", event.SourceWebhook
			st := &ingesttest.Store{Existing: &r}
			q := &ingesttest.Queue{}
			in := &Ingester{Store: st, Queue: q, Provider: "stripe"}
			if _, err := in.Ingest(context.Background(), env, payload, event.SourceWebhook); err != nil {
				t.Fatal(err)
			}
			if len(st.Payloads) != 0 || len(q.Sent) != tc.wantSent {
				t.Errorf("got %d payloads stored and %d pointers sent, want 0 and %d", len(st.Payloads), len(q.Sent), tc.wantSent)
			}
		})
	}
}

// accountsFake records Record calls and answers them with err.
type accountsFake struct {
	calls []string
	err   error
}

func (f *accountsFake) Record(_ context.Context, provider, account string) error {
	f.calls = append(f.calls, provider+"/"+account)
	return f.err
}

// TestIngestRecordsEachAccountOnce: an account is written once per
// process, however many events it sends, and an event of the platform
// (no account) writes nothing; a failed write fails no event, and the
// account's next event writes it again.
func TestIngestRecordsEachAccountOnce(t *testing.T) {
	ctx := context.Background()
	acc := &accountsFake{err: errors.New("dynamodb unavailable")}
	st, q := &ingesttest.Store{}, &ingesttest.Queue{}
	rec := &AccountRecorder{Store: acc}
	in := &Ingester{Store: st, Queue: q, Provider: "stripe", Accounts: rec}
	copied := *in // the receiver's providers each take a copy
	ingestOf := func(in *Ingester, id, account string) Result {
		t.Helper()
		res, err := in.Ingest(ctx, event.Envelope{ID: id, Type: "invoice.paid", Account: account}, []byte(`{"id":"`+id+`"}`), event.SourceWebhook)
		if err != nil || res.Outcome != outcome.Stored {
			t.Fatalf("%s: got %s, %v; want stored", id, res.Outcome, err)
		}
		return res
	}
	if res := ingestOf(in, "evt_1", "acct_a"); res.AccountErr == nil {
		t.Fatal("failed write: got no AccountErr, want one")
	}
	acc.err = nil
	for i, a := range []string{"acct_a", "acct_a", "", "acct_b"} {
		if res := ingestOf(in, fmt.Sprintf("evt_%d", i+2), a); res.AccountErr != nil {
			t.Fatalf("event %d: %v", i+2, res.AccountErr)
		}
	}
	ingestOf(&copied, "evt_9", "acct_b")
	if want := []string{"stripe/acct_a", "stripe/acct_a", "stripe/acct_b"}; !slices.Equal(acc.calls, want) {
		t.Errorf("writes: got %v, want %v", acc.calls, want)
	}
	if len(st.Created) != 6 || len(q.Sent) != 6 {
		t.Errorf("got %d stored, %d sent; want every event's 6", len(st.Created), len(q.Sent))
	}
}

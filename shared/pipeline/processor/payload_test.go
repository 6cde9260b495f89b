package processor_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// recordOnly stores records and loses every other put: a receiver that
// died between a record and its payload.
type recordOnly struct {
	store.DynamoDB
	puts int
}

func (r *recordOnly) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.puts++
	if r.puts%2 == 0 {
		return nil, errors.New("the receiver died here")
	}
	return r.DynamoDB.PutItem(ctx, in, opts...)
}

// TestARecordWithoutItsPayloadIsReadFromTheProviderOrRetried: a record
// whose payload item was never written (its receiver died between the two
// puts, and the stuck sweep sent its pointer) is processed from the
// provider's copy of the event when an API key is configured; without one
// it fails retryably, with an error that says why, and is processed once
// the sender's retry stores the payload.
func TestARecordWithoutItsPayloadIsReadFromTheProviderOrRetried(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	half := &store.Events{DB: &recordOnly{DynamoDB: e.stack.DynamoDB}, Table: e.events.Table}
	create := func(body []byte) event.Record {
		t.Helper()
		envl, err := event.DecodeEnvelope(body)
		if err != nil {
			t.Fatal(err)
		}
		r := event.NewRecord(event.ProviderStripe, envl, body, ingest.Hash(body), event.SourceWebhook, event.StatusReceived, time.Now())
		if _, err := half.Create(ctx, &r); err == nil {
			t.Fatal("Create: got nil error, want the lost payload put")
		}
		if got := e.record(t, r.ID); got.Status != event.StatusReceived || got.PayloadOmitted || got.Payload != nil {
			t.Fatalf("record: %+v, want received, without a payload, not omitted", got)
		}
		return r
	}

	body := build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_half", Customer: "cus_half", Status: "past_due"})
	fetched := create(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	c := processorboot.Defaults()
	c.EventsTable, c.MirrorTable, c.QueueURL, c.MaxReceiveCount = e.events.Table, e.stack.Table("MirrorTable"), e.queue, 5
	c.APIKey, c.APIBase = secrets.Fixed("the test's key", "rk_test_fetch"), srv.URL
	p, err := processorboot.New(ctx, c, e.stack.AWS, slog.New(slog.NewJSONHandler(e.logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := p.Handle(ctx, batch(message(fetched, 1))); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle with an API key: %v %+v; want it acknowledged", err, resp)
	}
	if r := e.record(t, fetched.ID); r.Status != event.StatusProcessed || r.Outcome != outcome.Applied {
		t.Errorf("with an API key: %s %s, want processed from the provider's copy", r.Status, r.Outcome)
	}
	if snap, err := e.reader.Object(ctx, "sub_half"); err != nil || !strings.Contains(string(snap.Data), `"status":"past_due"`) {
		t.Errorf("snapshot: %.80s, %v; want the provider's copy applied", snap.Data, err)
	}

	waiting := create(build(t, "invoice.paid", stripefixture.Options{ObjectID: "in_half", Customer: "cus_half"}))
	noKey := e.processor(t, nil)
	resp, err := noKey.Handle(ctx, batch(message(waiting, 1)))
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("Handle without an API key: %v %+v; want the message retried", err, resp)
	}
	if r := e.record(t, waiting.ID); r.Status != event.StatusFailed || !strings.Contains(r.LastError, "not stored") {
		t.Errorf("without an API key: %s %q; want failed (retryable), saying the payload is not stored", r.Status, r.LastError)
	}
	if err := e.events.StorePayload(ctx, &waiting); err != nil { // the sender's retry
		t.Fatal(err)
	}
	if resp, err := noKey.Handle(ctx, batch(message(waiting, 2))); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle once the payload is stored: %v %+v", err, resp)
	}
	if r := e.record(t, waiting.ID); r.Status != event.StatusProcessed {
		t.Errorf("once its payload is stored: %s, want processed", r.Status)
	}
}

package processor_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

// callCounter counts the DynamoDB requests a client sends, by operation,
// retries included: it sits after the SDK's retry middleware.
type callCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) client(e *env) *dynamodb.Client {
	return dynamodb.NewFromConfig(e.stack.AWS, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc(
				"CountCalls",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					c.mu.Lock()
					c.calls[awsmiddleware.GetOperationName(ctx)]++
					c.mu.Unlock()
					return next.HandleFinalize(ctx, in)
				},
			), middleware.After)
		})
	})
}

// take returns the counts so far and starts again.
func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.calls
	c.calls = map[string]int{}
	return got
}

func TestDynamoDBCallsPerEvent(t *testing.T) {
	e := newEnv(t, nil)
	counter := &callCounter{calls: map[string]int{}}
	p := e.processor(t, counter.client(e))
	ctx := context.Background()

	const n = 10
	var recs []event.Record
	for i := range n {
		recs = append(recs, e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
			ObjectID: fmt.Sprintf("sub_calls_%d", i), Customer: fmt.Sprintf("cus_calls_%d", i), Created: 1700000100,
		})))
	}
	var msgs = batch()
	for _, r := range recs {
		msgs.Records = append(msgs.Records, message(r, 1))
	}
	counter.take()

	steps := []struct {
		name string
		run  func()
		want map[string]int
	}{
		{"happy path: claim, the payload's item, then one transaction", func() { p.Handle(ctx, msgs) },
			map[string]int{"GetItem": n, "UpdateItem": n, "TransactWriteItems": n}},
		{"duplicates: the failed claim only", func() { p.Handle(ctx, msgs) },
			map[string]int{"UpdateItem": n}},
		{"superseded: claim, the payload's item, the cancelled transaction, the transaction without the snapshot", func() {
			old := e.store(
				t,
				build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_calls_0", Customer: "cus_calls_0", Created: 1700000000}),
			)
			counter.take()
			p.Handle(ctx, batch(message(old, 1)))
		}, map[string]int{"GetItem": 1, "UpdateItem": 1, "TransactWriteItems": 2}},
	}
	for _, st := range steps {
		st.run()
		if got := counter.take(); fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("%s: DynamoDB calls %v, want %v", st.name, got, st.want)
		}
	}
	for _, r := range recs {
		if got := e.record(t, r.ID); got.Status != event.StatusProcessed {
			t.Errorf("%s: %s, want processed", r.ID, got.Status)
		}
	}
}

// TestOmittedPayloadIsFetchedFromStripe wires the processor as Lambda does
// (boot, from the environment) with STRIPE_API_BASE pointing at a local
// stand-in for Stripe's Events API.
func TestOmittedPayloadIsFetchedFromStripe(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	body := build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_big", Customer: "cus_big", Status: "past_due"})
	envl, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/events/"+envl.ID {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such event"}}`))
			return
		}
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
	omitted := func(envl event.Envelope) event.Record {
		r := event.NewRecord(event.ProviderStripe, envl, nil, ingest.Hash(body), event.SourceWebhook, event.StatusReceived, time.Now())
		r.PayloadOmitted = true
		if _, err := e.events.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	found := omitted(envl)
	gone := omitted(event.Envelope{ID: "evt_past_retention", Type: "invoice.paid", Created: 1600000000, ObjectID: "in_old"})

	resp, err := p.Handle(ctx, batch(message(found, 1), message(gone, 1)))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %v %+v; want both acknowledged", err, resp)
	}
	mu.Lock()
	if len(requests) != 2 || !strings.HasSuffix(requests[0], " Bearer rk_test_fetch") {
		t.Errorf("requests to the Events API: %q; want one GET per event with the API key", requests)
	}
	mu.Unlock()
	if r := e.record(t, found.ID); r.Status != event.StatusProcessed || r.Outcome != outcome.Applied {
		t.Errorf("fetched event: %s %s, want processed, applied", r.Status, r.Outcome)
	}
	snap, err := e.reader.Object(ctx, "sub_big")
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastEventID != envl.ID || !strings.Contains(string(snap.Data), `"status":"past_due"`) {
		t.Errorf("snapshot: from %s, data %.80s...; want the fetched event's", snap.LastEventID, snap.Data)
	}
	if r := e.record(t, gone.ID); r.Status != event.StatusFailedPermanent || !strings.Contains(r.LastError, "404") {
		t.Errorf("event Stripe no longer has: %s %q; want failed_permanent with the 404", r.Status, r.LastError)
	}

	// Without an API key, such an event can never be processed.
	noKey := omitted(event.Envelope{ID: "evt_no_key", Type: "invoice.paid", Created: 1700000000, ObjectID: "in_no_key"})
	if _, err := e.processor(t, nil).Handle(ctx, batch(message(noKey, 1))); err != nil {
		t.Fatal(err)
	}
	if r := e.record(t, noKey.ID); r.Status != event.StatusFailedPermanent {
		t.Errorf("without an API key: %s, want failed_permanent", r.Status)
	}
}

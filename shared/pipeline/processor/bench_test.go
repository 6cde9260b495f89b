package processor_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// recorder forwards to DynamoDB and keeps the write requests it sent, by
// event record key, in order.
type recorder struct {
	store.DynamoDB
	mu    sync.Mutex
	calls map[string][]any
}

func (r *recorder) add(key string, in any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[key] = append(r.calls[key], in)
}

func (r *recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.add(fmt.Sprint(in.Key["pk"]), in)
	return r.DynamoDB.UpdateItem(ctx, in, optFns...)
}

func (r *recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	// A read of the payload's item: its own key, replayed on its own.
	r.add(fmt.Sprint(in.Key["pk"]), in)
	return r.DynamoDB.GetItem(ctx, in, optFns...)
}

func (r *recorder) TransactWriteItems(
	ctx context.Context,
	in *dynamodb.TransactWriteItemsInput,
	optFns ...func(*dynamodb.Options),
) (*dynamodb.TransactWriteItemsOutput, error) {
	// The store puts the event record's own update last.
	r.add(fmt.Sprint(in.TransactItems[len(in.TransactItems)-1].Update.Key["pk"]), in)
	return r.DynamoDB.TransactWriteItems(ctx, in, optFns...)
}

// BenchmarkProcessor measures events per second through the processor (claim,
// payload read, plan, commit: the happy path) against the emulator, beside the emulator's
// own rate for the same DynamoDB requests sent raw, in the same run: each
// batch is processed by the processor on one stack while its requests are
// recorded, then the recorded requests are replayed, with the same
// concurrency, on a second stack holding identical records. ns/op is the
// processor's time per event; processor/raw is the ratio of the two rates
// (1 means the processor adds nothing to the cost of its DynamoDB calls).
//
// moto copies every table a transaction touches, so its cost grows with the
// tables: both stacks are replaced every 50 events (untimed), which keeps
// the figures independent of -benchtime. The emulator is slow, so pass a
// fixed count for stable figures:
//
//	go run ./tools/cmd/withemulator -- go test -run '^$' -bench BenchmarkProcessor -benchtime 300x ./shared/pipeline/processor
func BenchmarkProcessor(b *testing.B) {
	const batchSize, perStack = 10, 50
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	// A realistic mix of event types, one object each.
	mix := []string{"customer.subscription.updated", "invoice.paid", "customer.updated", "checkout.session.completed", "price.updated"}

	type work struct {
		p       *processor.Processor
		rec     *recorder
		raw     *dynamodb.Client
		tables  map[string]string // the processor's table: the raw one
		stores  [2]*store.Events  // the processor's records, the raw ones
		batches [][]events.SQSMessage
	}
	var chunks []*work
	for i := range b.N {
		if i%perStack == 0 {
			procStack, rawStack := testenv.Provision(b, nil), testenv.Provision(b, nil)
			w := &work{rec: &recorder{DynamoDB: procStack.DynamoDB, calls: map[string][]any{}}, raw: rawStack.DynamoDB, tables: map[string]string{}}
			var err error
			w.p, err = processor.New(processor.Config{
				Store:           &store.Events{DB: w.rec, Table: procStack.Table("EventsTable")},
				Mirror:          &mirror.Mirror{Table: procStack.Table("MirrorTable")},
				MaxReceiveCount: 5,
				Concurrency:     batchSize,
				Logger:          logger,
			})
			if err != nil {
				b.Fatal(err)
			}
			for _, id := range []string{"EventsTable", "MirrorTable"} {
				w.tables[procStack.Table(id)] = rawStack.Table(id)
			}
			w.stores[0] = &store.Events{DB: procStack.DynamoDB, Table: procStack.Table("EventsTable")}
			w.stores[1] = &store.Events{DB: rawStack.DynamoDB, Table: rawStack.Table("EventsTable")}
			chunks = append(chunks, w)
		}
		w := chunks[len(chunks)-1]
		if i%batchSize == 0 {
			w.batches = append(w.batches, nil)
		}
		body, err := stripefixture.Build(mix[i%len(mix)], stripefixture.Options{
			ObjectID: fmt.Sprintf("obj_bench_%d", i), Customer: fmt.Sprintf("cus_bench_%d", i),
		})
		if err != nil {
			b.Fatal(err)
		}
		envl, err := event.DecodeEnvelope(body)
		if err != nil {
			b.Fatal(err)
		}
		for j, st := range w.stores {
			r := event.NewRecord(event.ProviderStripe, envl, body, ingest.Hash(body), event.SourceWebhook, event.StatusReceived, time.Now())
			if _, err := st.Create(ctx, &r); err != nil {
				b.Fatal(err)
			}
			if j == 0 {
				w.batches[len(w.batches)-1] = append(w.batches[len(w.batches)-1], message(r, 1))
			}
		}
	}

	var procTime, rawTime time.Duration
	b.ResetTimer()
	for _, w := range chunks {
		for _, msgs := range w.batches {
			start := time.Now()
			resp, err := w.p.Handle(ctx, batch(msgs...))
			procTime += time.Since(start)
			b.StopTimer()
			if err != nil || len(resp.BatchItemFailures) != 0 {
				b.Fatalf("Handle: %v %+v", err, resp)
			}
			w.rec.mu.Lock()
			calls := w.rec.calls
			w.rec.calls = map[string][]any{}
			w.rec.mu.Unlock()
			for _, cs := range calls {
				retarget(cs, w.tables)
			}
			start = time.Now()
			replay(b, w.raw, calls)
			rawTime += time.Since(start)
			b.StartTimer()
		}
	}
	b.StopTimer()
	procRate := float64(b.N) / procTime.Seconds()
	rawRate := float64(b.N) / rawTime.Seconds()
	b.ReportMetric(procRate, "events/s")
	b.ReportMetric(rawRate, "raw_events/s")
	b.ReportMetric(procRate/rawRate, "processor/raw")
}

// retarget points recorded requests at the raw stack's tables.
func retarget(calls []any, tables map[string]string) {
	swap := func(name *string) *string { return aws.String(tables[aws.ToString(name)]) }
	for _, c := range calls {
		switch in := c.(type) {
		case *dynamodb.UpdateItemInput:
			in.TableName = swap(in.TableName)
		case *dynamodb.GetItemInput:
			in.TableName = swap(in.TableName)
		case *dynamodb.TransactWriteItemsInput:
			// The recorded call carries the token the SDK gave it; the
			// replay is another transaction and gets its own, as DynamoDB
			// refuses a token reused for other writes.
			in.ClientRequestToken = nil
			for _, it := range in.TransactItems {
				if it.Put != nil {
					it.Put.TableName = swap(it.Put.TableName)
				}
				if it.Update != nil {
					it.Update.TableName = swap(it.Update.TableName)
				}
			}
		}
	}
}

// replay sends each event's requests in order, the events concurrently, as
// the processor does.
func replay(b *testing.B, db *dynamodb.Client, calls map[string][]any) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, cs := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range cs {
				var err error
				switch in := c.(type) {
				case *dynamodb.UpdateItemInput:
					_, err = db.UpdateItem(ctx, in)
				case *dynamodb.GetItemInput:
					_, err = db.GetItem(ctx, in)
				case *dynamodb.TransactWriteItemsInput:
					_, err = db.TransactWriteItems(ctx, in)
				}
				if err != nil {
					b.Errorf("raw call: %v", err)
				}
			}
		}()
	}
	wg.Wait()
}

// memStore claims and completes every event at once, in memory.
type memStore struct{ recs map[string]event.Record }

func (m memStore) Claim(_ context.Context, _, id, owner string, _, until time.Time) (event.Record, error) {
	r := m.recs[id]
	r.Status, r.LeaseOwner, r.LeaseUntil, r.Attempts = event.StatusProcessing, owner, until, 1
	return r, nil
}

func (m memStore) Payload(_ context.Context, r event.Record) ([]byte, error) {
	return m.recs[r.ID].Payload, nil
}

func (memStore) Complete(context.Context, event.Record, string, time.Time, store.Completion) error {
	return nil
}

func (memStore) Fail(context.Context, event.Record, string, event.Status, string, time.Time, time.Time) error {
	return nil
}

// BenchmarkProcessorWithoutIO is the processor's own cost per event
// (decoding the pointer, planning the mirror writes from the payload,
// logging), with a store that answers at once: what it adds to the
// DynamoDB round trips BenchmarkProcessor measures.
func BenchmarkProcessorWithoutIO(b *testing.B) {
	mix := []string{"customer.subscription.updated", "invoice.paid", "customer.updated", "checkout.session.completed", "price.updated"}
	st := memStore{recs: map[string]event.Record{}}
	var msgs []events.SQSMessage
	for i := range 10 {
		body, err := stripefixture.Build(mix[i%len(mix)], stripefixture.Options{ObjectID: fmt.Sprintf("obj_%d", i), Customer: "cus_1"})
		if err != nil {
			b.Fatal(err)
		}
		envl, err := event.DecodeEnvelope(body)
		if err != nil {
			b.Fatal(err)
		}
		r := event.NewRecord(event.ProviderStripe, envl, body, "", event.SourceWebhook, event.StatusReceived, time.Now())
		st.recs[r.ID] = r
		msgs = append(msgs, message(r, 1))
	}
	p, err := processor.New(processor.Config{
		Store: st, Mirror: &mirror.Mirror{Table: "mirror"}, MaxReceiveCount: 5,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Handle(ctx, batch(msgs...)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/event")
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// counter counts AWS operations made through a configuration.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// counted returns cfg with every operation counted once (retries are one
// operation), empty receives apart.
func (c *counter) counted(cfg aws.Config) aws.Config {
	cfg = cfg.Copy()
	cfg.APIOptions = append(cfg.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(
			middleware.InitializeMiddlewareFunc(
				"benchtableCount",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					op := awsmiddleware.GetOperationName(ctx)
					out, md, err := next.HandleInitialize(ctx, in)
					if r, ok := out.Result.(*sqs.ReceiveMessageOutput); ok && len(r.Messages) == 0 {
						op += "(empty)"
					}
					c.mu.Lock()
					c.n[op]++
					c.mu.Unlock()
					return out, md, err
				},
			),
			middleware.After,
		)
	})
	return cfg
}

func diff(after, before map[string]int, ops ...string) int {
	n := 0
	for _, op := range ops {
		n += after[op] - before[op]
	}
	return n
}

// pipeline is what the in-process local stack measured.
type pipeline struct {
	ReceiverNew, ReceiverDuplicate float64 // AWS calls per delivery
	ProcessorDynamo, ProcessorSQS  float64 // AWS calls per event
	BatchSize                      float64 // messages per processor invocation
	ReconcilerPer100               int     // AWS calls to reconcile 100 events
	StripePer100                   int     // Stripe API calls to reconcile 100 events
	PayloadBytes                   int
	EndToEnd, Raw                  float64 // events/s; PutItem+SendMessage pairs/s
	Events                         int
}

// measure runs the local stack in process and counts what it does.
func measure(ctx context.Context, endpoints emulator.Endpoints, template string, n, concurrency int) (pipeline, error) {
	var p pipeline
	base, err := emulator.Config(ctx, endpoints)
	if err != nil {
		return p, err
	}
	cnt := &counter{n: map[string]int{}}
	cfg := cnt.counted(base)
	prefix := "bench-" + stripefixture.NewID("")[:8]
	stack, err := devstack.Start(ctx, devstack.Options{
		Template: template, Prefix: prefix, Addr: "127.0.0.1:0", ReconcileEvery: -1,
		AWS: cfg, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		return p, err
	}
	defer stack.Close()
	b := &bench{
		cnt: cnt, cfg: cfg, stack: stack, n: n, concurrency: concurrency,
		events:  &store.Events{DB: dynamodb.NewFromConfig(base), Table: prefix + "-EventsTable"},
		url:     stack.URL + "/webhooks/stripe",
		created: time.Now().Add(-time.Hour).Unix(),
	}
	first, err := b.deliveries(ctx, &p)
	if err != nil {
		return p, err
	}
	if err := b.reconciler(ctx, &p, first); err != nil {
		return p, err
	}
	if err := b.throughput(ctx, &p); err != nil {
		return p, err
	}
	p.Raw, err = rawRate(ctx, base, prefix, n, concurrency)
	return p, err
}

// bench is one measure's local stack, with its AWS calls counted.
type bench struct {
	cnt            *counter
	cfg            aws.Config
	stack          *devstack.Stack
	events         *store.Events
	url            string
	created        int64
	n, concurrency int
}

// build builds k new events.
func (b *bench) build(k int) [][]byte {
	var out [][]byte
	for i := 0; i < k; i++ {
		body, err := stripefixture.Build("customer.subscription.updated", stripefixture.Options{
			ObjectID: stripefixture.NewID("sub_"), Customer: stripefixture.NewID("cus_"), Created: b.created + int64(i),
		})
		if err != nil {
			panic(err)
		}
		out = append(out, body)
	}
	return out
}

// deliveries counts the calls of n new events, then of the same
// deliveries again; it returns the events.
func (b *bench) deliveries(ctx context.Context, p *pipeline) ([][]byte, error) {
	cnt, n := b.cnt, b.n
	first := b.build(n)
	p.PayloadBytes = len(first[0])
	before := cnt.snapshot()
	if err := deliverAll(ctx, b.url, first, b.concurrency); err != nil {
		return nil, err
	}
	if err := waitProcessed(ctx, b.events, first); err != nil {
		return nil, err
	}
	after := cnt.snapshot()
	p.ReceiverNew = float64(diff(after, before, "PutItem", "SendMessage")) / float64(n)
	p.ProcessorDynamo = float64(diff(after, before, "UpdateItem", "GetItem", "TransactWriteItems")) / float64(n)
	receives := diff(after, before, "ReceiveMessage")
	p.ProcessorSQS = float64(receives+diff(after, before, "DeleteMessageBatch", "ChangeMessageVisibility")) / float64(n)
	if receives > 0 {
		p.BatchSize = float64(n) / float64(receives)
	}
	before = cnt.snapshot()
	if err := deliverAll(ctx, b.url, first, b.concurrency); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second) // anything wrongly enqueued would show
	after = cnt.snapshot()
	p.ReceiverDuplicate = float64(diff(after, before, "PutItem", "SendMessage", "GetItem")) / float64(n)
	return first, nil
}

// reconciler counts the reconciler's calls over 100 events the store
// already has.
func (b *bench) reconciler(ctx context.Context, p *pipeline, first [][]byte) error {
	stack, cfg, cnt := b.stack, b.cfg, b.cnt
	fake := stripefake.New()
	defer fake.Close()
	for _, body := range first[:min(100, len(first))] {
		if err := fake.Add(body); err != nil {
			return err
		}
	}
	rc, err := reconcilerboot.ConfigFromEnv(func(k string) string { return stack.FunctionEnv[devstack.ReconcilerID][k] }, cfg)
	if err != nil {
		return err
	}
	rc.APIBase, rc.Key = fake.URL, secrets.Fixed("the stand-in's key", "sk_test_bench")
	rc.EventTypes = []string{"customer.subscription.updated"}
	rec, err := reconcilerboot.New(ctx, rc, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), hooks.Registry())
	if err != nil {
		return err
	}
	before := cnt.snapshot()
	fake.ResetRequests()
	if _, err := rec.Run(ctx, reconcile.RunOptions{Since: 2 * time.Hour}); err != nil {
		return err
	}
	after := cnt.snapshot()
	for op := range after {
		p.ReconcilerPer100 += after[op] - before[op]
	}
	p.StripePer100 = len(fake.Requests())
	return nil
}

// throughput is new events end to end, beside which measure puts the
// emulator's raw rate for the receiver's three calls, in the same run.
func (b *bench) throughput(ctx context.Context, p *pipeline) error {
	second := b.build(b.n)
	start := time.Now()
	if err := deliverAll(ctx, b.url, second, b.concurrency); err != nil {
		return err
	}
	if err := waitProcessed(ctx, b.events, second); err != nil {
		return err
	}
	p.EndToEnd = float64(b.n) / time.Since(start).Seconds()
	p.Events = b.n
	return nil
}

// rawRate is the emulator's own rate for the receiver's calls per event
// (two PutItems, the record's and the payload's, and a SendMessage), at the
// same concurrency.
func rawRate(ctx context.Context, cfg aws.Config, prefix string, n, concurrency int) (float64, error) {
	db, q := dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg)
	qu, err := q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(prefix + "-DeadLetterQueue")})
	if err != nil {
		return 0, err
	}
	payload := bytes.Repeat([]byte("x"), 500)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				var err error
				for _, item := range []string{"record", "payload"} {
					if err == nil {
						_, err = db.PutItem(ctx, &dynamodb.PutItemInput{
							TableName: aws.String(prefix + "-MirrorTable"),
							Item: map[string]types.AttributeValue{
								"pk":   &types.AttributeValueMemberS{Value: fmt.Sprintf("raw#%s#%d", item, i)},
								"body": &types.AttributeValueMemberB{Value: payload},
							},
							ConditionExpression: aws.String("attribute_not_exists(pk)"),
						})
					}
				}
				if err == nil {
					_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: qu.QueueUrl, MessageBody: aws.String(`{"id":"raw"}`)})
				}
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return float64(n) / time.Since(start).Seconds(), first
}

func deliverAll(ctx context.Context, url string, bodies [][]byte, concurrency int) error {
	work := make(chan []byte)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Stripe-Signature", provider.SignStripe(b, devstack.DefaultWebhookSecret, time.Now()))
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						err = fmt.Errorf("delivery answered %d", resp.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, b := range bodies {
		work <- b
	}
	close(work)
	wg.Wait()
	return first
}

func waitProcessed(ctx context.Context, events *store.Events, bodies [][]byte) error {
	deadline := time.Now().Add(5 * time.Minute)
	for _, b := range bodies {
		env, _ := event.DecodeEnvelope(b)
		for {
			r, err := events.Get(ctx, event.ProviderStripe, env.ID)
			if err == nil && r.Status == event.StatusProcessed {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("benchtable: event %s not processed in time", env.ID)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

package receiver_test

// Tests against the AWS emulator: real tables and queues created from
// template.yaml (tools/testing/testenv), the real SDK clients, wired by
// boot.NewIngester exactly as in Lambda. Failures are real too: a queue that
// does not exist, an endpoint that refuses connections or never answers.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/awsenv"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// The signing secrets of the emulator tests' receivers.
const (
	whsec         = "whsec_emulator_test"
	githubSecret  = "github emulator test secret"
	shopifySecret = "shopify emulator test secret"
)

// rig is a receiver over freshly provisioned resources.
type rig struct {
	t      *testing.T
	stack  *testenv.Stack
	common boot.Common
	events *store.Events
	logs   *syncBuffer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	s := testenv.Provision(t, nil)
	c := boot.Common{
		EventsTable: s.Table("EventsTable"),
		MirrorTable: s.Table("MirrorTable"),
		QueueURL:    s.Queue("WebhookQueue").URL,
		Retention:   90 * 24 * time.Hour,
	}
	return &rig{t: t, stack: s, common: c, events: &store.Events{DB: s.DynamoDB, Table: c.EventsTable}, logs: &syncBuffer{}}
}

// handler builds the receiver on cfg (the emulator's unless a test changes
// it) and c, as receiverboot.New does.
func (r *rig) handler(cfg aws.Config, c boot.Common, budget time.Duration) *receiver.Handler {
	r.t.Helper()
	events := c.Events(dynamodb.NewFromConfig(cfg))
	served := map[string]receiver.Provider{}
	for name, secret := range map[string]string{provider.Stripe: whsec, provider.GitHub: githubSecret, provider.Shopify: shopifySecret} {
		k, err := provider.NewKeyring(name, secrets.Fixed("test secret", secret), provider.Options{})
		if err != nil {
			r.t.Fatal(err)
		}
		in := boot.NewIngesterOn(events, cfg, c, boot.HandledTypes(nil, nil))
		p := receiver.Provider{Verifier: k, Ingester: in, Bodies: events}
		if name == provider.Stripe {
			p.APIVersion = stripe.APIVersion
		} else {
			in.Provider, in.Handled = name, nil
		}
		served[name] = p
	}
	return receiver.New(receiver.Config{
		Providers: served,
		Budget:    budget,
		Logger:    slogJSON(r.logs),
	})
}

func delivery(body []byte) events.APIGatewayV2HTTPRequest {
	// As API Gateway passes it: lower-cased headers, base64 body.
	return events.APIGatewayV2HTTPRequest{
		Headers:         map[string]string{"content-type": "application/json; charset=utf-8", "stripe-signature": provider.SignStripe(body, whsec, time.Now())},
		Body:            base64.StdEncoding.EncodeToString(body),
		IsBase64Encoded: true,
	}
}

func build(t *testing.T, typ string, o stripefixture.Options) ([]byte, event.Envelope) {
	t.Helper()
	body, err := stripefixture.Build(typ, o)
	if err != nil {
		t.Fatal(err)
	}
	env, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	return body, env
}

// drain receives every message on the queue (hiding each for a minute) and
// returns their pointers.
func (r *rig) drain() []event.Pointer {
	r.t.Helper()
	var out []event.Pointer
	for empty := 0; empty < 2; {
		res, err := r.stack.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.common.QueueURL), MaxNumberOfMessages: 10, VisibilityTimeout: 60,
		})
		if err != nil {
			r.t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			empty++
			continue
		}
		for _, m := range res.Messages {
			p, err := queue.Decode(aws.ToString(m.Body))
			if err != nil {
				r.t.Fatalf("message %q is not a pointer: %v", aws.ToString(m.Body), err)
			}
			out = append(out, p)
		}
	}
	return out
}

func (r *rig) count() int32 {
	r.t.Helper()
	out, err := r.stack.DynamoDB.Scan(
		context.Background(),
		&dynamodb.ScanInput{TableName: aws.String(r.common.EventsTable), Select: types.SelectCount, ConsistentRead: aws.Bool(true)},
	)
	if err != nil {
		r.t.Fatal(err)
	}
	return out.Count
}

func (r *rig) record(id string) event.Record {
	r.t.Helper()
	rec, err := r.events.Get(context.Background(), event.ProviderStripe, id)
	if err != nil {
		r.t.Fatalf("record %s: %v", id, err)
	}
	return rec
}

func TestConcurrentIdenticalDeliveriesMakeOneRecord(t *testing.T) {
	r := newRig(t)
	h := r.handler(r.stack.AWS, r.common, receiver.DefaultBudget)
	body, env := build(t, "customer.subscription.created", stripefixture.Options{Customer: "cus_concurrent"})

	const n = 20
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := h.Handle(context.Background(), delivery(body))
			if err != nil {
				t.Errorf("Handle: %v", err)
			}
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()

	for i, st := range statuses {
		if st < 200 || st > 299 {
			t.Errorf("delivery %d: got %d, want 2xx", i, st)
		}
	}
	// One record and one payload: each an item of its own.
	if got := r.count(); got != 2 {
		t.Errorf("items in the table: got %d, want exactly 2 (the record and its payload)", got)
	}
	if rec := r.record(env.ID); rec.Status != event.StatusReceived || rec.Type != env.Type {
		t.Errorf("record: got %s %s, want received %s", rec.Status, rec.Type, env.Type)
	}
	outcomes := map[outcome.Outcome]int{}
	for _, line := range r.logs.lines(t) {
		outcomes[outcome.Outcome(line["outcome"].(string))]++
	}
	if outcomes[outcome.Stored] != 1 || outcomes[outcome.Stored]+outcomes[outcome.Requeued] != n {
		t.Errorf("outcomes: got %v, want 1 stored and the rest requeued (the record is received until processed)", outcomes)
	}
	msgs := r.drain()
	if len(msgs) < 1 || len(msgs) > n {
		t.Errorf("messages on the queue: got %d, want 1..%d", len(msgs), n)
	}
	if len(msgs) != outcomes[outcome.Stored]+outcomes[outcome.Requeued] {
		t.Errorf("messages on the queue: got %d, want one per stored or requeued answer (%v)", len(msgs), outcomes)
	}
	for _, p := range msgs {
		if p.ID != env.ID || p.Type != env.Type || p.ObjectID != env.ObjectID || p.Provider != event.ProviderStripe {
			t.Errorf("message: got %+v, want a pointer to %s", p, env.ID)
		}
	}
}

func TestSQSUnavailable(t *testing.T) {
	refused := closedPort(t)
	tests := []struct {
		name string
		// ingest returns the configuration and settings of a receiver whose
		// queue is unavailable.
		broken func(t *testing.T, r *rig) (aws.Config, boot.Common)
	}{
		{"queue does not exist", func(t *testing.T, r *rig) (aws.Config, boot.Common) {
			c := r.common
			c.QueueURL = strings.TrimSuffix(c.QueueURL, "/") + "-deleted"
			return r.stack.AWS, c
		}},
		{"endpoint refuses connections", func(t *testing.T, r *rig) (aws.Config, boot.Common) {
			t.Setenv("AWS_ENDPOINT_URL_SQS", "http://"+refused)
			cfg, err := awsenv.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return cfg, r.common
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			body, env := build(t, "invoice.paid", stripefixture.Options{Customer: "cus_sqs_down"})
			// Built first: clients read AWS_ENDPOINT_URL_<SERVICE> when
			// they are made.
			healthy := r.handler(r.stack.AWS, r.common, receiver.DefaultBudget)
			cfg, c := tc.broken(t, r)
			h := r.handler(cfg, c, 3*time.Second)

			resp, err := h.Handle(context.Background(), delivery(body))
			if err != nil || resp.StatusCode < 500 {
				t.Fatalf("got %d, %v; want 5xx so that Stripe retries", resp.StatusCode, err)
			}
			lines := r.logs.lines(t)
			if line := lines[len(lines)-1]; line["failed_at"] != "enqueue" || line["enqueue_failures"] != 1.0 || line["event_id"] != env.ID {
				t.Errorf("log line: got failed_at %v enqueue_failures %v event %v", line["failed_at"], line["enqueue_failures"], line["event_id"])
			}
			if rec := r.record(env.ID); rec.Status != event.StatusReceived {
				t.Fatalf("record: got %s, want received (stored, not yet enqueued)", rec.Status)
			}
			if msgs := r.drain(); len(msgs) != 0 {
				t.Fatalf("messages on the queue: got %d, want 0", len(msgs))
			}

			// Stripe retries once SQS is back: the record exists, and its
			// status, not its existence, decides. It is enqueued now.
			if resp, _ := healthy.Handle(context.Background(), delivery(body)); resp.StatusCode != 200 {
				t.Fatalf("retry after SQS recovered: got %d, want 200", resp.StatusCode)
			}
			if lines := r.logs.lines(t); lines[len(lines)-1]["outcome"] != string(outcome.Requeued) {
				t.Errorf("retry outcome: got %v, want requeued", lines[len(lines)-1]["outcome"])
			}
			if msgs := r.drain(); len(msgs) != 1 || msgs[0].ID != env.ID {
				t.Errorf("messages after the retry: got %+v, want one pointer to %s", msgs, env.ID)
			}
		})
	}
}

func TestOversizedEventIsStoredWithoutPayloadAndEnqueued(t *testing.T) {
	r := newRig(t)
	h := r.handler(r.stack.AWS, r.common, receiver.DefaultBudget)
	// Random bytes do not compress: ~700 KB of them, base64 in a metadata
	// value, stay far above DynamoDB's 400 KB item limit gzipped, while the
	// body stays under the 1 MiB request limit.
	noise := make([]byte, 520<<10)
	_, _ = rand.Read(noise)
	body, env := build(t, "customer.subscription.updated", stripefixture.Options{
		Customer: "cus_big", Set: map[string]any{"metadata": map[string]any{"blob": base64.StdEncoding.EncodeToString(noise)}},
	})
	if len(body) <= 600<<10 || len(body) > receiver.DefaultMaxBodyBytes {
		t.Fatalf("test event is %d bytes; want 600 KB..1 MiB", len(body))
	}

	resp, err := h.Handle(context.Background(), delivery(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %d, %v; want 200 (nothing is dropped for being big)", resp.StatusCode, err)
	}
	rec := r.record(env.ID)
	if !rec.PayloadOmitted || rec.Payload != nil {
		t.Errorf("record: payload_omitted %v with %d payload bytes; want flagged and no payload", rec.PayloadOmitted, len(rec.Payload))
	}
	if rec.Status != event.StatusReceived || rec.Type != env.Type || rec.ObjectID != env.ObjectID || rec.PayloadHash == "" {
		t.Errorf("record: got %s %s %s hash %q; want the envelope, received, with the payload's hash", rec.Status, rec.Type, rec.ObjectID, rec.PayloadHash)
	}
	if msgs := r.drain(); len(msgs) != 1 || msgs[0].ID != env.ID {
		t.Errorf("messages: got %+v, want one pointer to %s", msgs, env.ID)
	}
	lines := r.logs.lines(t)
	if line := lines[len(lines)-1]; line["payload_omitted"] != 1.0 || line["outcome"] != string(outcome.Stored) {
		t.Errorf("log line: got payload_omitted %v outcome %v; want the omission counted", line["payload_omitted"], line["outcome"])
	}
}

// callCounter is an SDK middleware that records every attempt each client
// sends, after the retry loop: retries would count too.
type callCounter struct {
	mu    sync.Mutex
	calls []string
}

func (c *callCounter) add(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("CountCalls",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			c.mu.Lock()
			c.calls = append(c.calls, awsmiddleware.GetServiceID(ctx)+"."+awsmiddleware.GetOperationName(ctx))
			c.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

func (c *callCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func TestAWSCallsPerDelivery(t *testing.T) {
	r := newRig(t)
	counter := &callCounter{}
	cfg := r.stack.AWS.Copy()
	cfg.APIOptions = append(cfg.APIOptions, counter.add)
	h := r.handler(cfg, r.common, receiver.DefaultBudget)
	ctx := context.Background()

	deliver := func(body []byte, want outcome.Outcome) []string {
		t.Helper()
		if resp, _ := h.Handle(ctx, delivery(body)); resp.StatusCode != 200 {
			t.Fatalf("got %d, want 200", resp.StatusCode)
		}
		lines := r.logs.lines(t)
		if got := lines[len(lines)-1]["outcome"]; got != string(want) {
			t.Fatalf("outcome: got %v, want %s", got, want)
		}
		return counter.take()
	}
	expect := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: got %d AWS calls %v, want %d: %v", what, len(got), got, len(want), want)
		}
	}

	body, env := build(t, "invoice.paid", stripefixture.Options{Customer: "cus_calls"})
	// The record, its payload (an item of its own), the pointer.
	expect("new event", deliver(body, outcome.Stored), "DynamoDB.PutItem", "DynamoDB.PutItem", "SQS.SendMessage")
	// The record may have been stored without its payload: the payload's
	// conditional put again (it loses: the payload is there), the pointer.
	expect("duplicate of a received event", deliver(body, outcome.Requeued), "DynamoDB.PutItem", "DynamoDB.PutItem", "SQS.SendMessage")

	// The processor's transitions, on the uncounted client.
	now := time.Now()
	claimed, err := r.events.Claim(ctx, event.ProviderStripe, env.ID, "worker", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.events.Complete(ctx, claimed, "worker", now, store.Completion{Outcome: outcome.Applied}); err != nil {
		t.Fatal(err)
	}
	expect("duplicate of a processed event", deliver(body, outcome.Duplicate), "DynamoDB.PutItem")

	ignored, _ := build(t, "charge.refunded", stripefixture.Options{})
	expect("type outside the allowlist", deliver(ignored, outcome.Ignored), "DynamoDB.PutItem", "DynamoDB.PutItem")
}

func TestBudgetBoundsTheSDKsRetries(t *testing.T) {
	// A DynamoDB endpoint that accepts connections and never answers: the
	// SDK would wait out its HTTP timeout on every attempt and retry. The
	// budget (or the invocation's deadline) must end all of that.
	hang := hangingEndpoint(t)
	tests := []struct {
		name   string
		budget time.Duration
		ctx    func() (context.Context, context.CancelFunc)
	}{
		{"budget", 300 * time.Millisecond, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
		{"invocation deadline", time.Hour, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 800*time.Millisecond)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t) // before the endpoint changes: provisioning needs the emulator
			t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://"+hang)
			cfg, err := awsenv.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			h := r.handler(cfg, r.common, tc.budget)
			body, env := build(t, "invoice.paid", stripefixture.Options{})
			ctx, cancel := tc.ctx()
			defer cancel()
			done := make(chan events.APIGatewayV2HTTPResponse, 1)
			go func() {
				resp, _ := h.Handle(ctx, delivery(body))
				done <- resp
			}()
			var resp events.APIGatewayV2HTTPResponse
			select {
			case resp = <-done:
			case <-time.After(20 * time.Second): // the SDK's own timeouts alone would take 30 s
				t.Fatal("Handle still waiting on DynamoDB: the budget does not bound the SDK")
			}
			if ctx.Err() != nil {
				t.Error("Handle answered after the invocation's deadline")
			}
			if resp.StatusCode != 504 {
				t.Errorf("got %d, want 504", resp.StatusCode)
			}
			lines := r.logs.lines(t)
			if line := lines[len(lines)-1]; line["outcome"] != string(outcome.Timeout) || line["failed_at"] != "persist" || line["event_id"] != env.ID {
				t.Errorf("log line: got outcome %v failed_at %v event %v", line["outcome"], line["failed_at"], line["event_id"])
			}
		})
	}
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// hangingEndpoint accepts connections and never answers them.
func hangingEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// syncBuffer collects log lines from concurrent requests.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, l)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatal("no log lines")
	}
	return out
}

func slogJSON(w *syncBuffer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// now is the CLI's clock in the golden tests; the world's events happen in
// the hour before it.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// clock ticks one second per reading, so that every transition has its own
// time and the order of listings is fixed.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// world is a provisioned stack with a real processor and a team effect
// that counts what it did, per event.
type world struct {
	t      *testing.T
	s      *testenv.Stack
	events *store.Events
	proc   *processor.Processor
	clock  *clock

	mu sync.Mutex
	// effects counts each event's successful effect runs.
	effects map[string]int
	// fail makes the effect fail for an event: a retryable error, or a
	// *fault.Permanent.
	fail map[string]error
}

func newWorld(t *testing.T, fixedClock bool) *world {
	t.Helper()
	s := testenv.Provision(t, nil)
	w := &world{t: t, s: s, effects: map[string]int{}, fail: map[string]error{}}
	w.events = &store.Events{DB: s.DynamoDB, Table: s.Table("EventsTable")}
	reg := &effect.Registry{}
	reg.On(effect.Func{HandlerName: "count", Fn: func(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := w.fail[ev.Record.ID]; err != nil {
			return nil, err
		}
		w.effects[ev.Record.ID]++
		return nil, nil
	}}, "*")
	cfg := processor.Config{
		Store:           w.events,
		Mirror:          &mirror.Mirror{Table: s.Table("MirrorTable")},
		Effects:         reg,
		MaxReceiveCount: 5,
		Concurrency:     1,
		Instance:        "worker-test",
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if fixedClock {
		w.clock = &clock{t: now.Add(-time.Hour)}
		cfg.Now = w.clock.Now
	}
	p, err := processor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.proc = p
	return w
}

func (w *world) effectCount(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.effects[id]
}

func (w *world) setFail(id string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		delete(w.fail, id)
		return
	}
	w.fail[id] = err
}

var requestIDs = regexp.MustCompile(`"(id|idempotency_key)": "(req_)?[0-9A-Za-z]{24}"`)

// body builds a deterministic Stripe event.
func body(t testing.TB, typ string, o stripefixture.Options) []byte {
	t.Helper()
	b, err := stripefixture.Build(typ, o)
	if err != nil {
		t.Fatal(err)
	}
	// The sample's request id and idempotency key are random.
	return requestIDs.ReplaceAllFunc(b, func(m []byte) []byte {
		if bytes.Contains(m, []byte("req_")) {
			return []byte(`"id": "req_golden"`)
		}
		if bytes.HasPrefix(m, []byte(`"idempotency_key"`)) {
			return []byte(`"idempotency_key": "golden"`)
		}
		return m
	})
}

// store stores an event as the receiver does, received at the clock's time
// (or at), and returns its record.
func (w *world) store(b []byte, source event.Source, status event.Status, at time.Time) event.Record {
	w.t.Helper()
	env, err := event.DecodeEnvelope(b)
	if err != nil {
		w.t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if at.IsZero() {
		at = w.clock.Now()
	}
	r := event.NewRecord(event.ProviderStripe, env, b, hex.EncodeToString(sum[:]), source, status, at)
	if status == event.StatusIgnored {
		r.Outcome = outcome.Ignored
	}
	if _, err := w.events.Create(context.Background(), &r); err != nil {
		w.t.Fatal(err)
	}
	return r
}

// process hands the processor one message for r, on its receives-th
// receive, as the SQS event source would.
func (w *world) process(r event.Record, receives int) events.SQSEventResponse {
	w.t.Helper()
	ptr, _ := json.Marshal(event.PointerTo(r))
	resp, err := w.proc.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{
		MessageId: "m-" + r.ID, Body: string(ptr),
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives)},
	}}})
	if err != nil {
		w.t.Fatal(err)
	}
	return resp
}

// drain feeds everything on the webhook queue to the processor, as the
// event source mapping does, until the queue is empty. It returns the
// number of messages handled.
func (w *world) drain() int {
	w.t.Helper()
	ctx := context.Background()
	q := w.s.Queue("WebhookQueue")
	p := &poller.Poller{QueueARN: q.ARN}
	n := 0
	for {
		out, err := w.s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.URL), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			w.t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return n
		}
		n += len(out.Messages)
		resp, err := w.proc.Handle(ctx, p.Event(out.Messages))
		if err != nil {
			w.t.Fatal(err)
		}
		done, ok := poller.Settle(out.Messages, resp, true)
		if !ok {
			w.t.Fatal("malformed batch response")
		}
		for _, m := range done {
			if _, err := w.s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

// bodies receives every message of a queue, hiding each for a minute so it
// is counted once, and returns their bodies.
func bodies(t *testing.T, client *sqs.Client, url string) []string {
	t.Helper()
	var out []string
	for {
		res, err := client.ReceiveMessage(
			context.Background(),
			&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60},
		)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			return out
		}
		for _, m := range res.Messages {
			out = append(out, aws.ToString(m.Body))
		}
	}
}

func pointerBody(t testing.TB, id string) string {
	b, err := json.Marshal(event.Pointer{Provider: event.ProviderStripe, ID: id, Type: "invoice.paid", Created: 1700000000})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// cli runs inboxctl against the world's stack.
type cli struct {
	t      *testing.T
	w      *world
	env    map[string]string
	prefix string
	now    time.Time
	stdin  string
	// wrapSQS injects faults.
	wrapSQS func(SQS) SQS
	// pollEvery is how often a move task's progress and a stack's status
	// are read; the CLI's own default when zero.
	pollEvery time.Duration
	// stageAPIBase points a --stage run at a local Stripe stand-in.
	stageAPIBase string
}

func (w *world) cli() *cli {
	env := testenv.Endpoints(w.t).Vars()
	env["AWS_REGION"] = "us-east-1"
	return &cli{t: w.t, w: w, prefix: w.s.Prefix, now: now, env: env}
}

// endpointFlags are the --endpoint flags that reach the emulators: one for
// every service, and one for each service with its own (DynamoDB on moto
// under make test-localstack).
func endpointFlags(t testing.TB) []string {
	e := testenv.Endpoints(t)
	flags := []string{"--endpoint", e.URL}
	for _, s := range endpointServices {
		if v := e.For(s); v != e.URL {
			flags = append(flags, "--endpoint", s+"="+v)
		}
	}
	return flags
}

type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (c *cli) run(ctx context.Context, args ...string) result {
	c.t.Helper()
	var out, errb bytes.Buffer
	a := &app{
		stdin: strings.NewReader(c.stdin), stdout: &out, stderr: &errb,
		getenv:  func(k string) string { return c.env[k] },
		now:     func() time.Time { return c.now },
		shuffle: func(n int, swap func(i, j int)) {},
		wrapSQS: c.wrapSQS,

		pollEvery: c.pollEvery,

		stageAPIBase: c.stageAPIBase,
	}
	full := args
	if c.prefix != "" {
		full = append([]string{"--prefix", c.prefix}, args...)
	}
	code := a.run(ctx, full)
	return result{args: args, stdout: out.String(), stderr: errb.String(), code: code}
}

// golden compares r with testdata/<name>.golden, after replacing what
// changes from run to run (the resource prefix, the endpoint, the
// replacements given).
func (c *cli) golden(name string, r result, replace ...string) {
	c.t.Helper()
	text := fmt.Sprintf("$ inboxctl %s\n%s", strings.Join(r.args, " "), r.stdout)
	if r.stderr != "" {
		text += "--- stderr\n" + r.stderr
	}
	text += fmt.Sprintf("--- exit %d\n", r.code)
	pairs := []string{}
	if c.w != nil {
		// Queue URLs hold the emulator's account id (moto's
		// 123456789012, LocalStack's 000000000000).
		pairs = append(pairs, c.w.s.Queue("DeadLetterQueue").URL, "DLQ_URL", c.w.s.Queue("WebhookQueue").URL, "QUEUE_URL")
		pairs = append(pairs, c.w.s.Prefix, "PREFIX")
	}
	for k, v := range c.env {
		if strings.HasPrefix(k, "AWS_ENDPOINT_URL") {
			pairs = append(pairs, v, "ENDPOINT")
		}
	}
	pairs = append(pairs, replace...)
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			text = strings.ReplaceAll(text, pairs[i], pairs[i+1])
		}
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		c.t.Fatalf("%v (run `go test ./internal/cli -update` to create it)", err)
	}
	if string(want) != text {
		c.t.Errorf("%s: output differs from %s (run with -update to accept)\n--- got\n%s\n--- want\n%s", name, path, text, want)
	}
}

// must fails the test when r did not exit with code.
func (r result) must(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("inboxctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// seed builds the golden world: a subscription shaped by three events (one
// arriving late), an invoice paid (found by the reconciler), and events in
// every other status.
func (w *world) seed() {
	w.t.Helper()
	const c0 = 1777600000 // created times, Stripe's clock
	sub := func(id, typ, status string, created int64) []byte {
		return body(w.t, typ, stripefixture.Options{ID: id, ObjectID: "sub_golden", Customer: "cus_golden", Created: created, Status: status,
			Set: map[string]any{"current_period_end": created + 30*24*3600}})
	}
	inv := func(id, typ string, created int64) []byte {
		return body(w.t, typ, stripefixture.Options{ID: id, ObjectID: "in_" + strings.TrimPrefix(id, "evt_"), Customer: "cus_golden", Created: created})
	}
	created := w.store(sub("evt_golden_sub_created", "customer.subscription.created", "incomplete", c0), event.SourceWebhook, event.StatusReceived, time.Time{})
	w.process(created, 1)
	updated := w.store(sub("evt_golden_sub_updated", "customer.subscription.updated", "active", c0+120), event.SourceWebhook, event.StatusReceived, time.Time{})
	w.process(updated, 1)
	late := w.store(sub("evt_golden_sub_late", "customer.subscription.updated", "past_due", c0+60), event.SourceWebhook, event.StatusReceived, time.Time{})
	w.process(late, 1)
	paid := w.store(inv("evt_golden_inv_paid", "invoice.paid", c0+130), event.SourceReconciler, event.StatusReceived, time.Time{})
	w.process(paid, 1)

	failed := w.store(inv("evt_golden_inv_failed", "invoice.payment_failed", c0+140), event.SourceWebhook, event.StatusReceived, time.Time{})
	w.setFail(failed.ID, errors.New("billing service: 504 gateway timeout"))
	w.process(failed, 1)
	w.process(failed, 2)
	perm := w.store(inv("evt_golden_perm", "invoice.finalized", c0+150), event.SourceWebhook, event.StatusReceived, time.Time{})
	w.setFail(perm.ID, &fault.Permanent{Err: errors.New("invoice has no line items")})
	w.process(perm, 1)
	dead := w.store(inv("evt_golden_dead", "invoice.created", c0+160), event.SourceWebhook, event.StatusReceived, time.Time{})
	w.setFail(dead.ID, errors.New("ledger: connection reset by peer"))
	w.process(dead, 5)

	w.store(
		body(w.t, "customer.updated", stripefixture.Options{ID: "evt_golden_received", Customer: "cus_golden", Created: c0 + 170}),
		event.SourceWebhook,
		event.StatusReceived,
		time.Time{},
	)
	w.store(
		body(w.t, "charge.succeeded", stripefixture.Options{ID: "evt_golden_ignored", Created: c0 + 180}),
		event.SourceWebhook,
		event.StatusIgnored,
		time.Time{},
	)
}

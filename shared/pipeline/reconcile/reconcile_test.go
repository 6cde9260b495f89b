package reconcile_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// oneGroup are handled types that fit one types[] filter.
var oneGroup = []string{
	"customer.subscription.created", "customer.subscription.updated",
	"invoice.paid", "invoice.payment_failed", "customer.updated",
}

// harness is one test's pipeline: resources provisioned from the template
// on the emulator, a Stripe fake, and the receiver's ingest path.
type harness struct {
	// effects are the effects startProcessor's processor runs (nil: none).
	effects   *effect.Registry
	t         *testing.T
	stack     *testenv.Stack
	fake      *stripefake.Server
	db        *dynamodb.Client // counts its BatchGetItem calls
	batchGets atomic.Int64
	events    *store.Events
	ingester  *ingest.Ingester
	queue     *queue.Queue
	types     []string
	logs      *testenv.Buffer
	now       time.Time
}

// provisionMu serializes template parsing: goformation's ProcessYAML
// registers its YAML tag handlers in a package-level map on every call, so
// two parallel tests parsing the template race.
var provisionMu sync.Mutex

func newHarness(t *testing.T, handled []string) *harness {
	t.Helper()
	needs.Emulator(t) // before the lock: a skip under it would hold it
	provisionMu.Lock()
	stack := testenv.Provision(t, nil)
	provisionMu.Unlock()
	h := &harness{t: t, stack: stack, fake: stripefake.New(), types: handled, logs: &testenv.Buffer{}, now: time.Now()}
	t.Cleanup(h.fake.Close)
	// Count BatchGetItem calls as the SDK sends them.
	h.db = dynamodb.NewFromConfig(h.stack.AWS, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc(
				"CountBatchGetItem",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if _, ok := in.Parameters.(*dynamodb.BatchGetItemInput); ok {
						h.batchGets.Add(1)
					}
					return next.HandleInitialize(ctx, in)
				},
			), middleware.After)
		})
	})
	h.events = &store.Events{DB: h.db, Table: h.stack.Table("EventsTable"), Retention: 90 * 24 * time.Hour}
	h.queue = &queue.Queue{Client: h.stack.SQS, URL: h.stack.Queue("WebhookQueue").URL}
	set := map[string]bool{}
	for _, ty := range handled {
		set[ty] = true
	}
	h.ingester = &ingest.Ingester{Store: h.events, Queue: h.queue, Provider: event.ProviderStripe, Handled: func(ty string) bool { return set[ty] }}
	return h
}

// reconciler builds a Reconciler with a stripe client holding key.
func (h *harness) reconciler(key string, mod func(*reconcile.Config)) *reconcile.Reconciler {
	h.t.Helper()
	// A minute, not stripeapi's 20 s: a test may hold a request while
	// another run works, and a timeout would turn it into a retry.
	stripe, err := stripeapi.New(stripeapi.Config{Key: key, BaseURL: h.fake.URL, RateLimit: 1000, HTTPClient: &http.Client{Timeout: time.Minute}})
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := reconcile.Config{
		Stripe:          stripe,
		Events:          h.events,
		Checkpoints:     &store.Checkpoints{DB: h.db, Table: h.stack.Table("EventsTable")},
		Ingester:        h.ingester,
		Queue:           h.queue,
		Types:           h.types,
		ThrottleBackoff: time.Millisecond,
		Logger:          slog.New(slog.NewJSONHandler(h.logs, nil)),
		// A deployment whose reconciliation started before the events the
		// tests seed (a first run starts a month back); a new one's first
		// run is TestAFirstRunReplaysNoHistory's.
		FirstLookback: reconcile.Retention,
	}
	if mod != nil {
		mod(&cfg)
	}
	r, err := reconcile.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// seed adds n events of the handled types to the fake, created over the
// two hours before the settle delay; it returns them oldest first.
func (h *harness) seed(n int) []event.Envelope {
	h.t.Helper()
	base := h.now.Add(-reconcile.DefaultSettle - 2*time.Hour).Unix()
	var envs []event.Envelope
	var bodies [][]byte
	for i := range n {
		body := h.build(h.types[i%len(h.types)], base+int64(i*7200/n))
		env, err := event.DecodeEnvelope(body)
		if err != nil {
			h.t.Fatal(err)
		}
		envs = append(envs, env)
		bodies = append(bodies, body)
	}
	if err := h.fake.Add(bodies...); err != nil {
		h.t.Fatal(err)
	}
	return envs
}

func (h *harness) build(typ string, created int64) []byte {
	h.t.Helper()
	body, err := stripefixture.Build(typ, stripefixture.Options{Created: created, ObjectID: stripefixture.NewID("sub_"), Customer: "cus_reconcile"})
	if err != nil {
		h.t.Fatal(err)
	}
	return body
}

// deliverAllBut stores every event as its webhook would have, as processed
// records, except skip; it returns the skipped ids.
func (h *harness) deliverAllBut(envs []event.Envelope, skip int) map[string]bool {
	h.t.Helper()
	missing := map[string]bool{}
	for _, i := range rand.Perm(len(envs))[:skip] {
		missing[envs[i].ID] = true
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(envs))
	sem := make(chan struct{}, 8)
	for _, env := range envs {
		if missing[env.ID] {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body := []byte(`{"id":"` + env.ID + `"}`)
			rec := event.NewRecord(event.ProviderStripe, env, body, ingest.Hash(body), event.SourceWebhook, event.StatusProcessed, h.now)
			existing, err := h.events.Create(context.Background(), &rec)
			// An existing record with this very payload is this put's own
			// write, met again by the SDK's retry after an answer that came
			// too late on a loaded machine: the record is stored.
			if err != nil || (existing != nil && existing.PayloadHash != rec.PayloadHash) {
				errs <- fmt.Errorf("store %s: %v (existing %v)", env.ID, err, existing)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Fatal(err)
	}
	h.batchGets.Store(0)
	return missing
}

// startProcessor runs the processor on the queue, as Lambda's event source
// mapping would, until the test ends.
func (h *harness) startProcessor() {
	h.t.Helper()
	c := processorboot.Defaults()
	c.EventsTable, c.MirrorTable = h.stack.Table("EventsTable"), h.stack.Table("MirrorTable")
	c.QueueURL, c.MaxReceiveCount = h.stack.Queue("WebhookQueue").URL, 5
	logs := &testenv.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	h.t.Cleanup(func() {
		if h.t.Failed() {
			h.t.Logf("processor log:\n%s", logs.String())
		}
	})
	proc, err := processorboot.New(context.Background(), c, h.stack.AWS, logger, h.effects)
	if err != nil {
		h.t.Fatal(err)
	}
	fn, err := h.stack.Template.Function(devstack.ProcessorID)
	if err != nil {
		h.t.Fatal(err)
	}
	src, err := fn.SQS()
	if err != nil {
		h.t.Fatal(err)
	}
	q := h.stack.Queue("WebhookQueue")
	p := &poller.Poller{SQS: h.stack.SQS, QueueURL: q.URL, QueueARN: q.ARN, Source: src, Handler: proc.Handle,
		Function: devstack.ProcessorID, Timeout: 30 * time.Second, Workers: 2, Logger: logger}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	h.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// records reads the records of ids (nil for a missing one).
func (h *harness) records(ids []string) map[string]*event.Record {
	h.t.Helper()
	out := map[string]*event.Record{}
	for _, id := range ids {
		r, err := h.events.Get(context.Background(), event.ProviderStripe, id)
		switch {
		case err == nil:
			out[id] = &r
		case err == store.ErrNotFound:
			out[id] = nil
		default:
			h.t.Fatal(err)
		}
	}
	return out
}

// reconciledBy returns the ids whose record was stored by the reconciler. It
// reads them with a client that is not counted.
func (h *harness) reconciledBy(envs []event.Envelope) map[string]bool {
	h.t.Helper()
	uncounted := &store.Events{DB: h.stack.DynamoDB, Table: h.events.Table}
	got := map[string]bool{}
	for _, e := range envs {
		r, err := uncounted.Get(context.Background(), event.ProviderStripe, e.ID)
		if err != nil {
			h.t.Fatalf("record of %s: %v", e.ID, err)
		}
		if r.Source == event.SourceReconciler {
			got[r.ID] = true
		}
	}
	return got
}

func (h *harness) checkpoint(r *reconcile.Reconciler, i int) store.Checkpoint {
	h.t.Helper()
	cp, err := r.LoadCheckpoint(context.Background(), r.Groups()[i])
	if err != nil {
		h.t.Fatal(err)
	}
	return cp
}

// runLines returns the "reconcile run" log lines.
func (h *harness) runLines() []map[string]any { return runLinesIn(h.logs.String()) }

// runLinesIn returns the "reconcile run" lines of logs.
func runLinesIn(logs string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "reconcile run" {
			out = append(out, m)
		}
	}
	return out
}

func sameCheckpoint(a, b store.Checkpoint) bool {
	return a.Name == b.Name && a.Seq == b.Seq && a.DoneThrough == b.DoneThrough && a.WindowFrom == b.WindowFrom &&
		a.WindowTo == b.WindowTo && a.Cursor == b.Cursor && a.CursorCreated == b.CursorCreated &&
		a.UpdatedAt.Equal(b.UpdatedAt) && a.RunID == b.RunID
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func TestMissingEventsAreIngestedAndProcessed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	envs := h.seed(250)
	missing := h.deliverAllBut(envs, 7)
	h.startProcessor()
	r := h.reconciler("sk_test_reconcile", nil)

	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Listed != 250 || res.Missing != 7 || res.Pages != 3 || res.Stopped != "" || res.Raced != 0 {
		t.Fatalf("run: got %+v, want 250 listed, 7 missing, 3 pages, complete", res)
	}
	if n := len(h.fake.Lists()); n != 3 {
		t.Errorf("Stripe list calls: got %d, want 3", n)
	}
	if n := h.batchGets.Load(); n != 3 {
		t.Errorf("BatchGetItem calls: got %d, want 3 (one per page)", n)
	}
	if got := h.reconciledBy(envs); !sameSet(got, missing) {
		t.Fatalf("records stored by the reconciler: got %v, want exactly the undelivered %v", got, missing)
	}
	ids := slices.Collect(func(yield func(string) bool) {
		for id := range missing {
			if !yield(id) {
				return
			}
		}
	})
	testenv.Eventually(t, 30*time.Second, "the missing events to be processed", func() bool {
		for _, r := range h.records(ids) {
			if r == nil || r.Status != event.StatusProcessed {
				return false
			}
		}
		return true
	})

	cp := h.checkpoint(r, 0)
	if cp.DoneThrough == 0 || cp.WindowTo != 0 || cp.Cursor != "" {
		t.Errorf("checkpoint after a complete run: got %+v, want done and no window in progress", cp)
	}
	if age := res.CheckpointAge; age < reconcile.DefaultSettle || age > reconcile.DefaultSettle+time.Minute {
		t.Errorf("checkpoint age: got %s, want about the settle delay %s", age, reconcile.DefaultSettle)
	}

	// One log line per run, carrying the metrics as EMF.
	lines := h.runLines()
	if len(lines) != 1 {
		t.Fatalf("run log lines: got %d, want 1", len(lines))
	}
	line := lines[0]
	if line["missing_found"] != 7.0 || line["listed"] != 250.0 || line["pages"] != 3.0 || line["outcome"] != "complete" || line["function"] != "reconciler" {
		t.Errorf("run line: got %v", line)
	}
	emf := line["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if fmt.Sprint(emf["Dimensions"]) != "[[function]]" || emf["Namespace"] != "WebhookInbox" {
		t.Errorf("EMF directive: got %v", emf)
	}

	// The next run lists only the overlap and ingests nothing again.
	h.fake.ResetRequests()
	res, err = r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing != 0 || res.Stopped != "" {
		t.Errorf("second run: got %+v, want nothing missing", res)
	}
	from := cp.DoneThrough - int64(reconcile.DefaultOverlap/time.Second)
	inOverlap := 0
	for _, e := range envs {
		if e.Created >= from {
			inOverlap++
		}
	}
	lists := h.fake.Lists()
	if want := (inOverlap + 99) / 100; len(lists) != want || res.Listed != inOverlap {
		t.Fatalf("second run: got %d list calls for %d events, want %d for the %d events of the overlap", len(lists), res.Listed, want, inOverlap)
	}
	if gte, _ := lists[0].Created("gte"); gte != from {
		t.Errorf("second run created[gte]: got %d, want the checkpoint minus the overlap %d", gte, from)
	}
}

func TestInterruptedRunResumesFromTheCheckpoint(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	envs := h.seed(250)
	missing := h.deliverAllBut(envs, 7)

	// Run 1 runs out of time after its first page: its clock jumps past the
	// deadline margin as the page is reported.
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	r := h.reconciler("sk_test_reconcile", func(c *reconcile.Config) { c.Now = clock })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res1, err := r.Run(ctx, reconcile.RunOptions{Progress: func(p reconcile.Progress) {
		if p.Pages == 1 {
			skew.Store(int64(5 * time.Minute))
		}
	}})
	skew.Store(0)
	if err != nil {
		t.Fatal(err)
	}
	if res1.Pages != 1 || res1.Stopped != outcome.StopDeadline {
		t.Fatalf("run 1: got %+v, want 1 page then a deadline stop", res1)
	}
	cp := h.checkpoint(r, 0)
	if cp.WindowTo == 0 || cp.Cursor == "" || cp.DoneThrough != cp.HistoryBefore {
		t.Fatalf("checkpoint after run 1: got %+v, want a window in progress with a cursor, done through the group's start only", cp)
	}

	// Run 2 has a budget of one page.
	res2, err := r.Run(context.Background(), reconcile.RunOptions{MaxPages: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Pages != 1 || res2.Stopped != outcome.StopMaxPages {
		t.Fatalf("run 2: got %+v, want 1 page then max_pages", res2)
	}
	res3, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res3.Pages != 1 || res3.Stopped != "" {
		t.Fatalf("run 3: got %+v, want the last page, complete", res3)
	}

	lists := h.fake.Lists()
	if len(lists) != 3 {
		t.Fatalf("list calls over three runs: got %d, want 3 (no page listed twice)", len(lists))
	}
	if got := lists[1].Query.Get("starting_after"); got != cp.Cursor {
		t.Errorf("run 2 resumed after %q, want the checkpoint's cursor %q", got, cp.Cursor)
	}
	gte0, _ := lists[0].Created("gte")
	lte0, _ := lists[0].Created("lte")
	for _, l := range lists[1:] {
		gte, _ := l.Created("gte")
		lte, _ := l.Created("lte")
		// The lower bound only follows Stripe's retention forward.
		if gte < gte0 || gte > gte0+60 || lte != lte0 {
			t.Errorf("a resumed request changed the window: got [%d, %d], want [%d, %d]", gte, lte, gte0, lte0)
		}
	}
	if n := res1.Missing + res2.Missing + res3.Missing; n != 7 {
		t.Errorf("missing over three runs: got %d, want 7", n)
	}
	if got := h.reconciledBy(envs); !sameSet(got, missing) {
		t.Errorf("records stored by the reconciler: got %v, want %v", got, missing)
	}
	if cp := h.checkpoint(r, 0); cp.DoneThrough == 0 || cp.WindowTo != 0 {
		t.Errorf("checkpoint at the end: got %+v, want done", cp)
	}
}

func TestRateLimitStormStopsCleanlyAndResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	envs := h.seed(250)
	missing := h.deliverAllBut(envs, 7)

	// A few 429s and a 503 in a row: backed off and absorbed.
	h.fake.FailNext(2, http.StatusTooManyRequests)
	h.fake.FailNext(1, http.StatusServiceUnavailable)
	h.fake.FailNext(1, http.StatusTooManyRequests)
	r := h.reconciler("sk_test_reconcile", func(c *reconcile.Config) { c.MaxPages = 1 })
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Throttled != 3 || res.Pages != 1 {
		t.Fatalf("run 1: got %+v, want 3 throttles then a page", res)
	}
	cp1 := h.checkpoint(r, 0)

	// A storm: more 429s in a row than the run tolerates.
	h.fake.FailNext(reconcile.DefaultMaxThrottles+2, http.StatusTooManyRequests)
	r2 := h.reconciler("sk_test_reconcile", nil)
	res, err = r2.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != outcome.StopRateLimited || res.Pages != 0 || res.Throttled != reconcile.DefaultMaxThrottles {
		t.Fatalf("run in a storm: got %+v, want a clean rate_limited stop", res)
	}
	if cp := h.checkpoint(r, 0); !sameCheckpoint(cp, cp1) {
		t.Fatalf("checkpoint after the storm: got %+v, want unchanged %+v", cp, cp1)
	}

	// The storm passes (two 429s left): the next run finishes the window.
	res, err = r2.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "" || res.Pages != 2 {
		t.Fatalf("run after the storm: got %+v, want the remaining 2 pages", res)
	}
	if got := h.reconciledBy(envs); !sameSet(got, missing) {
		t.Errorf("records stored by the reconciler: got %v, want %v", got, missing)
	}
	var resumed []string
	for _, l := range h.fake.Lists() {
		if l.Status == http.StatusOK {
			resumed = append(resumed, l.Query.Get("starting_after"))
		}
	}
	if len(resumed) != 3 || resumed[0] != "" || resumed[1] != cp1.Cursor {
		t.Errorf("pages answered: got starting_after %q, want 3 pages, the second after %q", resumed, cp1.Cursor)
	}
}

func TestNeverRequestsExpiredEventsOrOtherTypes(t *testing.T) {
	t.Parallel()
	// 24 handled types: two types[] groups.
	h := newHarness(t, mirror.Types)
	now := h.now
	var bodies [][]byte
	old := h.build("invoice.paid", now.Add(-31*24*time.Hour).Unix())
	other := h.build("charge.succeeded", now.Add(-time.Hour).Unix())
	recent := h.build("invoice.paid", now.Add(-time.Hour).Unix())
	bodies = append(bodies, old, other, recent)
	if err := h.fake.Add(bodies...); err != nil {
		t.Fatal(err)
	}
	r := h.reconciler("sk_test_reconcile", nil)
	if len(r.Groups()) != 2 {
		t.Fatalf("groups: got %d, want 2 for %d types", len(r.Groups()), len(mirror.Types))
	}
	// No checkpoint yet, then a sweep reaching further back than Stripe keeps.
	if _, err := r.Run(context.Background(), reconcile.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	before := h.checkpoint(r, 0)
	if _, err := r.Run(context.Background(), reconcile.RunOptions{Since: 40 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if after := h.checkpoint(r, 0); !sameCheckpoint(after, before) {
		t.Errorf("a since sweep moved the checkpoint: got %+v, want %+v", after, before)
	}
	floor := time.Now().Add(-reconcile.Retention).Unix()
	handled := map[string]bool{}
	for _, ty := range mirror.Types {
		handled[ty] = true
	}
	requested := map[string]bool{}
	lists := h.fake.Lists()
	if len(lists) != 4 {
		t.Errorf("list calls: got %d, want 4 (2 groups, 2 runs)", len(lists))
	}
	for _, l := range lists {
		gte, ok := l.Created("gte")
		if !ok || gte < floor {
			t.Errorf("request reaches past Stripe's retention: created[gte]=%d, floor %d", gte, floor)
		}
		tys := l.Types()
		if len(tys) == 0 || len(tys) > stripeapi.MaxTypes {
			t.Errorf("request with %d types", len(tys))
		}
		for _, ty := range tys {
			if !handled[ty] {
				t.Errorf("request for a type outside the allowlist: %s", ty)
			}
			requested[ty] = true
		}
	}
	if len(requested) != len(mirror.Types) {
		t.Errorf("types requested: got %d, want all %d handled", len(requested), len(mirror.Types))
	}
	envOf := func(b []byte) event.Envelope { e, _ := event.DecodeEnvelope(b); return e }
	got := h.records([]string{envOf(old).ID, envOf(other).ID, envOf(recent).ID})
	if got[envOf(old).ID] != nil || got[envOf(other).ID] != nil || got[envOf(recent).ID] == nil {
		t.Errorf(
			"ingested: old %v, other type %v, recent %v; want only the recent one",
			got[envOf(old).ID] != nil,
			got[envOf(other).ID] != nil,
			got[envOf(recent).ID] != nil,
		)
	}
}

func TestStuckRecordsAreRequeuedAndProcessed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	ctx := context.Background()
	long := h.now.Add(-reconcile.DefaultStuckAfter - 5*time.Minute)
	put := func(status event.Status, at time.Time) string {
		body := h.build("invoice.paid", at.Unix())
		env, _ := event.DecodeEnvelope(body)
		rec := event.NewRecord(event.ProviderStripe, env, body, ingest.Hash(body), event.SourceWebhook, status, at)
		if _, err := h.events.Create(ctx, &rec); err != nil {
			t.Fatal(err)
		}
		return env.ID
	}
	stuck := []string{put(event.StatusReceived, long), put(event.StatusReceived, long.Add(-time.Hour)), put(event.StatusFailed, long)}
	fresh := put(event.StatusReceived, h.now.Add(-time.Minute))
	dead := put(event.StatusDeadLettered, long)
	h.startProcessor()

	res, err := h.reconciler("sk_test_reconcile", nil).Run(ctx, reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stuck != 3 {
		t.Fatalf("stuck re-enqueued: got %d, want 3", res.Stuck)
	}
	testenv.Eventually(t, 30*time.Second, "the stuck events to be processed", func() bool {
		for _, r := range h.records(stuck) {
			if r == nil || r.Status != event.StatusProcessed {
				return false
			}
		}
		return true
	})
	got := h.records([]string{fresh, dead})
	if got[fresh].Status != event.StatusReceived || got[dead].Status != event.StatusDeadLettered {
		t.Errorf("not stuck: fresh is %s, dead-lettered is %s; want both untouched", got[fresh].Status, got[dead].Status)
	}
}

// TestStuckRecordsOfEveryProviderAreRequeued: a GitHub delivery stored but
// never enqueued (its sender got a 5xx and GitHub does not retry) is found
// by the same sweep as Stripe's, and processed.
func TestStuckRecordsOfEveryProviderAreRequeued(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	ctx := context.Background()
	long := h.now.Add(-reconcile.DefaultStuckAfter - 5*time.Minute)
	body := []byte(`{"action":"opened","number":1}`)
	env := event.Envelope{ID: fmt.Sprintf("gh-%d", time.Now().UnixNano()), Type: "pull_request.opened", Created: long.Unix()}
	rec := event.NewRecord("github", env, body, ingest.Hash(body), event.SourceWebhook, event.StatusReceived, long)
	if _, err := h.events.Create(ctx, &rec); err != nil {
		t.Fatal(err)
	}
	h.startProcessor()

	res, err := h.reconciler("sk_test_reconcile", nil).Run(ctx, reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stuck != 1 {
		t.Fatalf("stuck re-enqueued: got %d, want the GitHub record", res.Stuck)
	}
	testenv.Eventually(t, 30*time.Second, "the GitHub event to be processed", func() bool {
		r, err := h.events.Get(ctx, "github", env.ID)
		return err == nil && r.Status == event.StatusProcessed
	})
}

func TestOverlappingRunsCannotMoveTheCheckpointBackwards(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	envs := h.seed(250)
	missing := h.deliverAllBut(envs, 7)

	// Run A is held before its second page until run B has finished.
	paused, release := make(chan struct{}), make(chan struct{})
	var aLists atomic.Int32
	h.fake.OnRequest(func(req *http.Request) {
		if req.URL.Path == "/v1/events" && req.Header.Get("Authorization") == "Bearer sk_test_A" && aLists.Add(1) == 2 {
			close(paused)
			<-release
		}
	})
	a := h.reconciler("sk_test_A", nil)
	b := h.reconciler("sk_test_B", nil)
	type ended struct {
		res reconcile.Result
		err error
	}
	aDone := make(chan ended, 1)
	go func() {
		res, err := a.Run(context.Background(), reconcile.RunOptions{})
		aDone <- ended{res, err}
	}()
	select {
	case <-paused:
	case o := <-aDone:
		t.Fatalf("run A ended before its second page: %+v %v", o.res, o.err)
	case <-time.After(30 * time.Second):
		t.Fatal("run A never asked for its second page")
	}
	afterA := h.checkpoint(a, 0)
	if afterA.Cursor == "" {
		t.Fatalf("checkpoint after A's first page: got %+v, want a cursor", afterA)
	}

	resB, err := b.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if resB.Stopped != "" || resB.Pages != 2 {
		t.Fatalf("run B: got %+v, want A's window finished from A's cursor: 2 pages", resB)
	}
	afterB := h.checkpoint(a, 0)
	if afterB.DoneThrough == 0 || afterB.WindowTo != 0 || afterB.Seq != afterA.Seq+2 {
		t.Fatalf("checkpoint after B: got %+v, want done, two writes after A's", afterB)
	}

	close(release)
	o := <-aDone
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Stopped != outcome.StopCheckpointMoved {
		t.Fatalf("run A after B: got %+v, want a checkpoint_moved stop", o.res)
	}
	if final := h.checkpoint(a, 0); !sameCheckpoint(final, afterB) {
		t.Fatalf("checkpoint after A's late page: got %+v, want B's %+v untouched", final, afterB)
	}
	if n := o.res.Missing + resB.Missing; n != 7 {
		t.Errorf("missing over both runs: got %d, want 7", n)
	}
	if got := h.reconciledBy(envs); !sameSet(got, missing) {
		t.Errorf("records stored by the reconciler: got %v, want %v", got, missing)
	}
}

func TestWrongModeKeyFailsTheRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	body, err := stripefixture.Build("invoice.paid", stripefixture.Options{Created: h.now.Add(-time.Hour).Unix(), Livemode: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fake.Add(body); err != nil {
		t.Fatal(err)
	}
	r := h.reconciler("sk_live_wrong", nil)
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "wrong mode") {
		t.Fatalf("got %v, want ErrWrongMode", err)
	}
	if res.Missing != 0 {
		t.Errorf("ingested %d events of the other mode", res.Missing)
	}
	// The group's start is recorded before its first request; no progress.
	if cp := h.checkpoint(r, 0); cp.Seq != 1 || cp.DoneThrough != cp.HistoryBefore || cp.InProgress() {
		t.Errorf("checkpoint after a failed run: %+v, want the group's start only", cp)
	}
	if lines := h.runLines(); len(lines) != 1 || lines[0]["outcome"] != "aborted" || lines[0]["level"] != "ERROR" {
		t.Errorf("run line: got %v, want one aborted line at ERROR", lines)
	}
}

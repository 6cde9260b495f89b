// Package loadtest drives the local stack with a realistic, hostile stream of
// deliveries and checks the pipeline's invariants afterwards: every event
// processed exactly once, none lost, and the mirror equal to the
// chronological ground truth.
//
// The stream is what a payment provider produces on a bad day: a share of
// events delivered twice, a share delivered after newer events of the same
// object, a share never delivered at all (left to the reconciler), and AWS
// faults injected at a configurable rate by a proxy in front of the emulator.
package loadtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// Config shapes a run.
type Config struct {
	// Deliveries is the number of deliveries to make (duplicates included).
	Deliveries  int
	Concurrency int
	// Shares of events: delivered twice, delivered late (after newer events
	// of the same object), never delivered.
	Duplicate, Reorder, Missing float64
	// FaultRate is the probability of a fault on each of the pipeline's AWS
	// writes (throttling, errors, lost answers).
	FaultRate float64
	Seed      uint64
	// Endpoints are the AWS emulators'.
	Endpoints emulator.Endpoints
	// Template is the path of template.yaml.
	Template string
	// Progress receives a progress bar; nil for none.
	Progress func(done, total int)
	// Timeout bounds the whole run.
	Timeout time.Duration
}

// Result is what a run measured. Lost and DoubleEffects must be zero.
type Result struct {
	Events, Deliveries, Duplicates int
	// DuplicatesAbsorbed counts deliveries answered as duplicates.
	DuplicatesAbsorbed        int
	Reordered, NeverDelivered int
	// FoundByReconciler counts never-delivered events the reconciler ingested.
	FoundByReconciler int
	// StuckRequeued counts records the reconciler's sweep sent again.
	StuckRequeued  int
	FaultsInjected int
	// Retries counts delivery attempts after a non-2xx answer or a broken
	// connection, as the provider would retry them.
	Retries int
	// DeadLettered counts events that ended dead_lettered (visible, not lost).
	DeadLettered int
	// Lost counts events with no record, or a record never finished.
	Lost int
	// DoubleEffects counts events whose effect was committed more than once.
	DoubleEffects int
	// RepeatedCalls counts repeated downstream calls with one idempotency
	// key (absorbed by the key).
	RepeatedCalls int
	// MirrorMismatches counts objects whose snapshot differs from the
	// chronological ground truth.
	MirrorMismatches int
	Elapsed          time.Duration
	Throughput       float64 // events per second, delivery start to all processed
	LatencyP50       time.Duration
	LatencyP99       time.Duration
}

// OK reports whether the invariants held.
func (r Result) OK() bool {
	return r.Lost == 0 && r.DoubleEffects == 0 && r.MirrorMismatches == 0
}

// downstream is the team's application: it counts calls per idempotency
// key, as an idempotent application keys its work.
type downstream struct {
	mu    sync.Mutex
	calls map[string]int
}

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	d.mu.Lock()
	d.calls[r.Header.Get("Idempotency-Key")]++
	d.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// Run performs a load test: it plans the stream, builds the world around
// a local stack, delivers, lets the reconciler repair what was never
// delivered, waits until every event is finished, and checks the
// invariants.
func Run(ctx context.Context, c Config) (Result, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	evs, order, res := stream(c)
	w, err := startWorld(ctx, c, evs)
	if err != nil {
		return res, err
	}
	defer w.close()
	w.injectFaults(c.FaultRate)

	start := time.Now()
	if err := w.deliver(ctx, order, &res); err != nil {
		return res, err
	}
	rec, err := w.reconciler(ctx)
	if err != nil {
		return res, err
	}
	if err := repair(ctx, rec, &res); err != nil {
		return res, err
	}
	if err := w.waitFinished(ctx, rec, &res); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	res.Throughput = float64(len(evs)) / res.Elapsed.Seconds()
	res.FaultsInjected = w.proxy.Injected()
	w.proxy.Clear()
	return res, w.check(ctx, &res)
}

// world is what a run drives and reads: Stripe's API holding every event,
// the team's application downstream, a fault proxy in front of the
// emulator, and the local stack behind it.
type world struct {
	c      Config
	evs    []ev
	fake   *stripefake.Server
	down   *downstream
	dsrv   *httptest.Server
	proxy  *faultproxy.Proxy
	psrv   *httptest.Server
	stack  *devstack.Stack
	cfg    aws.Config // through the fault proxy
	db     *dynamodb.Client
	events *store.Events
	// mirrorTable holds the ledger effect's items beside the mirror.
	mirrorTable string
	effects     *effect.Registry
	closers     []func()
}

func (w *world) close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}

// startWorld builds the world and starts the local stack in it.
func startWorld(ctx context.Context, c Config, evs []ev) (*world, error) {
	w := &world{c: c, evs: evs, fake: stripefake.New(), down: &downstream{calls: map[string]int{}}}
	w.closers = append(w.closers, w.fake.Close)
	for _, e := range evs {
		if err := w.fake.Add(e.body); err != nil {
			w.close()
			return nil, err
		}
	}
	w.dsrv = httptest.NewServer(w.down)
	w.closers = append(w.closers, w.dsrv.Close)
	var err error
	if w.proxy, err = faultproxy.New(c.Endpoints); err != nil {
		w.close()
		return nil, err
	}
	w.psrv = httptest.NewServer(w.proxy)
	w.closers = append(w.closers, w.psrv.Close)
	if w.cfg, err = emulator.Config(ctx, emulator.One(w.psrv.URL)); err != nil {
		w.close()
		return nil, err
	}
	direct, err := emulator.Config(ctx, c.Endpoints)
	if err != nil {
		w.close()
		return nil, err
	}
	prefix := "load-" + stripefixture.NewID("")[:8]
	w.mirrorTable = prefix + "-MirrorTable"
	w.effects = w.ledger()
	w.stack, err = devstack.Start(ctx, devstack.Options{
		Template: c.Template,
		Overrides: map[string]string{
			"ProcessorTimeout": "10", "QueueVisibilityTimeout": "20", "MaxReceiveCount": "8",
		},
		Prefix:         prefix,
		Addr:           "127.0.0.1:0",
		Env:            map[string]string{"FORWARD_URL": w.dsrv.URL, "FORWARD_SECRET": "fwd_load", "RETRY_BACKOFF_BASE": "1s", "STRIPE_API_BASE": w.fake.URL},
		APIKey:         "sk_test_load",
		Effects:        w.effects,
		ReconcileEvery: -1,
		AWS:            w.cfg,
		Logger:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		w.close()
		return nil, err
	}
	w.closers = append(w.closers, w.stack.Close)
	w.db = dynamodb.NewFromConfig(direct)
	w.events = &store.Events{DB: w.db, Table: prefix + "-EventsTable"}
	return w, nil
}

// ledger is the team's effects: one that counts commits per event in the
// same transaction as the status, so a count above one is an effect
// applied twice.
func (w *world) ledger() *effect.Registry {
	effects := &effect.Registry{}
	effects.On(effect.Func{HandlerName: "ledger", Fn: func(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
		return []types.TransactWriteItem{{Update: &types.Update{
			TableName:                 aws.String(w.mirrorTable),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ledger#" + ev.Record.ID}},
			UpdateExpression:          aws.String("ADD commits :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		}}}, nil
	}}, "*")
	return effects
}

// injectFaults sets the proxy's faults at rate.
func (w *world) injectFaults(rate float64) {
	if rate <= 0 {
		return
	}
	w.proxy.Set(
		// A quarter of the rate outlasts the SDK's retries: the receiver
		// answers 5xx and the delivery is retried, or the processor
		// records a failure and the message comes back.
		faultproxy.Rule{Service: "dynamodb", Operation: "PutItem", Action: faultproxy.Throttle, Probability: rate / 4, Sticky: true},
		faultproxy.Rule{Service: "sqs", Operation: "SendMessage", Action: faultproxy.Error, Probability: rate / 4, Sticky: true},
		faultproxy.Rule{Service: "dynamodb", Operation: "TransactWriteItems", Action: faultproxy.Error, Probability: rate / 4, Sticky: true},
		// The rest are absorbed by the SDK's retries, or (an answer
		// dropped after the commit) by the writes' idempotency.
		faultproxy.Rule{Service: "dynamodb", Operation: "PutItem", Action: faultproxy.Throttle, Probability: rate},
		faultproxy.Rule{Service: "sqs", Operation: "SendMessage", Action: faultproxy.Error, Probability: rate},
		faultproxy.Rule{Service: "dynamodb", Operation: "UpdateItem", Action: faultproxy.Throttle, Probability: rate},
		faultproxy.Rule{Service: "dynamodb", Operation: "TransactWriteItems", Action: faultproxy.Error, Probability: rate},
		faultproxy.Rule{Service: "dynamodb", Operation: "TransactWriteItems", Action: faultproxy.DropAfter, Probability: rate / 2},
	)
}

// deliver makes every delivery of order and records the latencies and
// retries in res.
func (w *world) deliver(ctx context.Context, order []int, res *Result) error {
	lat, retries, err := deliver(ctx, w.stack.URL+"/webhooks/stripe", w.evs, order, w.c)
	if err != nil {
		return err
	}
	// Every delivery was accepted (deliver retries until it is); those
	// beyond one per delivered event were duplicates the pipeline absorbed.
	res.Retries, res.DuplicatesAbsorbed = retries, len(order)-(len(w.evs)-res.NeverDelivered)
	slices.Sort(lat)
	if len(lat) > 0 {
		res.LatencyP50 = lat[len(lat)/2]
		res.LatencyP99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return nil
}

// reconciler builds the reconciler as the scheduled one runs, over the
// Stripe stand-in, through the fault proxy.
func (w *world) reconciler(ctx context.Context) (*reconcile.Reconciler, error) {
	c, err := reconcilerboot.ConfigFromEnv(func(k string) string { return w.stack.FunctionEnv[devstack.ReconcilerID][k] }, w.cfg)
	if err != nil {
		return nil, fmt.Errorf("loadtest: reconciler: %w", err)
	}
	c.APIBase, c.Key = w.fake.URL, secrets.Fixed("the stand-in's key", "sk_test_load")
	c.Settle = time.Second
	// The deployment predates the run's events (created from 2 hours
	// back): what it never received is a loss to find, not history from
	// before it.
	c.FirstLookback = 3 * time.Hour
	c.MaxPages = 1000
	// The schedule's 15 minutes, shrunk to the test's scale.
	c.StuckAfter = 10 * time.Second
	rec, err := reconcilerboot.New(ctx, c, w.cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), w.effects)
	if err != nil {
		return nil, fmt.Errorf("loadtest: reconciler: %w", err)
	}
	return rec, nil
}

// repair runs the reconciler over the run's window until one run
// completes, as the scheduled reconciler would repair what was never
// delivered: its AWS calls meet the injected faults too, and a failed run
// is run again, as the next scheduled run would be.
func repair(ctx context.Context, rec *reconcile.Reconciler, res *Result) error {
	for attempt := 0; ; attempt++ {
		rr, err := rec.Run(ctx, reconcile.RunOptions{Since: 3 * time.Hour})
		res.FoundByReconciler += rr.Missing
		if err == nil && rr.Stopped == "" {
			return nil
		}
		if attempt > 20 || ctx.Err() != nil {
			return fmt.Errorf("loadtest: reconcile did not complete: %v (stopped: %s)", err, rr.Stopped)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// finished counts the events processed or dead-lettered.
func (w *world) finished(ctx context.Context) (int, error) {
	n := 0
	for _, e := range w.evs {
		r, err := w.events.Get(ctx, event.ProviderStripe, e.id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if r.Status == event.StatusProcessed || r.Status == event.StatusDeadLettered {
			n++
		}
	}
	return n, nil
}

// waitFinished waits until every event is finished. Meanwhile the
// reconciler keeps running, as on its schedule: an event stored but whose
// enqueue met an outage stays received until its stuck-event sweep sends
// it again.
func (w *world) waitFinished(ctx context.Context, rec *reconcile.Reconciler, res *Result) error {
	lastRun := time.Now()
	for {
		n, err := w.finished(ctx)
		if err != nil {
			return err
		}
		if n < len(w.evs) && time.Since(lastRun) >= 10*time.Second {
			rr, _ := rec.Run(ctx, reconcile.RunOptions{})
			res.FoundByReconciler += rr.Missing
			res.StuckRequeued += rr.Stuck
			lastRun = time.Now()
		}
		if w.c.Progress != nil {
			w.c.Progress(res.Deliveries+n, res.Deliveries+len(w.evs))
		}
		if n == len(w.evs) {
			return nil
		}
		if pause.For(ctx, time.Second) != nil {
			res.Lost = len(w.evs) - n
			return fmt.Errorf("loadtest: %d of %d events unfinished when the time ran out", len(w.evs)-n, len(w.evs))
		}
	}
}

// check counts what broke an invariant: events lost or not finished,
// effects committed twice, repeated downstream calls, and objects whose
// snapshot differs from the chronological ground truth.
func (w *world) check(ctx context.Context, res *Result) error {
	for _, e := range w.evs {
		r, err := w.events.Get(ctx, event.ProviderStripe, e.id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			res.Lost++
			continue
		case err != nil:
			return err
		}
		if r.Status == event.StatusDeadLettered {
			res.DeadLettered++
			continue
		}
		if r.Status != event.StatusProcessed {
			res.Lost++
		}
		out, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.mirrorTable), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ledger#" + e.id}}})
		if err != nil {
			return err
		}
		if n, ok := out.Item["commits"].(*types.AttributeValueMemberN); ok && n.Value != "1" {
			res.DoubleEffects++
		}
		if calls := w.down.calls[e.id+":forward"]; calls > 1 {
			res.RepeatedCalls += calls - 1
		}
	}
	reader := &mirror.Reader{DB: w.db, Table: w.mirrorTable}
	for obj, want := range truth(w.evs) {
		snap, err := reader.Object(ctx, obj)
		if err != nil || snap.LastEventID != want.id || snap.Deleted != want.deleted {
			res.MirrorMismatches++
		}
	}
	return nil
}

// deliver makes the deliveries with c.Concurrency workers, retrying each
// until it is accepted, as the provider does.
func deliver(ctx context.Context, url string, evs []ev, order []int, c Config) (lat []time.Duration, retries int, err error) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: c.Concurrency}}
	work := make(chan int)
	var mu sync.Mutex
	var done, retried atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	for range max(c.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for idx := range work {
				e := evs[idx]
				for attempt := 0; ; attempt++ {
					if attempt > 0 {
						retried.Add(1)
						time.Sleep(min(50*time.Millisecond<<attempt, 2*time.Second))
					}
					t0 := time.Now()
					status, err := post(ctx, client, url, e.body)
					d := time.Since(t0)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
					if err == nil && status == 200 {
						break
					}
					if ctx.Err() != nil || attempt > 30 {
						mu.Lock()
						if firstErr == nil {
							firstErr = fmt.Errorf("loadtest: delivery of %s never accepted (last: %d %v)", e.id, status, err)
						}
						mu.Unlock()
						break
					}
				}
				if c.Progress != nil {
					c.Progress(int(done.Add(1)), len(order)+len(evs))
				}
			}
		}()
	}
	for _, idx := range order {
		select {
		case work <- idx:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return lat, int(retried.Load()), firstErr
}

func post(ctx context.Context, client *http.Client, url string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", provider.SignStripe(body, devstack.DefaultWebhookSecret, time.Now()))
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// effectLog counts the team's effect per event.
type effectLog struct {
	mu    sync.Mutex
	calls map[string]int
}

func (e *effectLog) registry() *effect.Registry {
	r := &effect.Registry{}
	r.On(effect.Func{HandlerName: "count", Fn: func(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
		e.mu.Lock()
		e.calls[ev.Record.ID]++
		e.mu.Unlock()
		return nil, nil
	}}, "*")
	return r
}

func (e *effectLog) count(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[id]
}

// TestAFirstRunReplaysNoHistory: a new deployment's first run starts its
// reconciliation one schedule period back and ingests nothing older, where
// it once listed 30 days back and ran the team's effects for every event
// in them. History is an operator's explicit choice: a sweep without
// --backfill lists none of it; a backfill ingests it with source backfill,
// which updates the mirror and runs no effect (outcome backfilled), unless
// asked to (WithEffects).
func TestAFirstRunReplaysNoHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	log := &effectLog{calls: map[string]int{}}
	h.effects = log.registry()
	h.startProcessor()
	ctx := context.Background()
	// Last month's events, which the team's old handler dealt with, and
	// one created after the deployment, whose webhook was lost.
	var history []string
	for _, ago := range []time.Duration{20 * 24 * time.Hour, 3 * 24 * time.Hour, 2 * time.Hour} {
		body := h.build("invoice.paid", h.now.Add(-ago).Unix())
		if err := h.fake.Add(body); err != nil {
			t.Fatal(err)
		}
		env, _ := event.DecodeEnvelope(body)
		history = append(history, env.ID)
	}
	lostBody := h.build("customer.subscription.created", h.now.Add(-7*time.Minute).Unix())
	if err := h.fake.Add(lostBody); err != nil {
		t.Fatal(err)
	}
	lost, _ := event.DecodeEnvelope(lostBody)

	// The first scheduled run of a deployment on rate(10 minutes).
	r := h.reconciler("sk_test_first", func(c *reconcile.Config) { c.FirstLookback = 10 * time.Minute })
	res, err := r.Run(ctx, reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing != 1 || res.Backfilled != 0 {
		t.Fatalf("first run: got %+v, want only the event created since the deployment", res)
	}
	for id, rec := range h.records(history) {
		if rec != nil {
			t.Errorf("first run: history event %s ingested (source %s)", id, rec.Source)
		}
	}
	h.waitProcessed(lost.ID)
	cp, err := r.LoadCheckpoint(ctx, r.Groups()[0])
	if want := time.Now().Add(-10 * time.Minute); err != nil || time.Unix(cp.HistoryBefore, 0).Sub(want).Abs() > time.Minute {
		t.Errorf("checkpoint: got since %v (%v), want the run's start less 10 minutes (about %v)", time.Unix(cp.HistoryBefore, 0), err, want)
	}

	// A repair sweep of the last 30 days lists no history either.
	if res, err := r.Run(ctx, reconcile.RunOptions{Since: reconcile.Retention}); err != nil || res.Missing != 0 || res.Backfilled != 0 {
		t.Fatalf("sweep without backfill: got %+v, %v; want nothing ingested", res, err)
	}

	// The backfill: history ingested, applied to the mirror, no effect.
	res, err = r.Run(ctx, reconcile.RunOptions{Since: reconcile.Retention, Backfill: true})
	if err != nil || res.Backfilled != len(history) || res.Missing != 0 {
		t.Fatalf("backfill: got %+v, %v; want %d backfilled, none missing", res, err, len(history))
	}
	for _, id := range history {
		rec := h.waitProcessed(id)
		if rec.Source != event.SourceBackfill || rec.Outcome != outcome.Backfilled || rec.MirrorKey == "" {
			t.Errorf("%s: source %s, outcome %s, mirror key %q; want backfill, backfilled, applied to the mirror", id, rec.Source, rec.Outcome, rec.MirrorKey)
		}
		if n := log.count(id); n != 0 {
			t.Errorf("%s: the team's effect ran %d times for history, want 0", id, n)
		}
	}
	if n := log.count(lost.ID); n != 1 {
		t.Errorf("the lost webhook's effect: ran %d times, want 1", n)
	}

	// History backfilled with its effects, when asked.
	oldBody := h.build("invoice.paid", h.now.Add(-5*24*time.Hour).Unix())
	if err := h.fake.Add(oldBody); err != nil {
		t.Fatal(err)
	}
	old, _ := event.DecodeEnvelope(oldBody)
	if res, err := r.Run(ctx, reconcile.RunOptions{Since: reconcile.Retention, Backfill: true, WithEffects: true}); err != nil || res.Backfilled != 1 {
		t.Fatalf("backfill with effects: got %+v, %v; want 1 backfilled", res, err)
	}
	if rec := h.waitProcessed(old.ID); rec.Source != event.SourceReconciler || rec.Outcome != outcome.Applied || log.count(old.ID) != 1 {
		t.Errorf("backfilled with effects: source %s, outcome %s, effect ran %d times; want reconciler, applied, 1", rec.Source, rec.Outcome, log.count(old.ID))
	}
}

// waitProcessed waits for id's record to be processed and returns it.
func (h *harness) waitProcessed(id string) event.Record {
	h.t.Helper()
	var rec event.Record
	testenv.Eventually(h.t, 30*time.Second, "event "+id+" processed", func() bool {
		var err error
		rec, err = h.events.Get(context.Background(), event.ProviderStripe, id)
		return err == nil && rec.Status == event.StatusProcessed
	})
	return rec
}

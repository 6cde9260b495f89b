package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

func TestReconcileFindsWhatNeverArrived(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	fake := stripefake.New()
	defer fake.Close()

	created := time.Now().Add(-2 * time.Hour).Unix()
	delivered := body(t, "invoice.paid", stripefixture.Options{ID: "evt_rc_delivered", Created: created})
	lost1 := body(t, "customer.created", stripefixture.Options{ID: "evt_rc_lost1", Created: created + 1})
	lost2 := body(t, "customer.subscription.updated", stripefixture.Options{ID: "evt_rc_lost2", Created: created + 2})
	if err := fake.Add(delivered, lost1, lost2); err != nil {
		t.Fatal(err)
	}
	w.store(delivered, event.SourceWebhook, event.StatusProcessed, time.Now())

	c := w.cli()
	c.t = t
	c.golden("reconcile_no_key", c.run(ctx, "reconcile").must(t, 2))

	c.env["STRIPE_API_KEY"] = "sk_test_reconcile"
	c.env["STRIPE_API_BASE"] = fake.URL
	// A deployment that started three hours ago: its reconciliation's
	// first run (this one) starts there.
	c.env["RECONCILE_SINCE"] = "3h"
	r := c.run(ctx, "reconcile", "--since", "24h", "--json").must(t, 0)
	var got ReconcileJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	// The 24 handled types make two listings of at most 20 types: one page each.
	if got.Listed != 3 || got.Missing != 2 || got.Pages != 2 || got.Stopped != "" {
		t.Errorf("result: got %+v, want 3 listed, 2 missing, 2 pages, reached the present", got)
	}
	if n := w.drain(); n != 2 {
		t.Errorf("messages enqueued by the reconciler: got %d, want 2", n)
	}
	for _, id := range []string{"evt_rc_lost1", "evt_rc_lost2"} {
		rec, err := w.events.Get(ctx, "stripe", id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Source != event.SourceReconciler || rec.Status != event.StatusProcessed || w.effectCount(id) != 1 {
			t.Errorf("%s: source %s status %s effects %d; want reconciler, processed, 1", id, rec.Source, rec.Status, w.effectCount(id))
		}
	}

	// A second sweep finds nothing missing.
	r = c.run(ctx, "reconcile", "--since", "24h", "--json").must(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Missing != 0 || got.Listed != 3 {
		t.Errorf("second sweep: got %+v, want nothing missing", got)
	}
}

// TestReconcileBackfill: history (events created before the deployment's
// reconciliation started) is listed only with --backfill, and then comes
// in for the mirror alone: processed, outcome backfilled, no effect run;
// --with-effects runs them.
func TestReconcileBackfill(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	fake := stripefake.New()
	defer fake.Close()
	old := body(t, "customer.subscription.created", stripefixture.Options{ID: "evt_bf_history", Created: time.Now().Add(-5 * 24 * time.Hour).Unix()})
	if err := fake.Add(old); err != nil {
		t.Fatal(err)
	}
	c := w.cli()
	c.t = t
	c.env["STRIPE_API_KEY"] = "sk_test_backfill"
	c.env["STRIPE_API_BASE"] = fake.URL
	c.run(ctx, "reconcile", "--backfill").must(t, 2)
	c.run(ctx, "reconcile", "--since", "30d", "--with-effects").must(t, 2)

	result := func(args ...string) ReconcileJSON {
		t.Helper()
		r := c.run(ctx, append([]string{"reconcile", "--json"}, args...)...).must(t, 0)
		var got ReconcileJSON
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		return got
	}
	// The first run of a new deployment, then a sweep: no history.
	if got := result(); got.Missing != 0 || got.Backfilled != 0 {
		t.Errorf("first run: got %+v, want nothing ingested", got)
	}
	if got := result("--since", "30d"); got.Missing != 0 || got.Backfilled != 0 {
		t.Errorf("sweep without --backfill: got %+v, want nothing ingested", got)
	}
	if got := result("--since", "30d", "--backfill"); got.Backfilled != 1 || got.Missing != 0 {
		t.Fatalf("backfill: got %+v, want 1 backfilled", got)
	}
	if n := w.drain(); n != 1 {
		t.Errorf("messages: got %d, want 1", n)
	}
	rec, err := w.events.Get(ctx, "stripe", "evt_bf_history")
	if err != nil || rec.Source != event.SourceBackfill || rec.Status != event.StatusProcessed || rec.Outcome != outcome.Backfilled ||
		w.effectCount(rec.ID) != 0 {
		t.Errorf("backfilled record: %+v (%v), effects %d; want source backfill, processed, outcome backfilled, no effect", rec, err, w.effectCount(rec.ID))
	}
	// Once stored, history is not backfilled again.
	if got := result("--since", "30d", "--backfill", "--with-effects"); got.Backfilled != 0 {
		t.Errorf("second backfill: got %+v, want nothing", got)
	}
}

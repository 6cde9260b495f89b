package audit_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
)

// TestAuditRunsAreKeptWithTheirRepairs: every run, dry or not, is kept in
// the events table's audit runs, newest first, with its summary and the
// objects it repaired (what changed, when); a run stopped mid-list is kept
// as resumable, with its cursor.
func TestAuditRunsAreKeptWithTheirRepairs(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	runs := &store.Runs{DB: w.db, Table: w.stack.Table("EventsTable")}
	w.a.Runs = runs
	w.mirrored(t, subEvent(t, "sub_kept", "cus_kept", "active", 1700000000))
	w.stripeHas(t, "sub_kept", "cus_kept", "canceled")
	w.stripeHas(t, "sub_new", "cus_new", "active")

	dry, err := w.a.Run(ctx, audit.Options{DryRun: true})
	if err != nil || dry.NotRecorded != "" {
		t.Fatalf("dry run: %v, not recorded %q", err, dry.NotRecorded)
	}
	res, err := w.a.Run(ctx, audit.Options{})
	if err != nil || res.NotRecorded != "" {
		t.Fatalf("run: %v, not recorded %q", err, res.NotRecorded)
	}
	got, err := runs.RecentAudits(ctx, event.ProviderStripe)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != res.RunID || got[1].ID != dry.RunID || !got[1].DryRun || got[0].DryRun {
		t.Fatalf("kept %+v: want the run, then the dry run", got)
	}
	last := got[0]
	if last.Listed != 2 || last.Matched != 0 || last.Repaired != 2 || last.MissingHere != 1 || last.Pages != 1 ||
		!last.Completed() || last.Resumable() || last.StartedAt.IsZero() || last.FinishedAt.Before(last.StartedAt) {
		t.Errorf("last run's summary: %+v; want listed 2, repaired 2, missing_here 1, 1 page, completed", last)
	}
	byID := map[string]store.AuditRepair{}
	for _, r := range last.Repairs {
		byID[r.ID] = r
	}
	kept, missing := byID["sub_kept"], byID["sub_new"]
	if kept.Customer != "cus_kept" || kept.Missing || len(kept.Changes) != 1 || kept.Changes[0] != "status: active → canceled" || kept.At.IsZero() {
		t.Errorf("sub_kept's repair: %+v; want customer cus_kept, status: active → canceled, with when", kept)
	}
	if !missing.Missing || missing.Customer != "cus_new" {
		t.Errorf("sub_new's repair: %+v; want a backfill of the missing subscription", missing)
	}

	for i := range 120 {
		w.stripeHas(t, "sub_more"+string(rune('a'+i/26))+string(rune('a'+i%26)), "cus_more", "active")
	}
	stopped, err := w.a.Run(ctx, audit.Options{MaxPages: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = runs.RecentAudits(ctx, event.ProviderStripe)
	if !got[0].Resumable() || got[0].Completed() || got[0].Cursor != stopped.Cursor || got[0].ID != stopped.RunID {
		t.Errorf("a stopped run kept as %+v: want resumable at %q", got[0], stopped.Cursor)
	}
	if n := len(got[0].Repairs); n != store.MaxAuditRepairs || got[0].RepairsOmitted != got[0].Repaired-store.MaxAuditRepairs {
		t.Errorf("a run of %d repairs keeps %d (+%d omitted), want %d and the rest counted", got[0].Repaired, n, got[0].RepairsOmitted, store.MaxAuditRepairs)
	}
}

// countingEffect records the idempotency keys it was run with.
type countingEffect struct {
	mu   sync.Mutex
	keys []string
	evs  []effect.Event
}

func (c *countingEffect) Name() string { return "counting" }

func (c *countingEffect) Handle(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys, c.evs = append(c.keys, ev.IdempotencyKey), append(c.evs, ev)
	return nil, nil
}

// TestARepairRunsEffectsOnlyWhenAsked: by default a repair runs no effect;
// with the team's effects set, one repair runs each effect once, as the
// event applying the object would (its type, its data.object), and a rerun
// finds nothing to repair and runs none.
func TestARepairRunsEffectsOnlyWhenAsked(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	eff := &countingEffect{}
	reg := &effect.Registry{}
	reg.On(eff, "customer.subscription.deleted", "customer.subscription.updated", "customer.subscription.created")

	w.mirrored(t, subEvent(t, "sub_quiet", "cus_quiet", "active", 1700000000))
	w.stripeHas(t, "sub_quiet", "cus_quiet", "past_due")
	res, err := w.a.Run(ctx, audit.Options{})
	if err != nil || res.Repaired != 1 || res.Effects != 0 || len(eff.keys) != 0 {
		t.Fatalf("default: repaired %d, effects %d, handler ran %d times (%v); want 1 repair and no effect", res.Repaired, res.Effects, len(eff.keys), err)
	}

	w.a.Effects = reg
	w.mirrored(t, subEvent(t, "sub_loud", "cus_loud", "active", 1700000000))
	w.stripeHas(t, "sub_loud", "cus_loud", "canceled")
	res, err = w.a.Run(ctx, audit.Options{DryRun: true})
	if err != nil || len(eff.keys) != 0 {
		t.Fatalf("a dry run ran the effect %d times (%v), want none", len(eff.keys), err)
	}
	res, err = w.a.Run(ctx, audit.Options{})
	if err != nil || res.Repaired != 1 || res.Effects != 1 || len(eff.keys) != 1 {
		t.Fatalf("with effects: repaired %d, effects %d, handler ran %d times (%v); want one of each", res.Repaired, res.Effects, len(eff.keys), err)
	}
	ev := eff.evs[0]
	if ev.Record.Type != "customer.subscription.deleted" || ev.Record.ObjectID != "sub_loud" || ev.Record.Source != event.SourceAudit ||
		!strings.Contains(string(ev.Payload), `"status":"canceled"`) || !strings.HasSuffix(ev.IdempotencyKey, ":counting") {
		t.Errorf("the effect saw %+v (key %s, payload %.200s); want sub_loud's cancellation as customer.subscription.deleted", ev.Record, ev.IdempotencyKey, ev.Payload)
	}
	again, err := w.a.Run(ctx, audit.Options{})
	if err != nil || again.Repaired != 0 || len(eff.keys) != 1 {
		t.Errorf("a rerun: repaired %d, handler ran %d times in all (%v); want nothing repaired and no second effect", again.Repaired, len(eff.keys), err)
	}
}

// TestARepairEventIsTheSameForTheSameState: the id the effects' keys come
// from is the object's and the repaired state's: the same for every read
// of that state (an audit rerun after a failed write), another for another
// state or another account's object.
func TestARepairEventIsTheSameForTheSameState(t *testing.T) {
	canceled := objectOf(t, subEvent(t, "sub_k", "cus_k", "canceled", 1700000000))
	active := objectOf(t, subEvent(t, "sub_k", "cus_k", "active", 1700000000))
	a, _, err := audit.RepairEvent(canceled, "", false, timeAt(1800000000))
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := audit.RepairEvent(canceled, "", false, timeAt(1800009999))
	c, _, _ := audit.RepairEvent(active, "", false, timeAt(1800000000))
	d, _, _ := audit.RepairEvent(canceled, "acct_1", false, timeAt(1800000000))
	m, _, _ := audit.RepairEvent(active, "", true, timeAt(1800000000))
	if a.ID != b.ID || a.ID == c.ID || a.ID == d.ID || !strings.HasPrefix(a.ID, "audit_") {
		t.Errorf("ids: same state %s/%s, other state %s, other account %s; want the first two equal, the others not", a.ID, b.ID, c.ID, d.ID)
	}
	if a.Type != "customer.subscription.deleted" || c.Type != "customer.subscription.updated" || m.Type != "customer.subscription.created" {
		t.Errorf("types: %s, %s, %s; want deleted, updated, created", a.Type, c.Type, m.Type)
	}
}

func timeAt(unix int64) time.Time { return time.Unix(unix, 0) }

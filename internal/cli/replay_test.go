package cli

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

func TestReplayGolden(t *testing.T) {
	w := newWorld(t, true)
	w.seed()
	c := w.cli()
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"replay_dry_run", []string{"replay", "--status", "failed", "--dry-run"}, 0},
		{"replay_ids", []string{"replay", "evt_golden_inv_failed", "evt_golden_dead", "evt_golden_received", "evt_golden_sub_created", "evt_golden_perm", "evt_golden_ignored", "evt_missing"}, 1},
		{"replay_force", []string{"replay", "--force", "evt_golden_perm"}, 0},
		{"replay_force_again", []string{"replay", "--force", "evt_golden_perm", "--json"}, 0},
		{"replay_by_status", []string{"replay", "--status", "dead_lettered", "--since", "2h"}, 0},
		{"replay_nothing", []string{"replay"}, 2},
		{"replay_both", []string{"replay", "evt_1", "--status", "failed"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.golden(tc.name, c.run(ctx, tc.args...).must(t, tc.code))
		})
	}

	// The replays above put one pointer per enqueued event on the queue.
	got := map[string]int{}
	for _, b := range bodies(t, w.s.SQS, w.s.Queue("WebhookQueue").URL) {
		p, err := queue.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		got[p.ID]++
	}
	want := map[string]int{
		"evt_golden_inv_failed": 1, "evt_golden_dead": 2, "evt_golden_received": 1,
		"evt_golden_sub_created": 1, "evt_golden_perm": 2,
	}
	if len(got) != len(want) {
		t.Errorf("queued: got %v, want %v", got, want)
	}
	for id, n := range want {
		if got[id] != n {
			t.Errorf("queued pointers to %s: got %d, want %d (all: %v)", id, got[id], n, got)
		}
	}
}

// TestReplayOfAProcessedEventHasNoSecondEffect replays an event that was
// processed, through a real queue and the real processor, and checks that
// nothing happens a second time: no effect, no change to the record or the
// mirror.
func TestReplayOfAProcessedEventHasNoSecondEffect(t *testing.T) {
	w := newWorld(t, false)
	c := w.cli()
	c.now = time.Now()
	ctx := context.Background()
	q := &queue.Queue{Client: w.s.SQS, URL: w.s.Queue("WebhookQueue").URL}

	b := body(t, "customer.subscription.created", stripefixture.Options{ID: "evt_once", ObjectID: "sub_once", Customer: "cus_once", Created: time.Now().Unix()})
	rec := w.store(b, event.SourceWebhook, event.StatusReceived, time.Now())
	if err := q.Send(ctx, event.PointerTo(rec)); err != nil {
		t.Fatal(err)
	}
	if n := w.drain(); n != 1 {
		t.Fatalf("first delivery: handled %d messages, want 1", n)
	}
	before, err := w.events.Get(ctx, "stripe", "evt_once")
	if err != nil {
		t.Fatal(err)
	}
	if before.Status != event.StatusProcessed || w.effectCount("evt_once") != 1 {
		t.Fatalf("before the replay: status %s, effects %d; want processed, 1", before.Status, w.effectCount("evt_once"))
	}
	mr := &mirror.Reader{DB: w.s.DynamoDB, Table: w.s.Table("MirrorTable")}
	snapBefore, err := mr.Object(ctx, "sub_once")
	if err != nil {
		t.Fatal(err)
	}

	r := c.run(ctx, "replay", "evt_once", "--json").must(t, 0)
	var out ReplayJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Enqueued != 1 || out.Results[0].Action != ops.ActionEnqueued || out.Results[0].Status != "processed" {
		t.Fatalf("replay: got %+v, want processed -> enqueued", out)
	}
	// Twice, for good measure: two more copies in flight at once.
	c.run(ctx, "replay", "evt_once", "evt_once").must(t, 0)
	if n := w.drain(); n != 3 {
		t.Fatalf("replayed deliveries: handled %d messages, want 3", n)
	}

	after, err := w.events.Get(ctx, "stripe", "evt_once")
	if err != nil {
		t.Fatal(err)
	}
	if n := w.effectCount("evt_once"); n != 1 {
		t.Errorf("effects after the replays: got %d, want 1", n)
	}
	if after.Status != event.StatusProcessed || after.Attempts != before.Attempts || !after.ProcessedAt.Equal(before.ProcessedAt) ||
		!after.StatusAt.Equal(before.StatusAt) {
		t.Errorf("record after the replays: got %s attempts %d processed_at %v; want it untouched (%s, %d, %v)",
			after.Status, after.Attempts, after.ProcessedAt, before.Status, before.Attempts, before.ProcessedAt)
	}
	snapAfter, err := mr.Object(ctx, "sub_once")
	if err != nil {
		t.Fatal(err)
	}
	if snapAfter.LastEventID != snapBefore.LastEventID || string(snapAfter.Data) != string(snapBefore.Data) {
		t.Errorf("mirror changed: %s -> %s", snapBefore.LastEventID, snapAfter.LastEventID)
	}
	if left := bodies(t, w.s.SQS, q.URL); len(left) != 0 {
		t.Errorf("queue after the replays: %d messages left, want the duplicates acknowledged", len(left))
	}
}

// TestReplayForceReopensAFailedPermanentEventOnce: after the cause is fixed,
// --force makes the processor apply the event, once.
func TestReplayForceReopensAFailedPermanentEventOnce(t *testing.T) {
	w := newWorld(t, false)
	c := w.cli()
	c.now = time.Now()
	ctx := context.Background()
	b := body(t, "invoice.paid", stripefixture.Options{ID: "evt_fixme", Customer: "cus_fix", Created: time.Now().Unix()})
	rec := w.store(b, event.SourceWebhook, event.StatusReceived, time.Now())
	w.setFail("evt_fixme", &fault.Permanent{Err: errors.New("no account for this customer")})
	w.process(rec, 1)
	if got, _ := w.events.Get(ctx, "stripe", "evt_fixme"); got.Status != event.StatusFailedPermanent {
		t.Fatalf("setup: status %s, want failed_permanent", got.Status)
	}

	// Without --force nothing moves.
	c.run(ctx, "replay", "evt_fixme").must(t, 1)
	if n := w.drain(); n != 0 {
		t.Fatalf("replay without --force enqueued %d messages", n)
	}

	w.setFail("evt_fixme", nil) // the cause is fixed
	c.run(ctx, "replay", "--force", "evt_fixme").must(t, 0)
	c.run(ctx, "replay", "--force", "evt_fixme").must(t, 0) // processed or failed by now: no second reopen
	w.drain()
	got, err := w.events.Get(ctx, "stripe", "evt_fixme")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != event.StatusProcessed || w.effectCount("evt_fixme") != 1 {
		t.Errorf("after --force: status %s, effects %d; want processed, exactly 1", got.Status, w.effectCount("evt_fixme"))
	}
}

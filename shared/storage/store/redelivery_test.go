package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// TestRedeliveriesAreDueInTheirOrderAskedOnceAndEnded: a redelivery is
// recorded once per event, read back when due (soonest first), each ask
// counted once even by two runs, and its end takes it out of those due
// while it still keeps a second schedule from starting.
func TestRedeliveriesAreDueInTheirOrderAskedOnceAndEnded(t *testing.T) {
	ev, s := newEvents(t)
	r := &store.Redeliveries{DB: ev.DB, Table: s.Table("EventsTable"), Keep: 72 * time.Hour}
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	for i, id := range []string{"g-late", "g-soon", "g-future"} {
		due := now.Add(-time.Duration(2-i) * time.Minute)
		if id == "g-future" {
			due = now.Add(time.Hour)
		}
		ok, err := r.Schedule(
			ctx,
			store.Redelivery{Provider: "github", ID: id, Type: "push", Hook: "repo:a/b/1", Delivery: int64(100 + i), FailedAt: now.Add(-time.Hour), Due: due},
		)
		if err != nil || !ok {
			t.Fatalf("schedule %s: %v %v", id, ok, err)
		}
	}
	if ok, err := r.Schedule(ctx, store.Redelivery{Provider: "github", ID: "g-soon", Due: now}); err != nil || ok {
		t.Errorf("second schedule of one event: got %v %v, want false (kept as it is)", ok, err)
	}
	due, err := r.Due(ctx, "github", now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 2 || due[0].ID != "g-late" || due[1].ID != "g-soon" || due[0].Delivery != 100 || due[0].Hook != "repo:a/b/1" {
		t.Fatalf("due: got %+v, want g-late then g-soon", due)
	}
	asked, err := r.Asked(ctx, due[0], now.Add(10*time.Minute))
	if err != nil || asked.Asked != 1 {
		t.Fatalf("asked: %+v %v", asked, err)
	}
	if _, err := r.Asked(ctx, due[0], now.Add(10*time.Minute)); !errors.Is(err, store.ErrRedeliveryMoved) {
		t.Errorf("a second run's ask of the same read: got %v, want ErrRedeliveryMoved", err)
	}
	if err := r.Done(ctx, due[1]); err != nil {
		t.Fatal(err)
	}
	later, err := r.Due(ctx, "github", now.Add(20*time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(later) != 1 || later[0].ID != "g-late" || later[0].Asked != 1 {
		t.Errorf("due 20 min later: got %+v, want g-late alone, asked once (g-soon ended, g-future not due)", later)
	}
	if ok, _ := r.Schedule(ctx, store.Redelivery{Provider: "github", ID: "g-soon", Due: now}); ok {
		t.Error("an ended redelivery was scheduled again")
	}
}

// TestHeldTellsARecordWithoutItsPayload: the redelivery sweep's question,
// answered in one read: is there a record, in what status, with its
// payload?
func TestHeldTellsARecordWithoutItsPayload(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	whole := record("evt_whole", now)
	if _, err := ev.Create(ctx, &whole); err != nil {
		t.Fatal(err)
	}
	half := record("evt_half", now)
	ev2 := *ev
	ev2.DB = &payloadFails{DynamoDB: ev.DB}
	if _, err := ev2.Create(ctx, &half); err == nil {
		t.Fatal("the payload's put did not fail")
	}
	held, err := ev.Held(ctx, event.ProviderStripe, []string{"evt_whole", "evt_half", "evt_none"})
	if err != nil {
		t.Fatal(err)
	}
	if h := held["evt_whole"]; !h.Record || !h.Payload || !h.Complete() {
		t.Errorf("whole: got %+v, want a record with its payload", h)
	}
	if h := held["evt_half"]; !h.Record || h.Payload || h.Status != event.StatusReceived || h.Complete() {
		t.Errorf("half: got %+v, want a received record without its payload, not complete", h)
	}
	if h, ok := held["evt_none"]; ok {
		t.Errorf("none: got %+v, want absent", h)
	}
}

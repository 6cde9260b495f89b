package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// TestHealthCountsTheWindowByStatusAndHour: every status of the window
// counted (processed as the rest of by_day), records outside the window
// left out, the hours' series and the percentiles from the records'
// processed times.
func TestHealthCountsTheWindowByStatusAndHour(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Date(2026, 5, 3, 10, 30, 0, 0, time.UTC)
	since := now.Add(-24 * time.Hour)
	var recs []event.Record
	type processedAfter struct {
		i    int
		took time.Duration
	}
	var done []processedAfter
	add := func(st event.Status, received time.Time, took time.Duration) {
		r := at(fmt.Sprintf("evt_h%02d", len(recs)), "invoice.paid", st, received)
		if st == event.StatusProcessed {
			r.Status = event.StatusReceived
			done = append(done, processedAfter{len(recs), took})
		}
		recs = append(recs, r)
	}
	// Processed: 1s, 2s, ... 10s after they were received, two hours ago.
	for i := range 10 {
		add(event.StatusProcessed, now.Add(-2*time.Hour), time.Duration(i+1)*time.Second)
	}
	add(event.StatusFailed, now.Add(-time.Hour), 0)
	add(event.StatusReceived, now.Add(-time.Minute), 0)
	add(event.StatusDeadLettered, now.Add(-20*time.Hour), 0)
	add(event.StatusDeadLettered, now.Add(-11*time.Hour), 0)
	add(event.StatusFailedPermanent, now.Add(-3*time.Hour), 0)
	add(event.StatusIgnored, now.Add(-3*time.Hour), 0)
	// Outside the window: counted nowhere.
	add(event.StatusDeadLettered, now.Add(-25*time.Hour), 0)
	add(event.StatusProcessed, now.Add(-30*time.Hour), time.Second)
	for _, r := range recs {
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range done {
		r := recs[d.i]
		claim(t, ev, r, r.ReceivedAt, r.ReceivedAt.Add(time.Minute))
		claimed, err := ev.Get(ctx, r.Provider, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := ev.Complete(ctx, claimed, "w1", r.ReceivedAt.Add(d.took), store.Completion{Outcome: outcome.Applied}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := ev.Health(ctx, "", since, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[event.Status]int{
		event.StatusProcessed: 10, event.StatusFailed: 1, event.StatusReceived: 1, event.StatusProcessing: 0,
		event.StatusDeadLettered: 2, event.StatusFailedPermanent: 1, event.StatusIgnored: 1,
	}
	for st, n := range want {
		if h.ByStatus[st] != n {
			t.Errorf("%s: got %d, want %d", st, h.ByStatus[st], n)
		}
	}
	if h.Received != 16 || h.Sampled != 16 {
		t.Errorf("got %d received, %d sampled, want 16 and 16", h.Received, h.Sampled)
	}
	if len(h.Hours) != 25 {
		t.Fatalf("got %d hours, want 25 (10:00 the day before to 10:00)", len(h.Hours))
	}
	received, processed := 0, 0
	for _, x := range h.Hours {
		received += x.Received
		processed += x.Processed
	}
	if received != 16 || processed != 10 {
		t.Errorf("series: got %d received, %d processed, want 16 and 10", received, processed)
	}
	if x := h.Hours[22]; x.Start != now.Add(-2*time.Hour).Truncate(time.Hour) || x.Received != 10 || x.Processed != 10 {
		t.Errorf("hour 22: got %+v, want 10 received and processed at 08:00", x)
	}
	if h.P50 != 5*time.Second || h.P95 != 10*time.Second {
		t.Errorf("got p50 %s, p95 %s, want 5s and 10s", h.P50, h.P95)
	}
	empty, err := ev.Health(ctx, "", now.Add(time.Hour), now.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if empty.Received != 0 || empty.P50 != 0 || empty.ByStatus[event.StatusProcessed] != 0 {
		t.Errorf("empty window: got %+v", empty)
	}
}

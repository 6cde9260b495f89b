package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// TestDiscardRecordsTheDecision: each status a record with a dead-letter
// message can have. The note is always written; a record still pending
// with no live worker becomes dead_lettered (in its lane, out of the
// stuck sweep's), with its lease gone; every other status is kept.
func TestDiscardRecordsTheDecision(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	at := now.Add(time.Minute)
	for _, tc := range []struct {
		name  string
		setup func(r event.Record)
		want  event.Status
	}{
		{"received", func(event.Record) {}, event.StatusDeadLettered},
		{"failed", func(r event.Record) {
			claim(t, ev, r, now, now.Add(time.Second))
			if err := ev.Fail(ctx, r, "w1", event.StatusFailed, "timeout", now, now); err != nil {
				t.Fatal(err)
			}
		}, event.StatusDeadLettered},
		{"processing, lease expired", func(r event.Record) { claim(t, ev, r, now, now.Add(time.Second)) }, event.StatusDeadLettered},
		{"processing, a worker holds it", func(r event.Record) { claim(t, ev, r, now, at.Add(time.Hour)) }, event.StatusProcessing},
		{"dead_lettered", func(r event.Record) {
			claim(t, ev, r, now, now.Add(time.Second))
			if err := ev.Fail(ctx, r, "w1", event.StatusDeadLettered, "timeout", now, now); err != nil {
				t.Fatal(err)
			}
		}, event.StatusDeadLettered},
		{"processed", func(r event.Record) {
			claim(t, ev, r, now, now.Add(time.Second))
			if err := ev.Complete(ctx, r, "w1", now, store.Completion{Outcome: outcome.Applied}); err != nil {
				t.Fatal(err)
			}
		}, event.StatusProcessed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "evt_discard_" + strings.NewReplacer(" ", "_", ",", "").Replace(tc.name)
			r := record(id, now)
			if _, err := ev.Create(ctx, &r); err != nil {
				t.Fatal(err)
			}
			tc.setup(r)
			got, err := ev.Discard(ctx, r.Provider, id, "poison: "+strings.Repeat("x", 400), at)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := ev.Get(ctx, r.Provider, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range []event.Record{got, stored} {
				if rec.Status != tc.want || !rec.DiscardedAt.Equal(at) || !strings.HasPrefix(rec.DiscardReason, "poison: xxx") || len(rec.DiscardReason) > 300 {
					t.Errorf("after Discard: status %s, discarded at %v, reason of %d bytes; want %s, %v, the reason truncated",
						rec.Status, rec.DiscardedAt, len(rec.DiscardReason), tc.want, at)
				}
			}
			if tc.want == event.StatusDeadLettered && stored.LeaseOwner != "" {
				t.Errorf("a dead-lettered record kept its lease (%s)", stored.LeaseOwner)
			}
			page, err := ev.List(ctx, store.Query{Status: tc.want, Since: now.Add(-time.Minute), Until: at})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, l := range page.Records {
				found = found || l.ID == id
			}
			if !found {
				t.Errorf("the %s listing does not find the discarded record", tc.want)
			}
		})
	}
	if _, err := ev.Discard(ctx, event.ProviderStripe, "evt_discard_nothing", "x", at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Discard of no record: %v, want ErrNotFound", err)
	}
}

func claim(t *testing.T, ev *store.Events, r event.Record, now, until time.Time) {
	t.Helper()
	if _, err := ev.Claim(context.Background(), r.Provider, r.ID, "w1", now, until); err != nil {
		t.Fatal(err)
	}
}

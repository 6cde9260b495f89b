package store_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// TestRunsKeepTheLastOnesNewestFirst: the reconciler's runs read back as
// recorded, newest first, the oldest dropped beyond MaxRuns; runs of two
// reconcilers ending at once are both kept; a table with no run yet has
// none; runs are in no listing of events.
func TestRunsKeepTheLastOnesNewestFirst(t *testing.T) {
	ev, s := newEvents(t)
	runs := &store.Runs{DB: s.DynamoDB, Table: ev.Table}
	ctx := context.Background()

	if got, err := runs.Recent(ctx, event.ProviderStripe); err != nil || len(got) != 0 {
		t.Fatalf("before any run: got %v (%v), want none", got, err)
	}
	start := time.UnixMilli(1_800_000_000_000)
	full := store.Run{ID: "run_full", StartedAt: start, Duration: 1500 * time.Millisecond, Outcome: "partial", Stopped: "max_pages",
		Error: "", Since: 24 * time.Hour, Listed: 7, Missing: 2, Raced: 1, Stuck: 3, Pages: 4, Throttled: 5}
	if err := runs.Record(ctx, event.ProviderStripe, full); err != nil {
		t.Fatal(err)
	}
	got, err := runs.Recent(ctx, event.ProviderStripe)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], full) {
		t.Fatalf("read back: got %+v (%v), want %+v", got, err, full)
	}

	var wg sync.WaitGroup
	for i := range store.MaxRuns + 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := store.Run{ID: fmt.Sprintf("run_%02d", i), StartedAt: start.Add(time.Duration(i+1) * time.Minute), Outcome: "complete"}
			if err := runs.Record(ctx, event.ProviderStripe, r); err != nil {
				t.Error(err)
			}
		}()
		if i%2 == 1 {
			// Two at a time: each pair races for the same list.
			wg.Wait()
		}
	}
	wg.Wait()
	got, err = runs.Recent(ctx, event.ProviderStripe)
	if err != nil || len(got) != store.MaxRuns {
		t.Fatalf("after %d more runs: got %d runs (%v), want %d", store.MaxRuns+3, len(got), err, store.MaxRuns)
	}
	seen := map[string]bool{}
	for _, r := range got {
		seen[r.ID] = true
	}
	// run_02 and run_03 raced: either may be the one dropped.
	if seen["run_full"] || seen["run_00"] || seen["run_01"] || seen["run_02"] == seen["run_03"] || !seen["run_04"] || !seen["run_22"] {
		t.Errorf("kept %v: want the %d newest", seen, store.MaxRuns)
	}
	if got[0].ID != "run_22" && got[0].ID != "run_21" {
		t.Errorf("newest first: got %s first, want run_22 or run_21 (the last pair)", got[0].ID)
	}
	if long := (store.Run{ID: "run_long", Outcome: "failed", Error: string(make([]byte, 5000))}); runs.Record(ctx, event.ProviderStripe, long) != nil {
		t.Fatal("a run with a long error was not kept")
	}
	if got, _ := runs.Recent(ctx, event.ProviderStripe); len(got[0].Error) > 400 {
		t.Errorf("a run's error is kept at %d bytes, want it clipped", len(got[0].Error))
	}
	if got, _ := runs.Recent(ctx, "other"); len(got) != 0 {
		t.Errorf("another provider's runs: got %d, want none", len(got))
	}
	page, err := ev.List(ctx, store.Query{Since: time.Now().Add(-time.Hour)})
	if err != nil || len(page.Records) != 0 {
		t.Errorf("the listing: got %d records (%v), want none", len(page.Records), err)
	}
}

package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// pagedSeen holds the accounts seen, sorted, and answers them a page at a
// time, as store.Accounts does.
type pagedSeen struct{ accounts []string }

func (f *pagedSeen) Page(_ context.Context, _ string, after string, limit int) ([]string, string, error) {
	i := sort.SearchStrings(f.accounts, after)
	if i < len(f.accounts) && f.accounts[i] == after {
		i++
	}
	end := min(i+limit, len(f.accounts))
	page := slices.Clone(f.accounts[i:end])
	if end < len(f.accounts) {
		return page, page[len(page)-1], nil
	}
	return page, "", nil
}

// namedCheckpoints keeps each checkpoint by name and counts the reads.
type namedCheckpoints struct {
	stored map[string]store.Checkpoint
	loads  int
}

func (f *namedCheckpoints) Load(_ context.Context, name string) (store.Checkpoint, error) {
	f.loads++
	cp, ok := f.stored[name]
	if !ok {
		cp = store.Checkpoint{Name: name}
	}
	return cp, nil
}

func (f *namedCheckpoints) Save(_ context.Context, prev, next store.Checkpoint) (store.Checkpoint, error) {
	if f.stored[next.Name].Seq != prev.Seq {
		return prev, store.ErrCheckpointMoved
	}
	next.Seq = prev.Seq + 1
	f.stored[next.Name] = next
	return next, nil
}

// TestEveryAccountSeenIsReachedOverRuns: thousands of accounts seen, far
// more than one run's page budget lists: each run reads a few pages of
// them from where the last run stopped (not every account, nor every
// account's checkpoint), within its budget, the platform's group every
// run, and successive runs reach every account in turn, then start over.
func TestEveryAccountSeenIsReachedOverRuns(t *testing.T) {
	const n, maxPages = 3000, 200
	seen := &pagedSeen{}
	for i := range n {
		seen.accounts = append(seen.accounts, fmt.Sprintf("acct_%05d", i))
	}
	cps := &namedCheckpoints{stored: map[string]store.Checkpoint{}}
	l := &recordingLister{}
	r, err := New(Config{Stripe: l, Events: &fakeEvents{}, Checkpoints: cps, Ingester: nopIngester{}, Queue: nopQueue{},
		Types: []string{"invoice.paid"}, SeenAccounts: seen, MaxPages: maxPages,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	reached := map[string]int{}
	runs := 0
	// Each run spends one list request on the platform's group and one on
	// each account's: every account within n/(maxPages-1) runs.
	wantRuns := (n + maxPages - 2) / (maxPages - 1)
	for len(reached) < n {
		runs++
		if runs > wantRuns {
			t.Fatalf("after %d runs: %d of %d accounts reached, want every one", runs-1, len(reached), n)
		}
		l.queries, cps.loads = nil, 0
		res, err := r.Run(context.Background(), RunOptions{})
		if err != nil {
			t.Fatalf("run %d: %v", runs, err)
		}
		platform := 0
		for _, q := range l.queries {
			if q.Account == "" {
				platform++
				continue
			}
			reached[q.Account]++
		}
		if platform != 1 || len(l.queries) > maxPages {
			t.Fatalf("run %d: %d list requests, %d of them the platform's; want at most %d, one the platform's", runs, len(l.queries), platform, maxPages)
		}
		// The checkpoints read are those of the groups the run lists, and
		// of the accounts' cursor: never one per account seen.
		if cps.loads > maxPages+50+1 {
			t.Fatalf("run %d: read %d checkpoints for %d list requests; want those of the accounts it lists only", runs, cps.loads, len(l.queries))
		}
		if res.Accounts == 0 || res.Accounts > maxPages {
			t.Fatalf("run %d: got %d accounts, want those it listed", runs, res.Accounts)
		}
	}
	for a, k := range reached {
		if k != 1 {
			t.Errorf("%s listed %d times before every account was reached once", a, k)
		}
	}
	// The list ended: the next run starts over from the first account.
	l.queries = nil
	if _, err := r.Run(context.Background(), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(l.queries) < 2 || l.queries[1].Account != seen.accounts[0] && l.queries[0].Account != seen.accounts[0] {
		t.Fatalf("the run after the last account: listed %q first, want the platform's and %s", []string{l.queries[0].Account, l.queries[1].Account}, seen.accounts[0])
	}
}

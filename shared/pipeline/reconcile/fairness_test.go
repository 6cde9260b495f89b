package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// checkpointsByName holds any number of checkpoints, as the store does.
type checkpointsByName struct {
	mu sync.Mutex
	m  map[string]store.Checkpoint
}

func (c *checkpointsByName) Load(_ context.Context, name string) (store.Checkpoint, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.m[name]
	cp.Name = name
	return cp, nil
}

func (c *checkpointsByName) Save(_ context.Context, prev, next store.Checkpoint) (store.Checkpoint, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[prev.Name].Seq != prev.Seq {
		return prev, store.ErrCheckpointMoved
	}
	next.Seq = prev.Seq + 1
	c.m[next.Name] = next
	return next, nil
}

// backlogLister answers every list of the types of backlog with a full
// page and more to come (a backlog no run's budget gets through), and
// any other list with one last, empty page; it counts the pages by the
// list's first type.
type backlogLister struct {
	backlog string
	mu      sync.Mutex
	pages   map[string]int
}

func (l *backlogLister) ListEvents(_ context.Context, q stripeapi.EventQuery, page func(stripeapi.Page) (bool, error)) error {
	for {
		l.mu.Lock()
		l.pages[q.Types[0]]++
		l.mu.Unlock()
		more := slices.Contains(q.Types, l.backlog)
		goOn, err := page(stripeapi.Page{HasMore: more})
		if err != nil || !goOn || !more {
			return err
		}
	}
}

// TestABacklogInOneGroupDoesNotStarveTheNext: the page budget of a run is
// shared fairly among the groups, the least advanced first, so a group
// whose backlog outlasts every run's budget does not keep the others from
// being listed, run after run.
func TestABacklogInOneGroupDoesNotStarveTheNext(t *testing.T) {
	var types []string
	for i := range 21 {
		types = append(types, fmt.Sprintf("t.%02d", i))
	}
	lister := &backlogLister{backlog: "t.00", pages: map[string]int{}}
	cps := &checkpointsByName{m: map[string]store.Checkpoint{}}
	now := time.Unix(1_800_000_000, 0)
	r, err := New(Config{Stripe: lister, Events: &fakeEvents{}, Checkpoints: cps, Ingester: nopIngester{}, Queue: nopQueue{},
		Types: types, MaxPages: 4, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	groups := r.Groups()
	if len(groups) != 2 || groups[0].Types[0] != "t.00" {
		t.Fatalf("groups: got %v, want the backlog's first", groups)
	}
	for run := range 3 {
		now = now.Add(10 * time.Minute)
		res, err := r.Run(context.Background(), RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Pages > 4 {
			t.Errorf("run %d listed %d pages, over its budget of 4", run, res.Pages)
		}
	}
	if lister.pages["t.20"] == 0 {
		t.Fatalf("the group without a backlog was never listed in 3 runs (pages by group: %v)", lister.pages)
	}
	cp, _ := cps.Load(context.Background(), groups[1].Checkpoint)
	if cp.DoneThrough < now.Add(-DefaultSettle-time.Minute).Unix() {
		t.Errorf("the group without a backlog is done through %v, want close to now", time.Unix(cp.DoneThrough, 0))
	}
	if lister.pages["t.00"] < 6 {
		t.Errorf("the backlog got %d pages in 3 runs, want the rest of each run's budget", lister.pages["t.00"])
	}
}

package redeliver

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// fakeGitHub is GitHub's deliveries API with function fields; nil ones
// fail the test.
type fakeGitHub struct {
	t          *testing.T
	deliveries func(h githubapi.Hook, cursor string) (githubapi.Page, error)
	lists      int
}

func (f *fakeGitHub) Deliveries(_ context.Context, h githubapi.Hook, cursor string) (githubapi.Page, error) {
	f.lists++
	if f.deliveries == nil {
		f.t.Errorf("listed %s from %q, want no request", h, cursor)
		return githubapi.Page{}, nil
	}
	return f.deliveries(h, cursor)
}

func (f *fakeGitHub) Redeliver(_ context.Context, h githubapi.Hook, id int64) error {
	f.t.Errorf("redelivered %d of %s, want none", id, h)
	return nil
}

// nopRedeliveries owes nothing.
type nopRedeliveries struct{}

func (nopRedeliveries) Schedule(context.Context, store.Redelivery) (bool, error) { return true, nil }
func (nopRedeliveries) Due(context.Context, string, time.Time, int) ([]store.Redelivery, error) {
	return nil, nil
}
func (nopRedeliveries) Asked(_ context.Context, d store.Redelivery, _ time.Time) (store.Redelivery, error) {
	return d, nil
}
func (nopRedeliveries) Done(context.Context, store.Redelivery) error { return nil }

// fakeEvents holds no event: Held finds none.
type fakeEvents struct{}

func (fakeEvents) Held(context.Context, string, []string) (map[string]store.Held, error) {
	return map[string]store.Held{}, nil
}

// fakeCheckpoints holds one checkpoint (the zero one until saved).
type fakeCheckpoints struct {
	stored store.Checkpoint
}

func (f *fakeCheckpoints) Load(_ context.Context, name string) (store.Checkpoint, error) {
	cp := f.stored
	cp.Name = name
	return cp, nil
}

func (f *fakeCheckpoints) Save(_ context.Context, prev, next store.Checkpoint) (store.Checkpoint, error) {
	next.Seq = prev.Seq + 1
	f.stored = next
	return next, nil
}

func TestNewWantsGitHubWithItsHooks(t *testing.T) {
	base := Config{Events: fakeEvents{}, Checkpoints: &fakeCheckpoints{}, Redeliveries: nopRedeliveries{}}
	hooks := []githubapi.Hook{{Kind: githubapi.KindOrg, Owner: "acme", ID: 34}}
	for _, tc := range []struct {
		name  string
		gh    GitHub
		hooks []githubapi.Hook
		ok    bool
	}{
		{"both", &fakeGitHub{t: t}, hooks, true},
		{"a client without hooks", &fakeGitHub{t: t}, nil, false},
		{"hooks without a client", nil, hooks, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.GitHub, cfg.Hooks = tc.gh, tc.hooks
			_, err := New(cfg)
			if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), "redeliver: config without")) {
				t.Errorf("got %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

// A window left under way longer than GitHub keeps deliveries (the
// reconciler was off for days) is closed without a request: its cursor
// points at deliveries GitHub no longer has.
func TestGitHubWindowPastThreeDaysIsClosedWithoutARequest(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	old := now.Add(-githubapi.Retention - time.Hour).Unix()
	cps := &fakeCheckpoints{
		stored: store.Checkpoint{Seq: 3, DoneThrough: old - 3600, WindowFrom: old - 3600, WindowTo: old + 600, Cursor: "v1_x", CursorCreated: old},
	}
	gh := &fakeGitHub{t: t}
	r, err := New(Config{GitHub: gh, Hooks: []githubapi.Hook{{Kind: githubapi.KindApp, ID: 56}}, Events: fakeEvents{}, Checkpoints: cps,
		Redeliveries: nopRedeliveries{}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Sweep(context.Background(), Turn{RunID: "run_test", Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler),
		MaxPages: 50, Overlap: 2 * time.Minute, Settle: 5 * time.Minute, FirstLookback: 10 * time.Minute, MaxThrottles: 5})
	if err != nil {
		t.Fatal(err)
	}
	if gh.lists != 0 || res.Stopped != "" {
		t.Errorf("got %d list requests and stop %q, want none", gh.lists, res.Stopped)
	}
	if cp := cps.stored; cp.InProgress() || cp.DoneThrough != old+600 || cp.Name != "github#app:56" {
		t.Errorf("checkpoint: got %+v, want %s's window closed through its end", cp, "github#app:56")
	}
}

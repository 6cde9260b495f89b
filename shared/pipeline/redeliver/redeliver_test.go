package redeliver_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/redeliver"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/githubfake"
)

const githubToken = "github_pat_reconcile_test"

// clock is a settable clock the reconciler and the fake GitHub share.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// githubHarness is the harness with a fake GitHub and one repository hook.
type githubHarness struct {
	*harness
	gh    *githubfake.Server
	clock *clock
	hook  githubapi.Hook
	path  string
}

func newGitHubHarness(t *testing.T) *githubHarness {
	t.Helper()
	h := newHarness(t, oneGroup)
	c := &clock{t: time.Now().UTC().Truncate(time.Second)}
	gh := githubfake.Start(githubfake.Config{Token: githubToken, Now: c.Now})
	t.Cleanup(gh.Close)
	g := &githubHarness{harness: h, gh: gh, clock: c,
		hook: githubapi.Hook{Kind: githubapi.KindRepo, Owner: "acme", Repo: "shop", ID: 12},
		path: githubfake.RepoHook("acme", "shop", 12)}
	gh.AddHook(g.path)
	return g
}

// reconciler builds a Reconciler that gives GitHub's sweep of the hook its
// turn; mod, when set, adjusts both configs.
func (g *githubHarness) reconciler(mod func(*redeliver.Config, *reconcile.Config)) *reconcile.Reconciler {
	g.t.Helper()
	client, err := githubapi.New(githubapi.Config{BaseURL: g.gh.URL, Now: g.clock.Now,
		Token: func(context.Context) (string, error) { return githubToken, nil }})
	if err != nil {
		g.t.Fatal(err)
	}
	return g.harness.reconciler("sk_test_reconcile", func(c *reconcile.Config) {
		c.Now = g.clock.Now
		rc := redeliver.Config{GitHub: client, Hooks: []githubapi.Hook{g.hook}, Events: c.Events, Checkpoints: c.Checkpoints,
			Redeliveries: &store.Redeliveries{DB: g.db, Table: g.stack.Table("EventsTable"), Keep: githubapi.Retention}}
		if mod != nil {
			mod(&rc, c)
		}
		rd, err := redeliver.New(rc)
		if err != nil {
			g.t.Fatal(err)
		}
		c.Redeliverer = rd
	})
}

// record stores a GitHub delivery as the receiver would have.
func (g *githubHarness) record(guid string) {
	g.t.Helper()
	body := []byte(`{"action":"opened"}`)
	env := event.Envelope{ID: guid, Type: "issues.opened", Created: g.clock.Now().Unix()}
	rec := event.NewRecord(redeliver.ProviderGitHub, env, body, ingest.Hash(body), event.SourceWebhook, event.StatusProcessed, g.clock.Now())
	if _, err := g.events.Create(context.Background(), &rec); err != nil {
		g.t.Fatal(err)
	}
}

func (g *githubHarness) attempt(guid string, code int, ago time.Duration, redelivery bool) githubfake.Delivery {
	return g.gh.Record(g.path, githubfake.Delivery{GUID: guid, Event: "issues", Action: "opened", StatusCode: code,
		DeliveredAt: g.clock.Now().Add(-ago), Redelivery: redelivery, Payload: []byte(`{"action":"opened"}`)})
}

// redeliveries returns, per guid, the ids of the attempts redelivered.
func (g *githubHarness) redelivered() map[string][]int64 {
	out := map[string][]int64{}
	byID := map[int64]string{}
	for _, d := range g.gh.Deliveries(g.path) {
		byID[d.ID] = d.GUID
	}
	for _, r := range g.gh.Requests() {
		if r.Method == http.MethodPost && (r.Status == http.StatusAccepted) {
			var id int64
			fmt.Sscanf(r.Path[strings.LastIndex(r.Path, "deliveries/")+len("deliveries/"):], "%d", &id)
			out[byID[id]] = append(out[byID[id]], id)
		}
	}
	return out
}

func (g *githubHarness) checkpoint() store.Checkpoint {
	g.t.Helper()
	cp, err := (&store.Checkpoints{DB: g.db, Table: g.stack.Table("EventsTable")}).Load(context.Background(), "github#"+g.hook.String())
	if err != nil {
		g.t.Fatal(err)
	}
	return cp
}

func TestGitHubFailedDeliveriesWithoutARecordAreRedelivered(t *testing.T) {
	t.Parallel()
	g := newGitHubHarness(t)
	lost := g.attempt("lost", 502, time.Hour, false)                // failed, never arrived
	g.attempt("stored", 500, time.Hour, false)                      // failed, yet on record
	g.record("stored")                                              //
	g.attempt("ok", 200, time.Hour, false)                          // delivered
	g.attempt("fixed", 0, 2*time.Hour, false)                       // failed, then redelivered fine
	g.attempt("fixed", 200, time.Hour, true)                        //
	g.attempt("expired", 500, githubapi.Retention+time.Hour, false) // older than GitHub keeps
	g.attempt("young", 500, time.Minute, false)                     // may still be retried by hand
	g.attempt("twice", 503, 3*time.Hour, false)                     // failed twice: the newest
	twice := g.attempt("twice", 504, 30*time.Minute, true)          // attempt is redelivered
	g.attempt("refused", 400, 40*time.Minute, false)                // refused on purpose: left alone

	r := g.reconciler(nil)
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{"lost": {lost.ID}, "twice": {twice.ID}}
	if got := g.redelivered(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("redelivered: got %v, want %v", got, want)
	}
	// The expired attempt is not listed: GitHub keeps three days.
	if res.GitHub.Redelivered != 2 || res.GitHub.Rejected != 1 || res.GitHub.Deliveries != 9 || res.GitHub.Pages != 1 || res.GitHub.Stopped != "" {
		t.Errorf("run: got %+v, want 2 redelivered and 1 left alone of 9 listed in one page", res)
	}
	g.gh.Flush()
	for _, d := range g.gh.Deliveries(g.path)[10:] {
		if !d.Redelivery || d.DeliveredAt.Before(g.clock.Now()) {
			t.Errorf("new attempt %+v: want a redelivery made now", d)
		}
	}
	cp := g.checkpoint()
	if cp.InProgress() || cp.DoneThrough != g.clock.Now().Add(-reconcile.DefaultSettle).Unix() {
		t.Errorf("checkpoint: got %+v, want done through the settle delay", cp)
	}
	lines := g.runLines()
	if len(lines) != 1 || lines[0]["github_redelivered"] != 2.0 || lines[0]["github_deliveries_listed"] != 9.0 || lines[0]["github_rejected"] != 1.0 {
		t.Errorf("run line: got %v, want github_redelivered=2, github_rejected=1 and github_deliveries_listed=9", lines)
	}

	// The redeliveries are too recent to judge at once; ten minutes later
	// they succeeded (the fake answers 200), and nothing is asked again.
	// "young" failed 11 minutes ago by then, with no record: its turn.
	g.clock.Add(10 * time.Minute)
	res, err = r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.redelivered(); len(got) != 3 || len(got["young"]) != 1 || len(got["lost"]) != 1 {
		t.Errorf("second run: got %v, want only young redelivered in addition", got)
	}
	if res.GitHub.Redelivered != 1 {
		t.Errorf("second run: got %+v, want 1 redelivered", res)
	}
}

func TestGitHubCursorPagesResumeFromTheCheckpoint(t *testing.T) {
	t.Parallel()
	g := newGitHubHarness(t)
	// 250 deliveries over two hours, one in ten failed and not on record.
	failed := map[string]bool{}
	for i := range 250 {
		guid := fmt.Sprintf("guid-%03d", i)
		code := 200
		if i%10 == 3 {
			code, failed[guid] = 500, true
		}
		g.attempt(guid, code, reconcile.DefaultSettle+time.Duration(250-i)*30*time.Second, false)
	}
	r := g.reconciler(func(_ *redeliver.Config, c *reconcile.Config) { c.MaxPages = 1 })
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cp := g.checkpoint()
	if res.GitHub.Stopped != outcome.StopMaxPages || res.GitHub.Pages != 1 || !cp.InProgress() || cp.Cursor == "" {
		t.Fatalf("run 1: got %+v, checkpoint %+v; want one page and a cursor kept", res, cp)
	}
	if res.GitHub.Redelivered != 10 {
		t.Errorf("run 1: got %d redelivered, want the 10 of the newest page", res.GitHub.Redelivered)
	}
	for range 2 {
		if _, err := r.Run(context.Background(), reconcile.RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got := g.redelivered()
	if len(got) != len(failed) {
		t.Errorf("redelivered %d guids, want %d", len(got), len(failed))
	}
	for guid, ids := range got {
		if !failed[guid] || len(ids) != 1 {
			t.Errorf("guid %s redelivered %d times (failed: %v), want once if failed", guid, len(ids), failed[guid])
		}
	}
	var cursors []string
	for _, rq := range g.gh.Requests() {
		if rq.Method == http.MethodGet {
			cursors = append(cursors, rq.Cursor)
		}
	}
	if len(cursors) != 3 || cursors[0] != "" || cursors[1] != cp.Cursor || cursors[2] == "" {
		t.Errorf("pages asked: got cursors %q, want 3 pages, the second from the checkpoint's %q", cursors, cp.Cursor)
	}
	if cp := g.checkpoint(); cp.InProgress() || cp.DoneThrough == 0 {
		t.Errorf("checkpoint: got %+v, want the window done", cp)
	}
}

func TestGitHubRateLimitsAreWaitedOutOrStopTheSweepCleanly(t *testing.T) {
	t.Parallel()
	g := newGitHubHarness(t)
	lost := g.attempt("lost", 502, time.Hour, false)
	r := g.reconciler(func(c *redeliver.Config, _ *reconcile.Config) { c.MaxWait = 5 * time.Second })

	// A limit that lifts within GitHubMaxWait: waited out, on the list and
	// on the redelivery.
	g.gh.SecondaryRateLimit(1, http.StatusForbidden, time.Second)
	g.gh.RateLimitRedeliveries(1, http.StatusTooManyRequests, 0)
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.GitHub.Throttled != 2 || res.GitHub.Redelivered != 1 || res.GitHub.Stopped != "" {
		t.Fatalf("run 1: got %+v, want 2 waits then the redelivery", res)
	}
	if got := g.redelivered(); len(got["lost"]) != 1 || got["lost"][0] != lost.ID {
		t.Errorf("redelivered: got %v, want lost once", got)
	}
	cp1 := g.checkpoint()

	// An hour's limit, 403 then 429: the sweep stops, the run succeeds,
	// the checkpoint stays, one log line says so, and the metric counts it.
	g.clock.Add(10 * time.Minute)
	g.attempt("later", 500, time.Minute+reconcile.DefaultSettle, false)
	// Each run on a client of its own: go-github remembers a spent primary
	// limit and sends nothing until its reset, as a warm execution
	// environment would.
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		r := g.reconciler(func(c *redeliver.Config, _ *reconcile.Config) { c.MaxWait = 5 * time.Second })
		before := len(g.logs.String())
		g.gh.RateLimit(1, status, time.Hour)
		res, err = r.Run(context.Background(), reconcile.RunOptions{})
		if err != nil {
			t.Fatalf("%d: %v", status, err)
		}
		if res.GitHub.Stopped != outcome.StopRateLimited || res.GitHub.Throttled != 1 || res.GitHub.Redelivered != 0 {
			t.Fatalf("%d: got %+v, want a clean rate_limited stop", status, res)
		}
		if cp := g.checkpoint(); cp.Seq != cp1.Seq || cp.DoneThrough != cp1.DoneThrough {
			t.Errorf("%d: checkpoint moved: got %+v, want %+v", status, cp, cp1)
		}
		logs := g.logs.String()[before:]
		if strings.Count(logs, "rate limited by GitHub: stopping") != 1 {
			t.Errorf("%d: want one line saying the sweep stopped:\n%s", status, logs)
		}
		lines := runLinesIn(logs)
		if len(lines) != 1 || lines[0]["github_throttled"] != 1.0 || lines[0]["github_stopped"] != outcome.StopRateLimited ||
			lines[0]["outcome"] != "partial" {
			t.Errorf("%d: run line: got %v, want github_throttled=1, github_stopped=rate_limited", status, lines)
		}
	}
	// The limit has passed: the next run catches up.
	r = g.reconciler(nil)
	res, err = r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.GitHub.Redelivered != 1 || res.GitHub.Stopped != "" {
		t.Errorf("after the limit: got %+v, want later redelivered", res)
	}
	if got := g.redelivered(); len(got["later"]) != 1 || len(got["lost"]) != 1 {
		t.Errorf("redelivered: got %v, want lost and later once each", got)
	}
}

func TestGitHubSweepDoesNotRunWithoutHooks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	r := h.reconciler("sk_test_reconcile", nil)
	if _, err := r.Run(context.Background(), reconcile.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := h.runLines()
	if len(lines) != 1 {
		t.Fatalf("got %d run lines, want 1", len(lines))
	}
	var keys []string
	for k := range lines[0] {
		if strings.HasPrefix(k, "github") {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		t.Errorf("a Stripe-only run line has %v", slices.Sorted(slices.Values(keys)))
	}
}

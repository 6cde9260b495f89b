package redeliver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/redeliver"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/githubfake"
)

// payloadFails fails the second PutItem it is asked for: Create's put of
// the payload, after the record's.
type payloadFails struct {
	store.DynamoDB
	puts atomic.Int32
}

func (p *payloadFails) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if p.puts.Add(1) == 2 {
		return nil, fmt.Errorf("throttled (injected)")
	}
	return p.DynamoDB.PutItem(ctx, in, o...)
}

// halfStored stores a GitHub delivery's record as the receiver does when
// the put of its payload fails (and answers 5xx): the record, no payload.
func (g *githubHarness) halfStored(guid string, st event.Status) {
	g.t.Helper()
	body := []byte(`{"action":"opened"}`)
	env := event.Envelope{ID: guid, Type: "issues.opened", Created: g.clock.Now().Unix()}
	rec := event.NewRecord(redeliver.ProviderGitHub, env, body, ingest.Hash(body), event.SourceWebhook, st, g.clock.Now())
	ev := *g.events
	ev.DB = &payloadFails{DynamoDB: g.db}
	if _, err := ev.Create(context.Background(), &rec); err == nil {
		g.t.Fatal("the payload's put did not fail")
	}
	r, err := g.events.Get(context.Background(), redeliver.ProviderGitHub, guid)
	if err != nil || r.Payload != nil {
		g.t.Fatalf("half-stored record: %+v, %v; want one without its payload", r, err)
	}
}

// TestAGitHubDeliveryStoredWithoutItsPayloadIsRedelivered: the receiver
// stored the record, its payload's put failed and it answered 5xx, so
// GitHub logged a failed attempt and will never send it again; the sweep
// must ask for it, since the record alone cannot be processed. A record
// with its payload, or settled, is left alone.
func TestAGitHubDeliveryStoredWithoutItsPayloadIsRedelivered(t *testing.T) {
	t.Parallel()
	g := newGitHubHarness(t)
	half := g.attempt("half", 500, time.Hour, false)
	g.halfStored("half", event.StatusReceived)
	failed := g.attempt("half-failed", 500, time.Hour, false)
	g.halfStored("half-failed", event.StatusFailed)
	g.attempt("whole", 500, time.Hour, false)
	g.record("whole")
	r := g.reconciler(nil)
	if _, err := r.Run(context.Background(), reconcile.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{"half": {half.ID}, "half-failed": {failed.ID}}
	if got := g.redelivered(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("redelivered: got %v, want %v", got, want)
	}
}

// TestEachGitHubHookHasItsOwnRedeliveryBudget: one hook's backlog of
// failed deliveries, over a run's budget, does not keep another hook's
// from being redelivered in the same run.
func TestEachGitHubHookHasItsOwnRedeliveryBudget(t *testing.T) {
	t.Parallel()
	g := newGitHubHarness(t)
	for i := range redeliver.DefaultMaxRedeliveries + 10 {
		g.attempt(fmt.Sprintf("busy-%03d", i), 500, time.Hour+time.Duration(i)*time.Second, false)
	}
	other := githubapi.Hook{Kind: githubapi.KindRepo, Owner: "acme", Repo: "other", ID: 13}
	otherPath := githubfake.RepoHook("acme", "other", 13)
	lone := g.gh.Record(otherPath, githubfake.Delivery{GUID: "lone", Event: "issues", Action: "opened", StatusCode: 500,
		DeliveredAt: g.clock.Now().Add(-time.Hour), Payload: []byte(`{"action":"opened"}`)})
	r := g.reconciler(func(c *redeliver.Config, _ *reconcile.Config) { c.Hooks = append(c.Hooks, other) })
	if _, err := r.Run(context.Background(), reconcile.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	asked := 0
	for _, rq := range g.gh.Requests() {
		if rq.Method == http.MethodPost && rq.Status == http.StatusAccepted {
			asked++
			if rq.Path == "/"+otherPath+fmt.Sprintf("/deliveries/%d/attempts", lone.ID) {
				asked += 1000
			}
		}
	}
	if asked < 1000 {
		t.Errorf("the other hook's failed delivery was not redelivered (%d redeliveries asked of the busy hook)", asked)
	}
	if asked-1000-1 > redeliver.DefaultMaxRedeliveries {
		t.Errorf("the busy hook got %d redeliveries, over its budget of %d", asked-1001, redeliver.DefaultMaxRedeliveries)
	}
	// What the budget left is counted, for the alarm that says redelivery
	// cannot keep up, and is due next run.
	lines := g.runLines()
	if len(lines) != 1 || lines[0]["github_redelivery_backlog"] != 10.0 || lines[0]["github_stopped"] != redeliver.StopMaxRedeliveries {
		t.Errorf("run line: got %v, want github_redelivery_backlog=10 and github_stopped=max_redeliveries", lines)
	}
	g.clock.Add(10 * time.Minute)
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.GitHub.Redelivered != 10 || res.GitHub.Backlog != 0 {
		t.Errorf("next run: got %d redelivered, %d left, want the 10 left over and none left", res.GitHub.Redelivered, res.GitHub.Backlog)
	}
}

// TestARedeliveryThatNeverGetsThroughIsGivenUpAndCounted: after its last
// ask, a delivery still not held whole is given up, counted for its alarm,
// and not asked for again.
func TestARedeliveryThatNeverGetsThroughIsGivenUpAndCounted(t *testing.T) {
	t.Parallel()
	g := newGitHubHarnessDown(t)
	g.attempt("never", 502, 20*time.Minute, false)
	r := g.reconciler(func(c *redeliver.Config, _ *reconcile.Config) { c.MaxAsks = 2 })
	var abandoned []float64
	for range 5 {
		if _, err := r.Run(context.Background(), reconcile.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		g.gh.Flush()
		g.clock.Add(10 * time.Minute)
	}
	for _, l := range g.runLines() {
		abandoned = append(abandoned, l["github_redeliveries_abandoned"].(float64))
	}
	if got := len(g.redelivered()["never"]); got != 2 {
		t.Errorf("asked %d times, want 2", got)
	}
	if fmt.Sprint(abandoned) != "[0 0 0 1 0]" {
		t.Errorf("abandoned per run: got %v, want [0 0 0 1 0] (asked at 0 and 10 min, given up at 30)", abandoned)
	}
}

// TestADeliveryRefusedOnPurposeIsNotRedeliveredEveryRun: a 400 (no
// secret, a bad signature) or a 413 (over the size limit) is the
// receiver's answer by design: a redelivery gets it again, so a scheduled
// run does not ask for one. An operator's sweep (since), run after fixing
// the cause, does.
func TestADeliveryRefusedOnPurposeIsNotRedeliveredEveryRun(t *testing.T) {
	t.Parallel()
	g := newGitHubHarness(t)
	g.attempt("bad-signature", 400, time.Hour, false)
	g.attempt("too-large", 413, time.Hour, false)
	timeout := g.attempt("timed-out", 408, time.Hour, false)
	r := g.reconciler(nil)
	if _, err := r.Run(context.Background(), reconcile.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := g.redelivered(), map[string][]int64{"timed-out": {timeout.ID}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("scheduled run redelivered %v, want %v", got, want)
	}
	if _, err := r.Run(context.Background(), reconcile.RunOptions{Since: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := g.redelivered(); len(got["bad-signature"]) != 1 || len(got["too-large"]) != 1 {
		t.Errorf("operator's sweep redelivered %v, want the refused ones too", got)
	}
}

// TestAFailingRedeliveryIsAskedLessOften: a redelivery that fails again
// (the receiver still down) shows in the next run's listing as a new
// failed attempt; it is asked for again after a wait that doubles (10, 20,
// 40 minutes ...), not every run.
// newGitHubHarnessDown is the GitHub harness whose redeliveries reach a
// receiver that answers 502: each shows as a new failed attempt.
func newGitHubHarnessDown(t *testing.T) *githubHarness {
	t.Helper()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(down.Close)
	h := newHarness(t, oneGroup)
	c := &clock{t: time.Now().UTC().Truncate(time.Second)}
	gh := githubfake.Start(githubfake.Config{Token: githubToken, Now: c.Now, Target: down.URL, Secret: "s"})
	t.Cleanup(gh.Close)
	g := &githubHarness{harness: h, gh: gh, clock: c,
		hook: githubapi.Hook{Kind: githubapi.KindRepo, Owner: "acme", Repo: "shop", ID: 12}, path: githubfake.RepoHook("acme", "shop", 12)}
	gh.AddHook(g.path)
	return g
}

func TestAFailingRedeliveryIsAskedLessOften(t *testing.T) {
	t.Parallel()
	g := newGitHubHarnessDown(t)
	g.attempt("down", 502, 20*time.Minute, false)
	r := g.reconciler(nil)
	asks := func() int { g.gh.Flush(); return len(g.redelivered()["down"]) }
	var got []int
	for run := range 8 {
		if _, err := r.Run(context.Background(), reconcile.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		got = append(got, asks())
		if run < 7 {
			g.clock.Add(10 * time.Minute)
		}
	}
	// Runs every 10 minutes: asked at 0, then 10, 30 and 70 minutes.
	if fmt.Sprint(got) != "[1 2 2 3 3 3 3 4]" {
		t.Errorf("redeliveries asked after each run: got %v, want [1 2 2 3 3 3 3 4]", got)
	}
}

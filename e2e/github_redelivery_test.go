package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/githubfake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestAFailedGitHubDeliveryIsRedeliveredAndProcessed: GitHub tried to
// deliver an issues.opened webhook while the inbox was unreachable; make
// dev's reconciler, on its schedule, finds the failed delivery in GitHub's
// list (the fake), has no record of its guid and asks for a redelivery;
// GitHub signs it and POSTs it to the gateway's /webhooks/github, where it
// is stored and processed once. Later runs ask for nothing more.
func TestAFailedGitHubDeliveryIsRedeliveredAndProcessed(t *testing.T) {
	const secret, token = "github e2e redelivery secret", "github_pat_e2e_redelivery"
	body, err := os.ReadFile(filepath.Join("..", "internal", "cli", "samples", "github", "issues.opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	// GitHub's deliveries reach the gateway through this proxy, which
	// answers 503 until the gateway's address is known: a run before then
	// sees its redelivery fail, like any, and asks again.
	var gateway atomic.Pointer[url.URL]
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := gateway.Load()
		if u == nil {
			http.Error(w, "gateway not up yet", http.StatusServiceUnavailable)
			return
		}
		httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	gh := githubfake.Start(githubfake.Config{Token: token, Secret: secret, Target: proxy.URL + "/webhooks/" + provider.GitHub})
	t.Cleanup(gh.Close)
	hook := githubfake.RepoHook("acme", "shop", 12)
	guid := "0b1f4a2e-e2e0-11f0-8000-" + testenv.Prefix(t)[:12]
	failed := gh.Record(hook, githubfake.Delivery{GUID: guid, Event: "issues", Action: "opened", StatusCode: 0,
		DeliveredAt: time.Now().Add(-10 * time.Minute), Payload: body})
	stripe := stripefake.New()
	t.Cleanup(stripe.Close)

	stack := testenv.StartDevstack(t, testenv.DevstackOptions{
		Env: map[string]string{
			"GITHUB_WEBHOOK_SECRET": secret,
			"GITHUB_EVENT_TYPES":    "issues.opened",
			"GITHUB_HOOKS":          "repo:acme/shop/12",
			"GITHUB_API_TOKEN":      token,
			"GITHUB_API_BASE":       gh.URL,
			"STRIPE_API_BASE":       stripe.URL,
			// A redelivery's own attempt is judged a second after it.
			"RECONCILE_SETTLE": "1s",
		},
		Args: []string{"-reconcile-every", "1s"},
	})
	u, err := url.Parse(stack.URL)
	if err != nil {
		t.Fatal(err)
	}
	gateway.Store(u)
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()
	testenv.Eventually(t, 60*time.Second, "the redelivered event to be processed", func() bool {
		r, err := events.Get(ctx, provider.GitHub, guid)
		return err == nil && r.Status == event.StatusProcessed
	})
	r, err := events.Get(ctx, provider.GitHub, guid)
	if err != nil {
		t.Fatal(err)
	}
	if r.Type != "issues.opened" || r.Source != event.SourceWebhook || r.Attempts != 1 {
		t.Errorf("record: got type %s source %s attempts %d, want issues.opened from a webhook, processed once", r.Type, r.Source, r.Attempts)
	}
	// A few more runs: the redelivery succeeded, nothing is asked again.
	testenv.Eventually(t, 30*time.Second, "three more reconciler runs", func() bool {
		return len(stack.Lines(map[string]string{"msg": "reconcile run"})) >= 4
	})
	gh.Flush()
	// Redeliveries until one was answered 200 (the first may have met the
	// proxy before the gateway was up), and none after it.
	var attempts []githubfake.Delivery
	for _, d := range gh.Deliveries(hook) {
		if d.GUID == guid {
			attempts = append(attempts, d)
		}
	}
	last := attempts[len(attempts)-1]
	if len(attempts) < 2 || attempts[0].ID != failed.ID || !last.Redelivery || last.StatusCode != 200 {
		t.Fatalf("attempts at %s: got %+v, want the failed one, then redeliveries ending with a 200", guid, attempts)
	}
	for _, d := range attempts[1 : len(attempts)-1] {
		if d.StatusCode == 200 {
			t.Errorf("attempts at %s: %+v was answered 200 and redelivered again after", guid, d)
		}
	}
	if n := len(stack.Lines(map[string]string{"msg": "missed GitHub delivery redelivered", "event_id": guid})); n != len(attempts)-1 {
		t.Errorf("redelivery log lines: got %d, want one per redelivery (%d)", n, len(attempts)-1)
	}
	if n := len(stack.Lines(map[string]string{"msg": "processed", "event_id": guid})); n != 1 {
		t.Errorf("effects of the event: got %d, want exactly 1", n)
	}
}

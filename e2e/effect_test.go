package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect/billing"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestTheExampleEffectThroughTheLocalStack follows docs/design.md's "Try
// it on the local stack" on the local stack, as make dev runs it, taking
// from the doc what a reader would type: the secret's variable
// (EFFECT_SECRET_BILLING_API_TOKEN), make dev's -parameter-overrides (the
// template's EffectSettings) with the API's address replaced by this
// test's server, the event type sent, and the request the API should get.
// Only the retry backoff is shortened. A paid invoice reaches the billing
// API with the token and the event's idempotency key, the same on the
// retry after the API's 503, and a second delivery of the event calls it
// no more; other events never call it.
func TestTheExampleEffectThroughTheLocalStack(t *testing.T) {
	doc := documentedTrial(t)
	const token = "bt_local_e2e"
	var mu sync.Mutex
	var calls []*http.Request
	var bodies []billing.Paid
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p billing.Paid
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &p)
		mu.Lock()
		calls, bodies = append(calls, r), append(bodies, p)
		first := len(calls) == 1
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if first {
			w.WriteHeader(http.StatusServiceUnavailable) // down, once
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer api.Close()
	overrides := map[string]string{"RetryBackoffBase": "1"}
	for k, v := range doc.overrides {
		overrides[k] = strings.ReplaceAll(v, doc.apiBase, api.URL)
	}
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{
		Overrides: overrides,
		Env:       map[string]string{doc.secretVariable: token},
	})
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()

	paidBody, err := stripefixture.Build(
		doc.eventType,
		stripefixture.Options{ObjectID: "in_e2e_billing", Customer: "cus_e2e_billing", Set: map[string]any{"amount_paid": 4200}},
	)
	if err != nil {
		t.Fatal(err)
	}
	paid, _ := event.DecodeEnvelope(paidBody)
	otherBody, err := stripefixture.Build("customer.subscription.created", stripefixture.Options{Customer: "cus_e2e_billing"})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := event.DecodeEnvelope(otherBody)
	for _, b := range [][]byte{paidBody, otherBody} {
		if status, resp := deliver(t, stack.URL, b, devstack.DefaultWebhookSecret); status != 200 {
			t.Fatalf("delivery: got %d %s", status, resp)
		}
	}
	for _, id := range []string{paid.ID, other.ID} {
		testenv.Eventually(t, 60*time.Second, "event "+id+" processed", func() bool {
			r, err := events.Get(ctx, "stripe", id)
			return err == nil && r.Status == event.StatusProcessed
		})
	}
	if status, resp := deliver(t, stack.URL, paidBody, devstack.DefaultWebhookSecret); status != 200 {
		t.Fatalf("second delivery: got %d %s", status, resp)
	}
	time.Sleep(2 * time.Second) // room for a wrongly enqueued second call

	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("billing API calls: got %d, want 2 (the 503, then its retry)", len(calls))
	}
	for i, r := range calls {
		if r.Method != http.MethodPost || r.URL.Path != doc.apiPath || r.Header.Get("Idempotency-Key") != paid.ID+doc.keySuffix ||
			r.Header.Get("Authorization") != "Bearer "+token {
			t.Errorf(
				"call %d: %s %s, Idempotency-Key %q, Authorization %q",
				i,
				r.Method,
				r.URL.Path,
				r.Header.Get("Idempotency-Key"),
				r.Header.Get("Authorization"),
			)
		}
		if b := bodies[i]; b.EventID != paid.ID || b.Invoice != "in_e2e_billing" || b.Customer != "cus_e2e_billing" || b.AmountPaid != 4200 {
			t.Errorf("call %d: body %+v", i, b)
		}
	}
	if r, _ := events.Get(ctx, "stripe", paid.ID); r.Attempts != 2 {
		t.Errorf("attempts: got %d, want 2", r.Attempts)
	}
}

// trial is what docs/design.md's "Try it on the local stack" tells a reader
// to run.
type trial struct {
	apiBase, apiPath string            // where the reader's billing API listens
	secretVariable   string            // the variable holding the token
	overrides        map[string]string // make dev's -parameter-overrides
	eventType        string            // what inboxctl send sends
	keySuffix        string            // the Idempotency-Key after the event id
}

var (
	docAPI      = regexp.MustCompile("listening at\\s+`(http://[^`]+)`")
	docSecret   = regexp.MustCompile(`(?m)^(EFFECT_SECRET_[A-Z0-9_]+)="\$\(cat billing-token\.txt\)" \\$`)
	docDevFlags = regexp.MustCompile(`(?m)^\s*make dev DEV_FLAGS='-parameter-overrides ([^']+)'$`)
	docSend     = regexp.MustCompile(`(?m)^go run \./cmd/inboxctl send --dev ([a-z_.]+)`)
	docRequest  = regexp.MustCompile("one `POST ([^`]+)` with\\s+`Authorization: Bearer <token>` and\\s+`Idempotency-Key: <event id>(:[a-z-]+)`")
)

// documentedTrial reads the trial's steps from docs/design.md; a step the
// test cannot find there fails it, as it would stop a reader.
func documentedTrial(t *testing.T) trial {
	t.Helper()
	prose, block, after := testenv.DocSteps(t, "docs/design.md", "**Try it on the local stack.**")
	var tr trial
	m := docAPI.FindStringSubmatch(prose)
	if m == nil {
		t.Fatalf("docs/design.md: no billing API address in %q", prose)
	}
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	tr.apiBase, tr.apiPath = u.Scheme+"://"+u.Host, u.Path
	if m = docSecret.FindStringSubmatch(block); m == nil {
		t.Fatalf("docs/design.md: no EFFECT_SECRET_ variable in\n%s", block)
	}
	tr.secretVariable = m[1]
	if m = docDevFlags.FindStringSubmatch(block); m == nil {
		t.Fatalf("docs/design.md: no make dev DEV_FLAGS in\n%s", block)
	}
	tr.overrides = map[string]string{}
	for _, kv := range strings.Fields(m[1]) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("docs/design.md: override %q is not Key=Value", kv)
		}
		tr.overrides[k] = v
	}
	if m = docSend.FindStringSubmatch(block); m == nil {
		t.Fatalf("docs/design.md: no inboxctl send in\n%s", block)
	}
	tr.eventType = m[1]
	if m = docRequest.FindStringSubmatch(after); m == nil || m[1] != tr.apiPath {
		t.Fatalf("docs/design.md: the request the API gets (%q) is not a POST to %s", m, tr.apiPath)
	}
	tr.keySuffix = m[2]
	return tr
}

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/effect/billing"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/tools/testenv"
)

// TestTheExampleEffectThroughTheLocalStack follows docs/design.md's "Your
// own effects" on the local stack, as make dev runs it: the example effect
// declared in shared/hooks, turned on by its setting (the template's
// EffectSettings, -parameter-overrides) and its secret (outside Lambda,
// EFFECT_SECRET_BILLING_API_TOKEN). A paid invoice reaches the billing API
// with the token and the event's idempotency key, the same on the retry
// after the API's 503, and a second delivery of the event calls it no
// more; other events never call it.
func TestTheExampleEffectThroughTheLocalStack(t *testing.T) {
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
		if r.Header.Get("Authorization") != "Bearer bt_local_e2e" {
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
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{
		Overrides: map[string]string{"EffectSettings": billing.SettingURL + "=" + api.URL + "/v1/paid", "RetryBackoffBase": "1"},
		Env:       map[string]string{"EFFECT_SECRET_BILLING_API_TOKEN": "bt_local_e2e"},
	})
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()

	paidBody, err := stripefixture.Build("invoice.paid", stripefixture.Options{ObjectID: "in_e2e_billing", Customer: "cus_e2e_billing", Set: map[string]any{"amount_paid": 4200}})
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
		if r.URL.Path != "/v1/paid" || r.Header.Get("Idempotency-Key") != paid.ID+":billing" || r.Header.Get("Authorization") != "Bearer bt_local_e2e" {
			t.Errorf("call %d: %s, Idempotency-Key %q, Authorization %q", i, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"))
		}
		if b := bodies[i]; b.EventID != paid.ID || b.Invoice != "in_e2e_billing" || b.Customer != "cus_e2e_billing" || b.AmountPaid != 4200 {
			t.Errorf("call %d: body %+v", i, b)
		}
	}
	if r, _ := events.Get(ctx, "stripe", paid.ID); r.Attempts != 2 {
		t.Errorf("attempts: got %d, want 2", r.Attempts)
	}
}

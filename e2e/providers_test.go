package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testenv"
)

// postProvider POSTs body to /webhooks/<name> with headers.
func postProvider(t *testing.T, url, name string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/webhooks/"+name, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEveryProviderThroughTheGateway drives GitHub, Shopify and Standard
// Webhooks deliveries through make dev's stack, each provider turned on by
// its secret variable: signed -> 200 -> processed; the duplicate -> 200
// and one effect; a bad signature -> 400 and nothing stored; a provider
// not served -> 404.
func TestEveryProviderThroughTheGateway(t *testing.T) {
	secrets := map[string]string{
		provider.GitHub:   "github e2e secret",
		provider.Shopify:  "shopify e2e secret",
		provider.Standard: "whsec_ZTJlIHN0YW5kYXJkIGtleQ==",
	}
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Env: map[string]string{
		"GITHUB_WEBHOOK_SECRET":   "github previous secret," + secrets[provider.GitHub],
		"SHOPIFY_WEBHOOK_SECRET":  secrets[provider.Shopify],
		"STANDARD_WEBHOOK_SECRET": secrets[provider.Standard],
		"GITHUB_EVENT_TYPES":      "issues.opened",
		"SHOPIFY_EVENT_TYPES":     "orders/create",
		"STANDARD_EVENT_TYPES":    "invoice.paid",
	}})
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()
	for _, tc := range []struct {
		name, typ, sample, id, badID string
	}{
		{provider.GitHub, "issues.opened", "github/issues.opened.json", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "72d3162e-cc78-11e3-81ab-4c9367dc0959"},
		{provider.Shopify, "orders/create", "shopify/orders/create.json", "98880550-7158-44d4-b7cd-2c97c8a091b5", "98880550-7158-44d4-b7cd-2c97c8a091b6"},
		{provider.Standard, "invoice.paid", "standard/invoice.paid.json", "msg_e2e_1", "msg_e2e_2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("..", "internal", "cli", "testdata", "samples", tc.sample))
			if err != nil {
				t.Fatal(err)
			}
			sign := func(secret, id string) map[string]string {
				h, err := provider.Sign(tc.name, secret, provider.Delivery{ID: id, Type: tc.typ, Shop: "e2e.myshopify.com", Body: body, Now: time.Now()})
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			if status, resp := postProvider(t, stack.URL, tc.name, body, sign(secrets[tc.name], tc.id)); status != 200 {
				t.Fatalf("first delivery: got %d %s, want 200", status, resp)
			}
			testenv.Eventually(t, 30*time.Second, "the event to be processed", func() bool {
				r, err := events.Get(ctx, tc.name, tc.id)
				return err == nil && r.Status == event.StatusProcessed
			})
			if status, resp := postProvider(t, stack.URL, tc.name, body, sign(secrets[tc.name], tc.id)); status != 200 {
				t.Fatalf("second delivery: got %d %s, want 200", status, resp)
			}
			testenv.Eventually(t, 10*time.Second, "the duplicate to be logged", func() bool {
				return len(stack.Lines(map[string]string{"msg": "webhook", "event_id": tc.id, "outcome": "duplicate", "provider": tc.name})) == 1
			})
			// Give a wrongly enqueued duplicate time to be processed.
			time.Sleep(2 * time.Second)
			if n := len(stack.Lines(map[string]string{"msg": "processed", "event_id": tc.id})); n != 1 {
				t.Errorf("effects of the event: got %d, want exactly 1", n)
			}
			r, err := events.Get(ctx, tc.name, tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Provider != tc.name || r.Type != tc.typ || r.Attempts != 1 || r.Source != event.SourceWebhook {
				t.Errorf("record: got provider %s type %s attempts %d source %s", r.Provider, r.Type, r.Attempts, r.Source)
			}
			if tc.name == provider.Shopify && r.Account != "e2e.myshopify.com" {
				t.Errorf("shopify record: account %q, want the shop domain", r.Account)
			}
			// Keyed by provider: Stripe has no event of this id.
			if _, err := events.Get(ctx, event.ProviderStripe, tc.id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("stripe record of the same id: got %v, want none", err)
			}

			if status, resp := postProvider(t, stack.URL, tc.name, body, sign(wrongSecret(tc.name), tc.badID)); status != 400 {
				t.Fatalf("bad signature: got %d %s, want 400", status, resp)
			}
			if _, err := events.Get(ctx, tc.name, tc.badID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("record after a bad signature: got %v, want none", err)
			}
		})
	}
	status, resp := postProvider(t, stack.URL, "gitlab", []byte(`{}`), nil)
	if status != 404 {
		t.Errorf("unknown provider: got %d %s, want 404", status, resp)
	}
	if n := len(stack.Lines(map[string]string{"msg": "webhook", "outcome": "rejected_unknown_provider"})); n != 1 {
		t.Errorf("unknown provider: %d log lines, want 1", n)
	}
}

// TestAProviderWithoutASecretIsNotServed: make dev without
// GITHUB_WEBHOOK_SECRET answers /webhooks/github 404 and stores nothing,
// while Stripe's endpoint works as before.
func TestAProviderWithoutASecretIsNotServed(t *testing.T) {
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{})
	events := eventsStore(t, stack.Prefix)
	body := []byte(`{"action":"opened"}`)
	h, _ := provider.Sign(provider.GitHub, "any", provider.Delivery{ID: "d-404", Type: "issues.opened", Body: body, Now: time.Now()})
	if status, resp := postProvider(t, stack.URL, provider.GitHub, body, h); status != 404 {
		t.Fatalf("got %d %s, want 404", status, resp)
	}
	if _, err := events.Get(context.Background(), provider.GitHub, "d-404"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("record: got %v, want none", err)
	}
}

func wrongSecret(name string) string {
	if name == provider.Standard {
		return "whsec_bm90IHRoZSBrZXk="
	}
	return "not the secret"
}

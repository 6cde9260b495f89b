package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestACapturedBodyUnderAFreshIDIsRejectedThroughTheGateway: GitHub and
// Shopify sign the body only, so whoever captured one genuine delivery
// can send its body and signature again with headers of their choosing.
// Through make dev's gateway: the body under a fresh delivery or event id,
// and for GitHub under another event name, is answered 400
// (rejected_replay) and never becomes a second event; GitHub's redelivery
// (the same delivery id) and Shopify's retry (the same event id, even
// naming another shop) are duplicates; Shopify's same order body under a
// second topic (orders/create beside orders/paid) is a second event, as
// Shopify sends it.
func TestACapturedBodyUnderAFreshIDIsRejectedThroughTheGateway(t *testing.T) {
	const githubSecret, shopifySecret = "github e2e replay secret", "shopify e2e replay secret"
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Env: map[string]string{
		"GITHUB_WEBHOOK_SECRET":  githubSecret,
		"SHOPIFY_WEBHOOK_SECRET": shopifySecret,
		"GITHUB_EVENT_TYPES":     "issues.opened,pull_request.opened",
		"SHOPIFY_EVENT_TYPES":    "orders/create,orders/paid",
	}})
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()
	sample := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "internal", "cli", "samples", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// processed counts the processor's "processed" lines of ids.
	processed := func(ids ...string) int {
		n := 0
		for _, id := range ids {
			n += len(stack.Lines(map[string]string{"msg": "processed", "event_id": id}))
		}
		return n
	}
	type delivery struct {
		what, id, typ, shop string
		status              int
		outcome             string
	}
	check := func(t *testing.T, name, secret string, body []byte, steps []delivery) {
		t.Helper()
		for _, d := range steps {
			h, err := provider.Sign(name, secret, provider.Delivery{ID: d.id, Type: d.typ, Shop: d.shop, Body: body, Now: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			if status, resp := postProvider(t, stack.URL, name, body, h); status != d.status {
				t.Fatalf("%s: got %d %s, want %d", d.what, status, resp, d.status)
			}
			testenv.Eventually(t, 10*time.Second, d.what+": its log line", func() bool {
				return len(stack.Lines(map[string]string{"msg": "webhook", "provider": name, "event_id": d.id, "outcome": d.outcome})) >= 1
			})
			if d.status == 200 && d.outcome == "stored" {
				testenv.Eventually(t, 30*time.Second, d.what+": the event processed", func() bool {
					r, err := events.Get(ctx, name, d.id)
					return err == nil && r.Status == event.StatusProcessed
				})
			}
			if d.status != 200 {
				if _, err := events.Get(ctx, name, d.id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s: record: got %v, want none", d.what, err)
				}
			}
		}
	}

	t.Run(provider.GitHub, func(t *testing.T) {
		body := sample("github/issues.opened.json")
		const id = "5a1e2c3d-0000-11f0-8000-00000000e2e1"
		check(t, provider.GitHub, githubSecret, body, []delivery{
			{"the delivery", id, "issues.opened", "", 200, "stored"},
			{"its body under a fresh delivery id", "5a1e2c3d-0000-11f0-8000-00000000e2e2", "issues.opened", "", 400, "rejected_replay"},
			{"its body under another event name", "5a1e2c3d-0000-11f0-8000-00000000e2e3", "pull_request.opened", "", 400, "rejected_replay"},
			{"GitHub's redelivery", id, "issues.opened", "", 200, "duplicate"},
		})
		// Give a wrongly accepted copy time to be processed.
		time.Sleep(2 * time.Second)
		if n := processed(id, "5a1e2c3d-0000-11f0-8000-00000000e2e2", "5a1e2c3d-0000-11f0-8000-00000000e2e3"); n != 1 {
			t.Errorf("events processed: got %d, want exactly 1", n)
		}
	})

	t.Run(provider.Shopify, func(t *testing.T) {
		body := sample("shopify/orders/create.json")
		const paid, created = "0b6f7a10-e2e0-4a5e-9d1c-00000000e2e1", "0b6f7a10-e2e0-4a5e-9d1c-00000000e2e2"
		check(t, provider.Shopify, shopifySecret, body, []delivery{
			{"orders/paid", paid, "orders/paid", "e2e.myshopify.com", 200, "stored"},
			{"its body under a fresh event id", "0b6f7a10-e2e0-4a5e-9d1c-00000000e2e3", "orders/paid", "e2e.myshopify.com", 400, "rejected_replay"},
			{
				"its body under a fresh event id, naming another shop",
				"0b6f7a10-e2e0-4a5e-9d1c-00000000e2e4",
				"orders/paid",
				"other.myshopify.com",
				400,
				"rejected_replay",
			},
			{"the same order body under orders/create, as Shopify sends it", created, "orders/create", "e2e.myshopify.com", 200, "stored"},
			{"Shopify's retry naming another shop", paid, "orders/paid", "other.myshopify.com", 200, "duplicate"},
		})
		r, err := events.Get(ctx, provider.Shopify, paid)
		if err != nil {
			t.Fatal(err)
		}
		if r.Account != "e2e.myshopify.com" || r.Type != "orders/paid" {
			t.Errorf("record: got account %q type %q, want the first delivery's e2e.myshopify.com, orders/paid", r.Account, r.Type)
		}
		time.Sleep(2 * time.Second)
		if n := processed(paid, created, "0b6f7a10-e2e0-4a5e-9d1c-00000000e2e3", "0b6f7a10-e2e0-4a5e-9d1c-00000000e2e4"); n != 2 {
			t.Errorf("events processed: got %d, want 2 (orders/paid and orders/create)", n)
		}
	})
}

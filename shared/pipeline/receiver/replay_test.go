package receiver_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// signed is a delivery of body to /webhooks/<name>, signed as the provider
// signs it, as API Gateway passes it.
func signed(t *testing.T, name, secret string, body []byte, d provider.Delivery) events.APIGatewayV2HTTPRequest {
	t.Helper()
	d.Body, d.Now = body, time.Now()
	h, err := provider.Sign(name, secret, d)
	if err != nil {
		t.Fatal(err)
	}
	h["content-type"] = "application/json"
	return events.APIGatewayV2HTTPRequest{Headers: h, Body: string(body), PathParameters: map[string]string{"provider": name}}
}

// TestACapturedBodyIsOneEventWhateverItsUnsignedHeaders: GitHub and
// Shopify sign the body only. Against the emulator's tables: a body sent
// again under a fresh delivery or event id, or (GitHub) under another
// event name, is answered 400 rejected_replay, logged with the event it
// is, and stores nothing; the same id again (GitHub's redelivery,
// Shopify's retry, even naming another shop) is the same event (requeued:
// no processor runs here, so its record is still received); Shopify's
// same body under another topic is another event, as Shopify sends
// orders/create and orders/paid.
func TestACapturedBodyIsOneEventWhateverItsUnsignedHeaders(t *testing.T) {
	r := newRig(t)
	h := r.handler(r.stack.AWS, r.common, receiver.DefaultBudget)
	issue := []byte(`{"action":"opened","issue":{"id":1,"number":7,"title":"Refund not applied"},"repository":{"id":42}}`)
	order := []byte(`{"id":820982911946154508,"email":"jon@example.com","financial_status":"paid","total_price":"199.00"}`)
	for _, tc := range []struct {
		what     string
		name     string
		req      events.APIGatewayV2HTTPRequest
		status   int
		outcome  outcome.Outcome
		id       string
		replayOf string
	}{
		{"github: the delivery", provider.GitHub, signed(t, provider.GitHub, githubSecret, issue, provider.Delivery{ID: "d-1", Type: "issues.opened"}), 200, outcome.Stored, "d-1", ""},
		{"github: its body under a fresh delivery id", provider.GitHub, signed(t, provider.GitHub, githubSecret, issue, provider.Delivery{ID: "d-2", Type: "issues.opened"}), 400, outcome.RejectedReplay, "d-2", "d-1"},
		{"github: its body under another event name", provider.GitHub, signed(t, provider.GitHub, githubSecret, issue, provider.Delivery{ID: "d-3", Type: "pull_request.opened"}), 400, outcome.RejectedReplay, "d-3", "d-1"},
		{"github: GitHub's redelivery", provider.GitHub, signed(t, provider.GitHub, githubSecret, issue, provider.Delivery{ID: "d-1", Type: "issues.opened"}), 200, outcome.Requeued, "d-1", ""},
		{"shopify: orders/paid", provider.Shopify, signed(t, provider.Shopify, shopifySecret, order, provider.Delivery{ID: "e-1", Type: "orders/paid", Shop: "a.myshopify.com"}), 200, outcome.Stored, "e-1", ""},
		{"shopify: its body under a fresh event id", provider.Shopify, signed(t, provider.Shopify, shopifySecret, order, provider.Delivery{ID: "e-2", Type: "orders/paid", Shop: "a.myshopify.com"}), 400, outcome.RejectedReplay, "e-2", "e-1"},
		{"shopify: its body under a fresh event id and another shop", provider.Shopify, signed(t, provider.Shopify, shopifySecret, order, provider.Delivery{ID: "e-3", Type: "orders/paid", Shop: "b.myshopify.com"}), 400, outcome.RejectedReplay, "e-3", "e-1"},
		{"shopify: the same body under orders/create", provider.Shopify, signed(t, provider.Shopify, shopifySecret, order, provider.Delivery{ID: "e-4", Type: "orders/create", Shop: "a.myshopify.com"}), 200, outcome.Stored, "e-4", ""},
		{"shopify: orders/create's body under a fresh event id", provider.Shopify, signed(t, provider.Shopify, shopifySecret, order, provider.Delivery{ID: "e-5", Type: "orders/create", Shop: "a.myshopify.com"}), 400, outcome.RejectedReplay, "e-5", "e-4"},
		{"shopify: Shopify's retry, naming another shop", provider.Shopify, signed(t, provider.Shopify, shopifySecret, order, provider.Delivery{ID: "e-1", Type: "orders/paid", Shop: "b.myshopify.com"}), 200, outcome.Requeued, "e-1", ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			resp, err := h.Handle(context.Background(), tc.req)
			if err != nil || resp.StatusCode != tc.status {
				t.Fatalf("got %d, %v; want %d", resp.StatusCode, err, tc.status)
			}
			lines := r.logs.lines(t)
			line := lines[len(lines)-1]
			if line["outcome"] != string(tc.outcome) || line["event_id"] != tc.id || line["provider"] != tc.name {
				t.Errorf(
					"log line: got outcome %v event %v provider %v, want %s %s %s",
					line["outcome"],
					line["event_id"],
					line["provider"],
					tc.outcome,
					tc.id,
					tc.name,
				)
			}
			if tc.replayOf != "" && line["replay_of"] != tc.replayOf {
				t.Errorf("log line: replay_of %v, want %s", line["replay_of"], tc.replayOf)
			}
			if tc.status != 200 {
				if _, err := r.events.Get(context.Background(), tc.name, tc.id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("record of the replay: got %v, want none", err)
				}
			}
		})
	}
	rec, err := r.events.Get(context.Background(), provider.Shopify, "e-1")
	if err != nil || rec.Account != "a.myshopify.com" || rec.Type != "orders/paid" {
		t.Errorf("the first delivery's record: got %+v, %v; want its shop and topic kept", rec, err)
	}
	// Enqueued: the three events, and nothing else.
	seen := map[string]bool{}
	for _, p := range r.drain() {
		seen[p.Provider+"#"+p.ID] = true
	}
	if got := slices.Sorted(maps.Keys(seen)); strings.Join(got, ",") != "github#d-1,shopify#e-1,shopify#e-4" {
		t.Errorf("enqueued: got %v, want github#d-1, shopify#e-1 and shopify#e-4", got)
	}
}

// TestStripeIsNeverClaimed: Stripe signs a timestamp and the body that
// holds the event's id, so its deliveries write no body claim: a new event
// costs what it cost before.
func TestStripeIsNeverClaimed(t *testing.T) {
	r := newRig(t)
	h := r.handler(r.stack.AWS, r.common, receiver.DefaultBudget)
	body := []byte(`{"id":"evt_unclaimed","object":"event","type":"invoice.paid","livemode":false,"created":1700000000}`)
	if resp, err := h.Handle(context.Background(), delivery(body)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %d, %v; want 200", resp.StatusCode, err)
	}
	if _, err := r.events.Get(context.Background(), event.ProviderStripe, "evt_unclaimed"); err != nil {
		t.Fatal(err)
	}
	if n := r.count(); n != 2 {
		t.Errorf("items: got %d, want 2 (the record and its payload, no claim)", n)
	}
}

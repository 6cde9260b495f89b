package stripeapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripemock"
)

// TestStripeAcceptsEveryRequestShape sends each API v1 request the inbox
// makes of Stripe (the platform's account listing, and each read as the
// platform and as a connected account with Stripe-Account) to
// stripe-mock, which validates a request's path,
// method and parameters against Stripe's OpenAPI specification and
// answers 400 to one Stripe would refuse. The stand-in (tools/testing/stripefake)
// tests what the answers mean; this test, that Stripe would take the
// questions. stripe-mock knows no API v2 path, so GET /v2/core/events/{id}
// is checked against the stand-in only.
func TestStripeAcceptsEveryRequestShape(t *testing.T) {
	base := stripemock.Start(t)
	c, err := stripeapi.New(stripeapi.Config{Key: "sk_test_123", BaseURL: base, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The control: stripe-mock refuses a parameter Stripe does not take.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events?status=all", nil)
	req.SetBasicAuth("sk_test_123", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("stripe-mock answered %d to a parameter Stripe refuses; want 400, or this test proves nothing", resp.StatusCode)
	}
	// The platform's own: its connected accounts.
	if ids, err := c.ListAccounts(ctx); err != nil || len(ids) == 0 {
		t.Errorf("ListAccounts: %v, %v; want the mock's account", ids, err)
	}
	for _, account := range []string{"", "acct_1"} {
		name := "the platform"
		if account != "" {
			name = account
		}
		t.Run(name, func(t *testing.T) {
			q := stripeapi.EventQuery{
				CreatedGTE: 1700000000, CreatedLTE: 1700003600, StartingAfter: "evt_older",
				Types: []string{"customer.subscription.updated", "invoice.paid"}, Account: account,
			}
			pages := 0
			if err := c.ListEvents(ctx, q, func(p stripeapi.Page) (bool, error) {
				pages++
				if len(p.Events) == 0 {
					t.Error("ListEvents: a page with no events")
				}
				return false, nil
			}); err != nil || pages != 1 {
				t.Errorf("ListEvents: %d pages, %v; want one page", pages, err)
			}
			if raw, err := c.FetchOf(ctx, account, "evt_123"); err != nil || !isObject(raw, "event") {
				t.Errorf("FetchOf: %v (%.80s)", err, raw)
			}
			for _, typ := range []string{"subscription", "invoice", "customer", "price", "product", "checkout.session"} {
				id := map[string]string{"subscription": "sub_1", "invoice": "in_1", "customer": "cus_1", "price": "price_1", "product": "prod_1", "checkout.session": "cs_1"}[typ]
				if _, err := c.Retrieve(ctx, typ, id, account); err != nil {
					t.Errorf("Retrieve %s: %v", typ, err)
				}
			}
			if raw, err := c.Related(ctx, account, "/v1/subscriptions/sub_1", "sub_1"); err != nil || !isObject(raw, "subscription") {
				t.Errorf("Related: %v (%.80s)", err, raw)
			}
			if err := c.ListSubscriptions(ctx, stripeapi.SubscriptionQuery{StartingAfter: "sub_0", Account: account}, func(p stripeapi.SubscriptionPage) (bool, error) {
				return false, nil
			}); err != nil {
				t.Errorf("ListSubscriptions: %v", err)
			}
		})
	}
}

func isObject(raw []byte, object string) bool {
	var head struct {
		Object string `json:"object"`
	}
	return json.Unmarshal(raw, &head) == nil && head.Object == object
}

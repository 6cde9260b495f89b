package stripeapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// objectOf returns the data.object of a sample event of eventType.
func objectOf(t *testing.T, eventType string, o stripefixture.Options) json.RawMessage {
	t.Helper()
	obj, err := stripefixture.Object(eventType, o)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestRetrieveReadsEachTypeThroughItsOwnCall(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_read", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ eventType, object, id, path string }{
		{"customer.subscription.updated", "subscription", "sub_r1", "/v1/subscriptions/sub_r1"},
		{"invoice.paid", "invoice", "in_r1", "/v1/invoices/in_r1"},
		{"customer.updated", "customer", "cus_r1", "/v1/customers/cus_r1"},
		{"checkout.session.completed", "checkout.session", "cs_r1", "/v1/checkout/sessions/cs_r1"},
		{"product.updated", "product", "prod_r1", "/v1/products/prod_r1"},
		{"price.updated", "price", "price_r1", "/v1/prices/price_r1"},
	} {
		t.Run(tc.object, func(t *testing.T) {
			obj := objectOf(t, tc.eventType, stripefixture.Options{ObjectID: tc.id})
			if err := fake.PutObject("", obj); err != nil {
				t.Fatal(err)
			}
			fake.ResetRequests()
			got, err := c.Retrieve(context.Background(), tc.object, tc.id, "")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(obj) {
				t.Errorf("got %.80s..., want the object byte for byte", got)
			}
			reqs := fake.Retrievals()
			if len(reqs) != 1 || reqs[0].Path != tc.path || reqs[0].Version != stripe.APIVersion || reqs[0].Account != "" {
				t.Errorf("requests: got %+v, want one GET %s in version %s as the platform", reqs, tc.path, stripe.APIVersion)
			}
		})
	}
}

func TestRetrieveReadsAsTheConnectedAccount(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_read", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	obj := objectOf(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_acct"})
	if err := fake.PutObject("acct_1", obj); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Retrieve(context.Background(), "subscription", "sub_acct", ""); !fault.IsPermanent(err) {
		t.Errorf("as the platform: got %v, want a permanent 404 (the object is the account's)", err)
	}
	if _, err := c.Retrieve(context.Background(), "subscription", "sub_acct", "acct_1"); err != nil {
		t.Errorf("as acct_1: got %v, want the object", err)
	}
	if reqs := fake.Retrievals(); len(reqs) != 2 || reqs[1].Account != "acct_1" {
		t.Errorf("requests: got %+v, want the second with Stripe-Account acct_1", reqs)
	}
}

// TestRetrieveDownOrRateLimitedIsRetryable: the caller must never settle on
// a guess, so an API that cannot answer now fails retryably.
func TestRetrieveDownOrRateLimitedIsRetryable(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_read", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.PutObject("", objectOf(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_down"})); err != nil {
		t.Fatal(err)
	}
	for _, status := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		fake.FailNext(1, status)
		_, err := c.Retrieve(context.Background(), "subscription", "sub_down", "")
		if err == nil || fault.IsPermanent(err) {
			t.Errorf("status %d: got %v, want a retryable error", status, err)
		}
	}
	if _, err := c.Retrieve(context.Background(), "coupon", "co_1", ""); !fault.IsPermanent(err) {
		t.Errorf("a type the mirror does not keep: got %v, want permanent", err)
	}
}

// TestNoRedirectIsFollowed: stripe-go adds the key to every request it
// makes, so a redirect followed would carry it to another host.
func TestNoRedirectIsFollowed(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect was followed, with Authorization %q", r.Header.Get("Authorization"))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	for _, hc := range []*http.Client{nil, {}} {
		c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_redirect", BaseURL: srv.URL, MaxNetworkRetries: -1, HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Retrieve(context.Background(), "subscription", "sub_1", ""); err == nil {
			t.Errorf("client %v: got no error, want the 302 refused", hc)
		}
		if _, err := c.Fetch(context.Background(), "evt_1"); err == nil {
			t.Errorf("client %v: fetch got no error, want the 302 refused", hc)
		}
	}
}

// TestListSubscriptionsListsCanceledOnesToo: Stripe's default list leaves
// canceled subscriptions out; status=all lists them, page by page,
// resumable after an id.
func TestListSubscriptionsListsCanceledOnesToo(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_read", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 150 {
		status := "active"
		if i%50 == 7 {
			status = "canceled"
		}
		id := fmt.Sprintf("sub_list%03d", i)
		if err := fake.PutObject("", objectOf(t, "customer.subscription.updated", stripefixture.Options{ObjectID: id, Status: status})); err != nil {
			t.Fatal(err)
		}
		want = append([]string{id}, want...) // newest first
	}
	list := func(after string, stopAfter int) (ids []string, pages int) {
		err := c.ListSubscriptions(context.Background(), stripeapi.SubscriptionQuery{StartingAfter: after}, func(p stripeapi.SubscriptionPage) (bool, error) {
			pages++
			for _, raw := range p.Subscriptions {
				var s struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(raw, &s)
				ids = append(ids, s.ID)
			}
			return stopAfter == 0 || pages < stopAfter, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids, pages
	}
	ids, pages := list("", 0)
	if fmt.Sprint(ids) != fmt.Sprint(want) || pages != 2 {
		t.Errorf("got %d subscriptions in %d pages, want all %d (3 canceled) in 2", len(ids), pages, len(want))
	}
	for _, r := range fake.SubscriptionLists() {
		if r.Query.Get("status") != "all" || r.Query.Get("limit") != "100" {
			t.Errorf("request %v: want status=all, limit=100", r.Query)
		}
	}
	first, _ := list("", 1)
	rest, _ := list(first[len(first)-1], 0)
	if fmt.Sprint(append(first, rest...)) != fmt.Sprint(want) {
		t.Errorf("stopped after a page and resumed: got %d, want the same %d in order", len(first)+len(rest), len(want))
	}
}

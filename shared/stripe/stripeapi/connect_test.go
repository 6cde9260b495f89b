package stripeapi_test

import (
	"context"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// TestFetchOfAConnectedAccount: a connected account's event is read with
// the Stripe-Account header; without it, or for another account, Stripe
// (the stand-in, as Stripe) finds no such event, a permanent failure.
// Listing with EventQuery.Account sends the same header.
func TestFetchOfAConnectedAccount(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	body, err := stripefixture.Build("invoice.paid", stripefixture.Options{ID: "evt_of_acct", Account: "acct_1", Created: 1700000000})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Add(body); err != nil {
		t.Fatal(err)
	}
	c, err := stripeapi.New(stripeapi.Config{Key: "sk_test_platform", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := c.FetchOf(ctx, "acct_1", "evt_of_acct")
	if err != nil || string(got) != string(body) {
		t.Fatalf("FetchOf acct_1: got %d bytes, %v; want the event unchanged", len(got), err)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || reqs[0].Account != "acct_1" {
		t.Errorf("requests: got %+v, want one with Stripe-Account acct_1", reqs)
	}
	for name, fetch := range map[string]func() ([]byte, error){
		"the platform's":  func() ([]byte, error) { return c.Fetch(ctx, "evt_of_acct") },
		"another account": func() ([]byte, error) { return c.FetchOf(ctx, "acct_2", "evt_of_acct") },
	} {
		if _, err := fetch(); !fault.IsPermanent(err) {
			t.Errorf("%s: got %v, want a permanent not-found", name, err)
		}
	}
	fake.ResetRequests()
	listed := 0
	err = c.ListEvents(ctx, stripeapi.EventQuery{Account: "acct_1"}, func(p stripeapi.Page) (bool, error) {
		listed += len(p.Events)
		return true, nil
	})
	if err != nil || listed != 1 {
		t.Fatalf("ListEvents of acct_1: got %d events, %v; want 1", listed, err)
	}
	if l := fake.Lists(); len(l) != 1 || l[0].Account != "acct_1" {
		t.Errorf("list requests: got %+v, want one with Stripe-Account acct_1", l)
	}
}

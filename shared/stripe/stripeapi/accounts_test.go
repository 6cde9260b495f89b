package stripeapi_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// TestListAccountsEveryPage: every connected account is listed, over as
// many pages as it takes, with the platform's key and no Stripe-Account;
// a failed listing is an error, not a short list.
func TestListAccountsEveryPage(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	var want []string
	for i := range stripeapi.PageLimit + 5 {
		id := fmt.Sprintf("acct_%03d", i)
		fake.AddAccount(id)
		want = append(want, id)
	}
	c, err := stripeapi.New(stripeapi.Config{Key: "sk_test_platform", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ListAccounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("got %d accounts, want %d: %v", len(got), len(want), got)
	}
	var pages int
	for _, r := range fake.Requests() {
		if r.Path == "/v1/accounts" {
			pages++
			if r.Account != "" {
				t.Errorf("request with Stripe-Account %q, want the platform's own", r.Account)
			}
		}
	}
	if pages != 2 {
		t.Errorf("pages: got %d, want 2", pages)
	}
	fake.FailNext(1, http.StatusInternalServerError)
	if got, err := c.ListAccounts(context.Background()); err == nil || fault.IsPermanent(err) {
		t.Fatalf("after a 500: got %v, %v; want an error worth retrying", got, err)
	}
}

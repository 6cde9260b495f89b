package reconcilerboot

import (
	"context"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

type keyParameter struct{ value *string }

func (k keyParameter) GetParameter(context.Context, string) (secrets.Parameter, error) {
	return secrets.Parameter{Type: "SecureString", Value: *k.value}, nil
}

// TestTheListerTakesARotatedKey: the reconciler's client reads the API key
// again when Stripe answers 401, once a minute has passed since it was
// read, and lists with the new key.
func TestTheListerTakesARotatedKey(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	fake.RequireKey("rk_test_new")
	stored := "rk_test_old"
	clk := time.Unix(1_800_000_000, 0)
	key := secrets.FromParameter(func() secrets.SSM { return keyParameter{&stored} }, "/webhook-inbox/dev/stripe/api-key")
	key.SetClock(func() time.Time { return clk })
	l, err := newLister(key, fake.URL, 20)
	if err != nil {
		t.Fatal(err)
	}
	list := func() error {
		return l.ListEvents(context.Background(), stripeapi.EventQuery{}, func(stripeapi.Page) (bool, error) { return true, nil })
	}
	if err := list(); !stripeapi.Unauthorized(err) {
		t.Fatalf("old key: got %v, want a 401", err)
	}
	stored = "rk_test_new"
	clk = clk.Add(time.Minute)
	if err := list(); err != nil {
		t.Errorf("a minute later, the key rotated in Parameter Store: got %v, want the listing", err)
	}
}

package stripeapi_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// keyStore is Parameter Store holding the API key, counting reads.
type keyStore struct {
	mu    sync.Mutex
	value string
	reads int
}

func (k *keyStore) GetParameter(context.Context, string) (secrets.Parameter, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reads++
	return secrets.Parameter{Name: "/webhook-inbox/dev/stripe/api-key", Type: "SecureString", Value: k.value}, nil
}

func (k *keyStore) set(v string) { k.mu.Lock(); k.value = v; k.mu.Unlock() }

func (k *keyStore) count() int { k.mu.Lock(); defer k.mu.Unlock(); return k.reads }

// TestARotatedKeyTakesEffectWithinAMinute: the API key rolled in Stripe
// and stored in Parameter Store is picked up on a 401 a minute or more
// after the key in hand was read (Config.KeyRefused =
// secrets.Secret.Refresh), for fetches and listings alike, and the request
// that met the 401 succeeds with it; within the minute a 401 stays an
// error (retryable: the processor's backoff and the next reconciler run
// try again), and costs no read.
func TestARotatedKeyTakesEffectWithinAMinute(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	body, err := stripefixture.Build("invoice.paid", stripefixture.Options{ID: "evt_rotated", Created: time.Now().Unix() - 60})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Add(body); err != nil {
		t.Fatal(err)
	}
	fake.RequireKey("rk_test_old")
	ks := &keyStore{value: "rk_test_old"}
	var mu sync.Mutex
	clk := time.Unix(1_800_000_000, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clk }
	key := secrets.FromParameter(func() secrets.SSM { return ks }, "/webhook-inbox/dev/stripe/api-key")
	key.SetClock(now)
	c, err := stripeapi.New(stripeapi.Config{BaseURL: fake.URL, MaxNetworkRetries: -1, KeyFunc: key.Value, KeyRefused: key.Refresh})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list := func() error {
		return c.ListEvents(ctx, stripeapi.EventQuery{}, func(stripeapi.Page) (bool, error) { return true, nil })
	}
	if _, err := c.Fetch(ctx, "evt_rotated"); err != nil {
		t.Fatalf("before the rotation: %v", err)
	}
	// Rolled in Stripe (the old key stops working) and stored.
	fake.RequireKey("rk_test_new")
	ks.set("rk_test_new")
	mu.Lock()
	clk = clk.Add(30 * time.Second)
	mu.Unlock()
	if _, err := c.Fetch(ctx, "evt_rotated"); !stripeapi.Unauthorized(err) || fault.IsPermanent(err) {
		t.Fatalf("30 s after the read: got %v, want a retryable 401", err)
	}
	if err := list(); !stripeapi.Unauthorized(err) {
		t.Fatalf("listing 30 s after the read: got %v, want the 401", err)
	}
	if n := ks.count(); n != 1 {
		t.Fatalf("reads within the minute: got %d, want 1", n)
	}
	mu.Lock()
	clk = clk.Add(30 * time.Second)
	mu.Unlock()
	if got, err := c.Fetch(ctx, "evt_rotated"); err != nil || string(got) != string(body) {
		t.Fatalf("a minute after the read: got %d bytes, %v; want the event with the new key", len(got), err)
	}
	if err := list(); err != nil {
		t.Fatalf("listing with the new key: %v", err)
	}
	if n := ks.count(); n != 2 {
		t.Errorf("reads: got %d, want 2", n)
	}
}

// TestAListingRefusedHalfwayIsNotListedAgain: a key revoked after pages
// were handed over fails the listing rather than handing them over twice;
// the next listing meets the 401 on its first request and gets the new key
// then.
func TestAListingRefusedHalfwayIsNotListedAgain(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	for i := range 150 {
		b, err := stripefixture.Build("invoice.paid", stripefixture.Options{Created: time.Now().Unix() - 600 + int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := fake.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	fake.RequireKey("rk_test_old")
	refreshed := 0
	c, err := stripeapi.New(stripeapi.Config{BaseURL: fake.URL, MaxNetworkRetries: -1, Key: "rk_test_old",
		KeyRefused: func(context.Context, string) (string, bool, error) { refreshed++; return "rk_test_new", true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	err = c.ListEvents(context.Background(), stripeapi.EventQuery{}, func(stripeapi.Page) (bool, error) {
		pages++
		fake.RequireKey("rk_test_new") // revoked after the first page
		return true, nil
	})
	if !stripeapi.Unauthorized(err) || pages != 1 || refreshed != 0 {
		t.Errorf("got %v after %d pages, %d refreshes; want the 401 after 1 page, nothing listed again", err, pages, refreshed)
	}
}

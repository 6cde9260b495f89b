package stripeapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

func fakeWith(t testing.TB, n int) (*stripefake.Server, map[string][]byte) {
	t.Helper()
	s := stripefake.New()
	t.Cleanup(s.Close)
	bodies := map[string][]byte{}
	for i := range n {
		id := fmt.Sprintf("evt_%04d", i)
		b, err := stripefixture.Build("invoice.paid", stripefixture.Options{ID: id, Created: 1_700_000_000 + int64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(b); err != nil {
			t.Fatal(err)
		}
		bodies[id] = b
	}
	return s, bodies
}

func idOf(t *testing.T, raw []byte) string {
	env, err := event.DecodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	return env.ID
}

func TestListEventsHandsOverWholePagesOfRawEvents(t *testing.T) {
	s, bodies := fakeWith(t, 250)
	c := mustNew(t, Config{Key: "sk_test_x", BaseURL: s.URL})
	var sizes []int
	seen := 0
	err := c.ListEvents(context.Background(), EventQuery{CreatedGTE: 1_700_000_000, Types: []string{"invoice.paid"}}, func(p Page) (bool, error) {
		sizes = append(sizes, len(p.Events))
		for _, raw := range p.Events {
			id := idOf(t, raw)
			if !bytes.Equal(raw, bodies[id]) {
				t.Fatalf("event %s: the page's bytes differ from the event Stripe sent", id)
			}
			seen++
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sizes) != "[100 100 50]" || seen != 250 {
		t.Fatalf("pages: got %v (%d events), want [100 100 50]", sizes, seen)
	}
	if n := len(s.Lists()); n != 3 {
		t.Errorf("list calls: got %d, want 3", n)
	}
}

func TestListEventsStopsBeforeTheNextRequest(t *testing.T) {
	s, _ := fakeWith(t, 150)
	c := mustNew(t, Config{Key: "sk_test_x", BaseURL: s.URL})
	pages := 0
	err := c.ListEvents(context.Background(), EventQuery{}, func(p Page) (bool, error) {
		pages++
		return false, nil
	})
	if err != nil || pages != 1 {
		t.Fatalf("got %d pages, %v; want 1, nil", pages, err)
	}
	if n := len(s.Lists()); n != 1 {
		t.Errorf("list calls: got %d, want 1", n)
	}
	stop := errors.New("stop")
	if err := c.ListEvents(context.Background(), EventQuery{}, func(Page) (bool, error) { return true, stop }); !errors.Is(err, stop) {
		t.Errorf("page's error: got %v, want %v", err, stop)
	}
}

func TestListEventsEmptyAndRateLimited(t *testing.T) {
	s, _ := fakeWith(t, 3)
	c := mustNew(t, Config{Key: "sk_test_x", BaseURL: s.URL})
	var got []Page
	err := c.ListEvents(context.Background(), EventQuery{CreatedGTE: 1_800_000_000}, func(p Page) (bool, error) {
		got = append(got, p)
		return true, nil
	})
	if err != nil || len(got) != 1 || len(got[0].Events) != 0 || got[0].HasMore {
		t.Fatalf("empty listing: got %+v, %v; want one empty final page", got, err)
	}

	s.FailNext(1, http.StatusTooManyRequests)
	called := false
	err = c.ListEvents(context.Background(), EventQuery{}, func(Page) (bool, error) { called = true; return true, nil })
	if !RateLimited(err) || called {
		t.Fatalf("429: got %v (page called: %v), want a rate-limit error and no page", err, called)
	}
	if RateLimited(errors.New("other")) {
		t.Error("RateLimited of a plain error: got true")
	}
	if err := c.ListEvents(context.Background(), EventQuery{Types: make([]string, 21)}, nil); err == nil {
		t.Error("21 types: got nil error")
	}
}

func TestRateLimitSpacesRequests(t *testing.T) {
	s, _ := fakeWith(t, 1)
	const rate, n = 40.0, 5
	c := mustNew(t, Config{Key: "sk_test_x", BaseURL: s.URL, RateLimit: rate})
	start := time.Now()
	for range n {
		if _, err := c.Fetch(context.Background(), "evt_0000"); err != nil {
			t.Fatal(err)
		}
	}
	// A lower bound, never an upper one: n requests at rate r cannot take
	// less than (n-1)/r, however fast or slow the machine.
	if min := time.Duration(float64(n-1) / rate * float64(time.Second)); time.Since(start) < min {
		t.Errorf("%d requests at %.0f/s took %s, want at least %s", n, rate, time.Since(start), min)
	}
}

// BenchmarkListEventsPage is one page of 100 realistic events from a local
// server: HTTP, stripe-go's decoding into stripe.Events (which the iterator
// always does), and the split of the raw body into events.
func BenchmarkListEventsPage(b *testing.B) {
	s, _ := fakeWith(b, 100)
	c := mustNew(b, Config{Key: "sk_test_x", BaseURL: s.URL})
	for b.Loop() {
		if err := c.ListEvents(context.Background(), EventQuery{}, func(Page) (bool, error) { return false, nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitPage is the reconciler's own share of a page: splitting the
// raw body into per-event json.RawMessage.
func BenchmarkSplitPage(b *testing.B) {
	s, _ := fakeWith(b, 100)
	c := mustNew(b, Config{Key: "sk_test_x", BaseURL: s.URL})
	var raw []byte
	_ = c.ListEvents(context.Background(), EventQuery{}, func(Page) (bool, error) { return false, nil })
	events, err := c.events(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	it := events.List(&stripe.EventListParams{})
	it.Next()
	raw = it.EventList().LastResponse.RawJSON
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := decodePage(&stripe.EventList{APIResource: stripe.APIResource{LastResponse: &stripe.APIResponse{RawJSON: raw}}}); err != nil {
			b.Fatal(err)
		}
	}
}

func mustNew(t testing.TB, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

package stripefake

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/stripe/stripe-go/v81"
	"github.com/stripe/stripe-go/v81/client"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
)

// newClient is a per-instance stripe-go client pointed at the fake.
func newClient(s *Server, key string) *client.API {
	bc := &stripe.BackendConfig{
		URL:               stripe.String(s.URL),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(1),
	}
	return client.New(key, &stripe.Backends{
		API:     stripe.GetBackendWithConfig(stripe.APIBackend, bc),
		Connect: stripe.GetBackendWithConfig(stripe.ConnectBackend, bc),
		Uploads: stripe.GetBackendWithConfig(stripe.UploadsBackend, bc),
	})
}

// seed adds n events: types alternate between invoice.paid and
// customer.created, created = base + i/2 so pairs share a second.
func seed(t *testing.T, s *Server, n int, base int64) []string {
	t.Helper()
	var ids []string
	for i := range n {
		typ := "invoice.paid"
		if i%2 == 1 {
			typ = "customer.created"
		}
		id := fmt.Sprintf("evt_%03d", i)
		body, err := stripefixture.Build(typ, stripefixture.Options{ID: id, Created: base + int64(i/2)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(body); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func list(t *testing.T, api *client.API, p *stripe.EventListParams) []string {
	t.Helper()
	var got []string
	it := api.Events.List(p)
	for it.Next() {
		got = append(got, it.Event().ID)
	}
	if err := it.Err(); err != nil {
		t.Fatalf("list: %v", err)
	}
	return got
}

func TestListFiltersPaginatesNewestFirst(t *testing.T) {
	s := New()
	defer s.Close()
	ids := seed(t, s, 25, 1000)
	api := newClient(s, "sk_test_fake")

	p := &stripe.EventListParams{
		CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: 1002, LesserThanOrEqual: 1009},
		Types:        stripe.StringSlice([]string{"invoice.paid"}),
	}
	p.Limit = stripe.Int64(3)
	got := list(t, api, p)
	// invoice.paid are the even indexes; created 1002..1009 is i in 4..19.
	var want []string
	for i := 18; i >= 4; i -= 2 {
		want = append(want, ids[i])
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	lists := s.Lists()
	if len(lists) != 3 { // 8 events, 3 per page
		t.Fatalf("list calls: got %d, want 3", len(lists))
	}
	if gte, ok := lists[0].Created("gte"); !ok || gte != 1002 {
		t.Errorf("created[gte] as received: got %d %v", gte, ok)
	}
	if tys := lists[0].Types(); !slices.Equal(tys, []string{"invoice.paid"}) {
		t.Errorf("types as received: got %v", tys)
	}
	if after := lists[1].Query.Get("starting_after"); after != want[2] {
		t.Errorf("second page starting_after: got %q, want %q", after, want[2])
	}
}

func TestListBackwardsWithEndingBefore(t *testing.T) {
	s := New()
	defer s.Close()
	ids := seed(t, s, 10, 1000)
	api := newClient(s, "sk_test_fake")
	p := &stripe.EventListParams{}
	p.EndingBefore = stripe.String(ids[2])
	p.Limit = stripe.Int64(3)
	// stripe-go reverses backward pages: oldest first, towards the present.
	got := list(t, api, p)
	if want := ids[3:]; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestExactCreatedTypeWildcardAndGet(t *testing.T) {
	s := New()
	defer s.Close()
	ids := seed(t, s, 6, 1000)
	api := newClient(s, "sk_test_fake")
	p := &stripe.EventListParams{Created: stripe.Int64(1001)}
	if got, want := list(t, api, p), []string{ids[3], ids[2]}; !slices.Equal(got, want) {
		t.Errorf("created=1001: got %v, want %v", got, want)
	}
	p = &stripe.EventListParams{Type: stripe.String("customer.*")}
	if got, want := list(t, api, p), []string{ids[5], ids[3], ids[1]}; !slices.Equal(got, want) {
		t.Errorf("type=customer.*: got %v, want %v", got, want)
	}
	ev, err := api.Events.Get(ids[4], nil)
	if err != nil || ev.ID != ids[4] || string(ev.Type) != "invoice.paid" {
		t.Fatalf("get: got %v %v", ev, err)
	}
	_, err = api.Events.Get("evt_nope", nil)
	var se *stripe.Error
	if !errors.As(err, &se) || se.HTTPStatusCode != 404 || se.Code != stripe.ErrorCodeResourceMissing {
		t.Fatalf("get unknown: got %v, want 404 resource_missing", err)
	}
}

func TestBadRequestsGetStripesErrors(t *testing.T) {
	s := New()
	defer s.Close()
	seed(t, s, 2, 1000)
	api := newClient(s, "sk_test_fake")
	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf("t.%d", i)
	}
	tests := []struct {
		name   string
		params func() *stripe.EventListParams
		status int
	}{
		{"limit above 100", func() *stripe.EventListParams {
			p := &stripe.EventListParams{}
			p.Limit = stripe.Int64(101)
			return p
		}, 400},
		{"21 types", func() *stripe.EventListParams { return &stripe.EventListParams{Types: stripe.StringSlice(many)} }, 400},
		{"type and types", func() *stripe.EventListParams {
			return &stripe.EventListParams{Type: stripe.String("a"), Types: stripe.StringSlice([]string{"b"})}
		}, 400},
		{"unknown cursor", func() *stripe.EventListParams {
			p := &stripe.EventListParams{}
			p.StartingAfter = stripe.String("evt_gone")
			return p
		}, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := api.Events.List(tc.params())
			for it.Next() {
			}
			var se *stripe.Error
			if !errors.As(it.Err(), &se) || se.HTTPStatusCode != tc.status {
				t.Fatalf("got %v, want HTTP %d", it.Err(), tc.status)
			}
		})
	}
}

func TestAuthAndInjectedFaults(t *testing.T) {
	s := New()
	defer s.Close()
	seed(t, s, 2, 1000)
	s.RequireKey("sk_test_right")
	it := newClient(s, "sk_test_wrong").Events.List(&stripe.EventListParams{})
	for it.Next() {
	}
	var se *stripe.Error
	if !errors.As(it.Err(), &se) || se.HTTPStatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong key: got %v, want 401", it.Err())
	}

	api := newClient(s, "sk_test_right")
	s.FailNext(1, http.StatusTooManyRequests)
	it = api.Events.List(&stripe.EventListParams{})
	for it.Next() {
	}
	if !errors.As(it.Err(), &se) || se.HTTPStatusCode != http.StatusTooManyRequests || se.Code != stripe.ErrorCodeRateLimit {
		t.Fatalf("injected 429: got %v", it.Err())
	}

	// stripe-go retries a 5xx (MaxNetworkRetries is 1 here): two requests,
	// one answer.
	s.ResetRequests()
	s.FailNext(1, http.StatusServiceUnavailable)
	if got := list(t, api, &stripe.EventListParams{}); len(got) != 2 {
		t.Fatalf("after a retried 503: got %v", got)
	}
	var statuses []int
	for _, r := range s.Requests() {
		statuses = append(statuses, r.Status)
	}
	if !slices.Equal(statuses, []int{503, 200}) {
		t.Errorf("statuses: got %v, want [503 200]", statuses)
	}
}

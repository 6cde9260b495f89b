package stripeapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// v2API answers GET /v2/core/events/{id} and GET /v1/subscriptions/{id}:
// status[id] as a Stripe error when set, else body[id] (an object whose
// id is id when unset). It records every request's path and headers.
type v2API struct {
	status map[string]int
	body   map[string]string
	mu     sync.Mutex
	seen   []*http.Request
}

func (a *v2API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.seen = append(a.seen, r)
	a.mu.Unlock()
	i := strings.LastIndex(r.URL.Path, "/")
	id := r.URL.Path[i+1:]
	w.Header().Set("Content-Type", "application/json")
	if s, ok := a.status[id]; ok {
		w.WriteHeader(s)
		fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","message":"answered %d"}}`, s)
		return
	}
	if b, ok := a.body[id]; ok {
		fmt.Fprint(w, b)
		return
	}
	fmt.Fprintf(w, `{"id":%q,"object":"v2.core.event"}`, id)
}

func (a *v2API) last() *http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[len(a.seen)-1]
}

func (a *v2API) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

func v2Client(t *testing.T, a *v2API) *stripeapi.Client {
	t.Helper()
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_thin", BaseURL: srv.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestThinEvent: the event is read from its API v2 path, as the account
// (Stripe-Context, never Stripe-Account); a 404 or an answer that is
// another event is permanent, a 429 or a 5xx retryable.
func TestThinEvent(t *testing.T) {
	a := &v2API{
		status: map[string]int{"evt_404": 404, "evt_429": 429, "evt_500": 500},
		body:   map[string]string{"evt_swapped": `{"id":"evt_other","object":"v2.core.event"}`, "evt_noid": `{"object":"v2.core.event"}`},
	}
	c := v2Client(t, a)
	for _, tc := range []struct {
		name, account, id string
		wantErr           bool
		wantPermanent     bool
	}{
		{name: "the platform's", id: "evt_1"},
		{name: "a connected account's", account: "acct_1", id: "evt_2"},
		{name: "404", id: "evt_404", wantErr: true, wantPermanent: true},
		{name: "429", id: "evt_429", wantErr: true},
		{name: "500", id: "evt_500", wantErr: true},
		{name: "another event", id: "evt_swapped", wantErr: true, wantPermanent: true},
		{name: "no id", id: "evt_noid", wantErr: true, wantPermanent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := c.ThinEvent(context.Background(), tc.account, tc.id)
			r := a.last()
			if r.Method != http.MethodGet || r.URL.Path != "/v2/core/events/"+tc.id {
				t.Errorf("request: got %s %s, want GET /v2/core/events/%s", r.Method, r.URL.Path, tc.id)
			}
			if got := r.Header.Get("Stripe-Context"); got != tc.account {
				t.Errorf("Stripe-Context: got %q, want %q", got, tc.account)
			}
			if got := r.Header.Get("Stripe-Account"); got != "" {
				t.Errorf("Stripe-Account: got %q, want none on an API v2 request", got)
			}
			if !tc.wantErr {
				if err != nil || !strings.Contains(string(raw), `"id":"`+tc.id+`"`) {
					t.Errorf("got %s, %v; want the event", raw, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %s, want an error", raw)
			}
			if got := fault.IsPermanent(err); got != tc.wantPermanent {
				t.Errorf("permanent: got %v, want %v (%v)", got, tc.wantPermanent, err)
			}
			if strings.Contains(err.Error(), "rk_test_thin") {
				t.Errorf("error shows the key: %v", err)
			}
		})
	}
	t.Run("not an event id", func(t *testing.T) {
		before := a.count()
		for _, id := range []string{"", "evt_1/../x", "evt_1?x=1", "evt_1#x"} {
			if _, err := c.ThinEvent(context.Background(), "", id); !fault.IsPermanent(err) {
				t.Errorf("%q: got %v, want permanent", id, err)
			}
		}
		if n := a.count() - before; n != 0 {
			t.Errorf("requests: got %d, want none", n)
		}
	})
}

// TestRelated: the related object is read from its url, as the account
// (Stripe-Account, an API v1 request); a url that is no API v1 path is
// refused before any request; a 404 or another object is permanent, a
// 429 or a 5xx retryable.
func TestRelated(t *testing.T) {
	a := &v2API{
		status: map[string]int{"sub_404": 404, "sub_429": 429, "sub_500": 500},
		body: map[string]string{"sub_1": `{"id":"sub_1","object":"subscription"}`, "sub_2": `{"id":"sub_2","object":"subscription"}`,
			"sub_swapped": `{"id":"sub_other","object":"subscription"}`},
	}
	c := v2Client(t, a)
	for _, tc := range []struct {
		name, account, id string
		wantErr           bool
		wantPermanent     bool
	}{
		{name: "the platform's", id: "sub_1"},
		{name: "a connected account's", account: "acct_1", id: "sub_2"},
		{name: "404", id: "sub_404", wantErr: true, wantPermanent: true},
		{name: "429", id: "sub_429", wantErr: true},
		{name: "500", id: "sub_500", wantErr: true},
		{name: "another object", id: "sub_swapped", wantErr: true, wantPermanent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := c.Related(context.Background(), tc.account, "/v1/subscriptions/"+tc.id, tc.id)
			r := a.last()
			if r.Method != http.MethodGet || r.URL.Path != "/v1/subscriptions/"+tc.id {
				t.Errorf("request: got %s %s, want GET /v1/subscriptions/%s", r.Method, r.URL.Path, tc.id)
			}
			if got := r.Header.Get("Stripe-Account"); got != tc.account {
				t.Errorf("Stripe-Account: got %q, want %q", got, tc.account)
			}
			if got := r.Header.Get("Stripe-Context"); got != "" {
				t.Errorf("Stripe-Context: got %q, want none on an API v1 request", got)
			}
			if !tc.wantErr {
				if err != nil || string(raw) != a.body[tc.id] {
					t.Errorf("got %s, %v; want %s", raw, err, a.body[tc.id])
				}
				return
			}
			if err == nil {
				t.Fatalf("got %s, want an error", raw)
			}
			if got := fault.IsPermanent(err); got != tc.wantPermanent {
				t.Errorf("permanent: got %v, want %v (%v)", got, tc.wantPermanent, err)
			}
		})
	}
	t.Run("not an API v1 path", func(t *testing.T) {
		before := a.count()
		for _, url := range []string{"https://example.com/v1/subscriptions/sub_1", "/v2/core/events/evt_1", "/v1/subscriptions/sub_1?expand[]=x",
			"/v1/../v2/x", "/v1/subscriptions/sub_1#x", "subscriptions/sub_1"} {
			if _, err := c.Related(context.Background(), "", url, "sub_1"); !fault.IsPermanent(err) {
				t.Errorf("%q: got %v, want permanent", url, err)
			}
		}
		if n := a.count() - before; n != 0 {
			t.Errorf("requests: got %d, want none", n)
		}
	})
}

package stripeapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/stripeapi"
)

// eventsAPI serves GET /v1/events/{id} from events, as Stripe does, and
// answers status for ids in fail.
type eventsAPI struct {
	events map[string][]byte
	fail   map[string]int
	calls  atomic.Int32
	auth   atomic.Value
}

func (a *eventsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.calls.Add(1)
	a.auth.Store(r.Header.Get("Authorization"))
	id, ok := strings.CutPrefix(r.URL.Path, "/v1/events/")
	if r.Method != http.MethodGet || !ok {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if status, ok := a.fail[id]; ok {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"scripted failure"}}`))
		return
	}
	body, ok := a.events[id]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such event: '` + id + `'"}}`))
		return
	}
	_, _ = w.Write(body)
}

func TestFetchReturnsTheRawEvent(t *testing.T) {
	body, err := stripefixture.Build("invoice.paid", stripefixture.Options{ID: "evt_fetch", Created: 1700000000})
	if err != nil {
		t.Fatal(err)
	}
	api := &eventsAPI{events: map[string][]byte{"evt_fetch": body}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_fetch", BaseURL: srv.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}

	got, err := c.Fetch(context.Background(), "evt_fetch")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(body) {
		t.Errorf("Fetch: got %d bytes, want the %d bytes served, unchanged", len(got), len(body))
	}
	if auth := api.auth.Load(); auth != "Bearer rk_test_fetch" {
		t.Errorf("Authorization: got %q, want the configured key as a bearer token", auth)
	}
}

func TestFetchClassifiesErrors(t *testing.T) {
	other, _ := json.Marshal(map[string]any{"id": "evt_other", "object": "event", "type": "invoice.paid", "data": map[string]any{"object": map[string]any{"id": "in_1"}}})
	api := &eventsAPI{
		events: map[string][]byte{"evt_swapped": other},
		fail:   map[string]int{"evt_500": 500, "evt_429": 429, "evt_401": 401, "evt_400": 400},
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_x", BaseURL: srv.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id            string
		wantPermanent bool
	}{
		{"evt_missing", true}, // 404: past retention, or never existed
		{"evt_400", true},
		{"evt_swapped", true}, // the API answered with another event
		{"evt_500", false},
		{"evt_429", false},
		{"evt_401", false}, // a key an operator can fix
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			before := api.calls.Load()
			_, err := c.Fetch(context.Background(), tc.id)
			if err == nil {
				t.Fatal("got no error")
			}
			if got := fault.IsPermanent(err); got != tc.wantPermanent {
				t.Errorf("permanent: got %v, want %v (%v)", got, tc.wantPermanent, err)
			}
			if n := api.calls.Load() - before; n != 1 {
				t.Errorf("requests: got %d, want 1 (retries disabled)", n)
			}
		})
	}
}

func TestTheKeyGoesOnlyToHTTPSOrLoopback(t *testing.T) {
	for _, base := range []string{"http://stripe.example.com", "http://10.0.0.7:12111", "ftp://api.stripe.com", "api.stripe.com"} {
		if _, err := stripeapi.New(stripeapi.Config{Key: "sk_live_x", BaseURL: base}); err == nil {
			t.Errorf("New with API base %q: got nil error, want it refused", base)
		}
		if _, err := stripeapi.BaseURL(base); err == nil {
			t.Errorf("BaseURL(%q): got nil error, want it refused", base)
		}
	}
	for base, want := range map[string]string{
		"":                        "https://api.stripe.com",
		"https://stripe.internal": "https://stripe.internal",
		"http://127.0.0.1:12111/": "http://127.0.0.1:12111",
		"http://localhost:12111":  "http://localhost:12111",
	} {
		got, err := stripeapi.BaseURL(base)
		if err != nil || got != want {
			t.Errorf("BaseURL(%q): got %q, %v; want %q", base, got, err, want)
		}
	}
}

package stripeapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
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
	other, _ := json.Marshal(
		map[string]any{"id": "evt_other", "object": "event", "type": "invoice.paid", "data": map[string]any{"object": map[string]any{"id": "in_1"}}},
	)
	api := &eventsAPI{
		events: map[string][]byte{"evt_swapped": other},
		fail: map[string]int{"evt_500": 500, "evt_502": 502, "evt_429": 429, "evt_401": 401, "evt_403": 403,
			"evt_400": 400, "evt_408": 408, "evt_409": 409},
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
		{"evt_502", false},
		{"evt_429", false},
		{"evt_401", false}, // a key an operator can fix
		{"evt_403", false},
		{"evt_408", false}, // nothing ran: safe to repeat
		{"evt_409", false}, // a concurrent request or lock: Stripe says retry
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
			if strings.Contains(err.Error(), "rk_test_x") {
				t.Errorf("error shows the key: %v", err)
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

// TestFetchReadsTheKeyForEachRequest: with KeyFunc, New reads no key; each
// request asks for it, and a failure to get it is the request's error,
// retryable, without a request to Stripe.
func TestFetchReadsTheKeyForEachRequest(t *testing.T) {
	body, err := stripefixture.Build("invoice.paid", stripefixture.Options{ID: "evt_key"})
	if err != nil {
		t.Fatal(err)
	}
	api := &eventsAPI{events: map[string][]byte{"evt_key": body}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	var asked atomic.Int32
	keyErr := errors.New("secrets: read parameter /webhook-inbox/dev/stripe/api-key: AccessDeniedException")
	failing := true
	c, err := stripeapi.New(stripeapi.Config{BaseURL: srv.URL, MaxNetworkRetries: -1, KeyFunc: func(context.Context) (string, error) {
		asked.Add(1)
		if failing {
			return "", keyErr
		}
		return "rk_test_lazy", nil
	}})
	if err != nil || asked.Load() != 0 {
		t.Fatalf("New: %v, key asked %d times; want no key read", err, asked.Load())
	}
	_, err = c.Fetch(context.Background(), "evt_key")
	if !errors.Is(err, keyErr) || fault.IsPermanent(err) || api.calls.Load() != 0 {
		t.Fatalf(
			"key unavailable: got %v (permanent %v, %d requests); want the key's error, retryable, and no request",
			err,
			fault.IsPermanent(err),
			api.calls.Load(),
		)
	}
	failing = false
	if got, err := c.Fetch(context.Background(), "evt_key"); err != nil || string(got) != string(body) {
		t.Fatalf("key available: got %d bytes, %v", len(got), err)
	}
	if auth := api.auth.Load(); auth != "Bearer rk_test_lazy" {
		t.Errorf("Authorization: got %q", auth)
	}
}

// TestFetchBoundsTheResponse: an answer over MaxResponseBytes fails its
// event for good instead of being read whole into memory, whether its
// length is announced or not.
func TestFetchBoundsTheResponse(t *testing.T) {
	big, err := stripefixture.Build("invoice.paid", stripefixture.Options{ID: "evt_big"})
	if err != nil {
		t.Fatal(err)
	}
	for _, chunked := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if chunked {
				w.(http.Flusher).Flush() // no Content-Length
			}
			_, _ = w.Write(big)
		}))
		c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_x", BaseURL: srv.URL, MaxNetworkRetries: -1, MaxResponseBytes: int64(len(big)) - 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Fetch(context.Background(), "evt_big")
		if !errors.Is(err, stripeapi.ErrTooLarge) || !fault.IsPermanent(err) {
			t.Errorf("chunked %v: got %v, want a permanent ErrTooLarge", chunked, err)
		}
		c, _ = stripeapi.New(stripeapi.Config{Key: "rk_test_x", BaseURL: srv.URL, MaxNetworkRetries: -1, MaxResponseBytes: int64(len(big))})
		if got, err := c.Fetch(context.Background(), "evt_big"); err != nil || len(got) != len(big) {
			t.Errorf("chunked %v, exactly the limit: got %d bytes, %v", chunked, len(got), err)
		}
		srv.Close()
	}
}

package effect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v81/webhook"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
)

func TestForward(t *testing.T) {
	var got *http.Request
	var body string
	status := 200
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.WriteHeader(status)
	}))
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	f := &Forward{URL: srv.URL, Secret: "fwd_secret", Now: func() time.Time { return now }}
	ev := Event{Record: event.Record{ID: "evt_1", Type: "invoice.paid"}, Payload: []byte(`{"id":"evt_1"}`), IdempotencyKey: Key("evt_1", "forward")}

	if _, err := f.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if body != `{"id":"evt_1"}` || got.Header.Get("Idempotency-Key") != "evt_1:forward" || got.Header.Get("Webhook-Inbox-Event-Type") != "invoice.paid" {
		t.Errorf("request: body %q headers %v", body, got.Header)
	}
	// Verified as Forward's doc tells the application to: stripe-go's
	// verifier, with the forward secret. The clock is fixed, so the age
	// is checked apart.
	sig := got.Header.Get("Webhook-Inbox-Signature")
	if err := webhook.ValidatePayloadIgnoringTolerance([]byte(body), sig, "fwd_secret"); err != nil || !strings.HasPrefix(sig, "t=1800000000,v1=") {
		t.Errorf("signature %q: %v; want a valid one signed at 1800000000", sig, err)
	}
	if err := webhook.ValidatePayloadIgnoringTolerance([]byte(body), sig, "other_secret"); err == nil {
		t.Errorf("signature %q verifies with another secret", sig)
	}

	for _, tc := range []struct {
		status    int
		permanent bool
	}{{500, false}, {503, false}, {429, false}, {400, true}, {404, true}} {
		status = tc.status
		_, err := f.Handle(context.Background(), ev)
		if err == nil || fault.IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), "answered") {
			t.Errorf("status %d: got %v, want an error with permanent=%v", tc.status, err, tc.permanent)
		}
	}
	srv.Close()
	if _, err := f.Handle(context.Background(), ev); err == nil || fault.IsPermanent(err) {
		t.Errorf("application down: got %v, want a retryable error", err)
	}
}

// TestForwardFollowsNoRedirect: a target that redirects never completes
// the effect, and nothing is sent to the host Location names, even through
// a client that would follow redirects.
func TestForwardFollowsNoRedirect(t *testing.T) {
	var elsewhere []string
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Method+" "+r.Header.Get("Webhook-Inbox-Signature"))
		mu.Unlock()
	}))
	defer other.Close()
	location := other.URL + "/collect/t0ken?key=s3cret"
	ev := Event{Record: event.Record{ID: "evt_1", Type: "invoice.paid"}, Payload: []byte(`{"id":"evt_1"}`), IdempotencyKey: Key("evt_1", "forward")}

	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for name, client := range map[string]*http.Client{"boot's client": {Timeout: 10 * time.Second}, "no client": nil, "the default client": http.DefaultClient} {
			t.Run(fmt.Sprintf("%d %s", status, name), func(t *testing.T) {
				target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, location, status)
				}))
				defer target.Close()
				mu.Lock()
				elsewhere = nil
				mu.Unlock()
				f := &Forward{URL: target.URL, Secret: "fwd_secret", Client: client}
				_, err := f.Handle(context.Background(), ev)
				mu.Lock()
				if len(elsewhere) != 0 {
					t.Errorf("the Location's host got %v, want no request", elsewhere)
				}
				mu.Unlock()
				if err == nil || !fault.IsPermanent(err) {
					t.Fatalf("got %v, want a permanent failure: the event must not be marked done", err)
				}
				if !strings.Contains(err.Error(), strconv.Itoa(status)) || !strings.Contains(err.Error(), "redirect") {
					t.Errorf("error %q does not name the status %d and the redirect", err, status)
				}
				for _, secret := range []string{"t0ken", "s3cret", "collect"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q shows the Location's %q", err, secret)
					}
				}
			})
		}
	}
}

func TestForwardSendsNothingInPlainHTTPBeyondThisMachine(t *testing.T) {
	for _, target := range []string{"http://app.example.com/hooks?key=s3cret", "ftp://app.example.com/hooks", "app.example.com/hooks"} {
		if err := CheckURL(target); err == nil {
			t.Errorf("CheckURL(%q): got nil error, want the target refused", target)
		}
		f := &Forward{URL: target, Client: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			t.Errorf("%s: a request was sent to %s", target, r.URL.Host)
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
		})}}
		_, err := f.Handle(context.Background(), Event{Record: event.Record{ID: "evt_1"}, Payload: []byte(`{}`)})
		if err == nil || !fault.IsPermanent(err) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: got %v, want a permanent failure that does not show the query", target, err)
		}
	}
	for _, target := range []string{"https://app.example.com/hooks", "http://127.0.0.1:8080/hooks", "http://[::1]:8080/", "http://localhost:8080/"} {
		if err := CheckURL(target); err != nil {
			t.Errorf("CheckURL(%q): %v, want it allowed", target, err)
		}
	}
}

func TestForwardNetworkErrorsNameTheHostOnly(t *testing.T) {
	f := &Forward{
		URL: "https://app.example.com/hooks/t0ken?key=s3cret",
		Client: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("connection refused")
		})},
	}
	_, err := f.Handle(context.Background(), Event{Record: event.Record{ID: "evt_1"}, Payload: []byte(`{}`)})
	if err == nil || fault.IsPermanent(err) {
		t.Fatalf("got %v, want a retryable error", err)
	}
	if !strings.Contains(err.Error(), "app.example.com") || strings.Contains(err.Error(), "t0ken") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q: want the host, never the path or query", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

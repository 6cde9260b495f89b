package effect

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/fault"
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
	mac := hmac.New(sha256.New, []byte("fwd_secret"))
	mac.Write([]byte("1800000000." + body))
	if want := "t=1800000000,v1=" + hex.EncodeToString(mac.Sum(nil)); got.Header.Get("Webhook-Inbox-Signature") != want {
		t.Errorf("signature: got %q, want %q", got.Header.Get("Webhook-Inbox-Signature"), want)
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

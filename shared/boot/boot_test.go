package boot

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/shared/fault"
)

func envMap(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestEveryConfigurationProblemIsReportedAtOnce(t *testing.T) {
	_, err := Receiver(context.Background(), envMap(map[string]string{
		"STRIPE_MODE":         "production",
		"SIGNATURE_TOLERANCE": "five minutes",
		"MAX_BODY_BYTES":      "1MB",
	}), aws.Config{}, slog.Default())
	if err == nil {
		t.Fatal("got nil error for an empty configuration")
	}
	for _, want := range []string{"EVENTS_TABLE", "MIRROR_TABLE", "QUEUE_URL", "STRIPE_MODE", "SIGNATURE_TOLERANCE", "MAX_BODY_BYTES"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func TestProcessorNeedsTheRedriveCount(t *testing.T) {
	_, err := Processor(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "MAX_RECEIVE_COUNT") {
		t.Fatalf("got %v, want an error naming MAX_RECEIVE_COUNT", err)
	}
}

func TestHandledTypes(t *testing.T) {
	def := HandledTypes(envMap(nil), nil)
	if !def("invoice.paid") || def("charge.refunded") {
		t.Error("default allowlist: want the mirror's types only")
	}
	custom := HandledTypes(envMap(map[string]string{"EVENT_TYPES": "charge.refunded, invoice.paid"}), nil)
	if !custom("charge.refunded") || !custom("invoice.paid") || custom("customer.created") {
		t.Error("EVENT_TYPES: want exactly the listed types")
	}
}

func TestSecretNeverInTheError(t *testing.T) {
	// A local secret that is not a usable list still never reaches an error.
	_, err := Receiver(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_WEBHOOK_SECRET": " , ",
	}), aws.Config{}, slog.Default())
	if err == nil {
		t.Fatal("got nil error for a blank secret list")
	}
	if strings.Contains(err.Error(), "whsec") {
		t.Errorf("error leaks a secret: %v", err)
	}
}

func TestEventFetcher(t *testing.T) {
	var gotAuth, gotPath string
	status, body := http.StatusOK, `{"id":"evt_1","object":"event"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	f := newEventFetcher("sk_test_key", srv.URL+"/")

	got, err := f.Fetch(context.Background(), "evt_1")
	if err != nil || string(got) != body {
		t.Fatalf("got %q, %v; want the event's JSON", got, err)
	}
	if gotAuth != "Bearer sk_test_key" || gotPath != "/v1/events/evt_1" {
		t.Errorf("request: got %q %q, want the bearer key and /v1/events/evt_1", gotAuth, gotPath)
	}
	for _, tc := range []struct {
		status    int
		permanent bool
	}{
		{http.StatusNotFound, true},
		{http.StatusUnauthorized, true},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, false},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			status, body = tc.status, `{"error":{"message":"No such event: 'evt_1'"}}`
			_, err := f.Fetch(context.Background(), "evt_1")
			if err == nil {
				t.Fatal("got nil error")
			}
			if fault.IsPermanent(err) != tc.permanent {
				t.Errorf("permanent: got %v, want %v (%v)", fault.IsPermanent(err), tc.permanent, err)
			}
			if !strings.Contains(err.Error(), "No such event") || strings.Contains(err.Error(), "sk_test_key") {
				t.Errorf("error: got %v, want Stripe's message and never the key", err)
			}
		})
	}
}

func TestHTTPClientResumesTLSSessions(t *testing.T) {
	tr := HTTPClient().GetTransport()
	if tr.TLSClientConfig == nil || tr.TLSClientConfig.ClientSessionCache == nil {
		t.Fatal("no TLS session cache: a connection closed while frozen would need a full handshake")
	}
	if tr.TLSClientConfig.MinVersion < tls.VersionTLS12 {
		t.Errorf("TLS minimum version: got %x, want at least TLS 1.2", tr.TLSClientConfig.MinVersion)
	}
}

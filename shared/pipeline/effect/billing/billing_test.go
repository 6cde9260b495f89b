package billing

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

// api is a billing API: it answers status, checks the token, and keeps
// every request.
type api struct {
	mu     sync.Mutex
	token  string
	status int
	reqs   []*http.Request
	bodies []string
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs, a.bodies = append(a.reqs, r), append(a.bodies, string(b))
	if r.Header.Get("Authorization") != "Bearer "+a.token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.WriteHeader(a.status)
}

func (a *api) set(token string, status int) {
	a.mu.Lock()
	a.token, a.status = token, status
	a.mu.Unlock()
}

// tokenStore is Parameter Store holding the token, counting reads.
type tokenStore struct {
	mu    sync.Mutex
	value string
	reads int
}

func (p *tokenStore) GetParameter(context.Context, string) (secrets.Parameter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	return secrets.Parameter{Type: "SecureString", Value: p.value}, nil
}

func paidEvent(t *testing.T) effect.Event {
	t.Helper()
	body, err := stripefixture.Build(
		"invoice.paid",
		stripefixture.Options{ID: "evt_paid_1", ObjectID: "in_paid_1", Customer: "cus_paid_1", Set: map[string]any{"amount_paid": 2000}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return effect.Event{Record: event.Record{ID: "evt_paid_1", Type: "invoice.paid"}, Payload: body, IdempotencyKey: effect.Key("evt_paid_1", "billing")}
}

func build(t *testing.T, url string, token *secrets.Secret) effect.Handler {
	t.Helper()
	h, err := Spec.New(effect.NewConfig(map[string]string{SettingURL: url}, map[string]*secrets.Secret{SecretToken: token}))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestTellsTheBillingAPIWithTheIdempotencyKey: the request is what the
// package doc says, from the invoice in the event, with the token and the
// event's idempotency key, the same on a retry.
func TestTellsTheBillingAPIWithTheIdempotencyKey(t *testing.T) {
	a := &api{token: "bt_1", status: http.StatusCreated}
	srv := httptest.NewServer(a)
	defer srv.Close()
	h := build(t, srv.URL+"/v1/paid", secrets.Fixed("EFFECT_SECRET_BILLING_API_TOKEN", "bt_1"))
	ev := paidEvent(t)
	for range 2 { // the second: a retry of the same event
		if w, err := h.Handle(context.Background(), ev); err != nil || len(w) != 0 {
			t.Fatalf("got %v, %v; want done, no DynamoDB write", w, err)
		}
	}
	for i, r := range a.reqs {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/paid" || r.Header.Get("Idempotency-Key") != "evt_paid_1:billing" ||
			r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer bt_1" {
			t.Errorf("request %d: %s %s, headers %v", i, r.Method, r.URL.Path, r.Header)
		}
	}
	var got Paid
	if err := json.Unmarshal([]byte(a.bodies[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.EventID != "evt_paid_1" || got.Invoice != "in_paid_1" || got.Customer != "cus_paid_1" || got.AmountPaid != 2000 || got.Currency == "" {
		t.Errorf("body: got %+v, want the invoice's id, customer, amount and currency", got)
	}
	if a.bodies[0] != a.bodies[1] {
		t.Errorf("a retry sent another body: %s, then %s", a.bodies[0], a.bodies[1])
	}
}

// TestAConnectedAccountsInvoice: the account is in the body and ahead of
// the event's key.
func TestAConnectedAccountsInvoice(t *testing.T) {
	a := &api{token: "bt_1", status: http.StatusCreated}
	srv := httptest.NewServer(a)
	defer srv.Close()
	h := build(t, srv.URL+"/v1/paid", secrets.Fixed("EFFECT_SECRET_BILLING_API_TOKEN", "bt_1"))
	ev := paidEvent(t)
	ev.Record.Account = "acct_1"
	if _, err := h.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if got := a.reqs[0].Header.Get("Idempotency-Key"); got != "acct_1:evt_paid_1:billing" {
		t.Errorf("Idempotency-Key: got %q, want acct_1:evt_paid_1:billing", got)
	}
	var got Paid
	if err := json.Unmarshal([]byte(a.bodies[0]), &got); err != nil || got.Account != "acct_1" {
		t.Errorf("body: got %+v, %v; want account acct_1", got, err)
	}
}

func TestAnswers(t *testing.T) {
	for _, tc := range []struct {
		status    int
		permanent bool
	}{{500, false}, {503, false}, {429, false}, {403, false}, {400, true}, {404, true}, {422, true}, {302, true}} {
		a := &api{token: "bt_1", status: tc.status}
		srv := httptest.NewServer(a)
		h := build(t, srv.URL, secrets.Fixed("t", "bt_1"))
		_, err := h.Handle(context.Background(), paidEvent(t))
		if err == nil || fault.IsPermanent(err) != tc.permanent {
			t.Errorf("status %d: got %v, want an error with permanent=%v", tc.status, err, tc.permanent)
		}
		srv.Close()
	}
	h := build(t, "http://127.0.0.1:1", secrets.Fixed("t", "bt_1"))
	if _, err := h.Handle(context.Background(), paidEvent(t)); err == nil || fault.IsPermanent(err) {
		t.Errorf("API down: got %v, want a retryable error", err)
	}
	bad := paidEvent(t)
	bad.Payload = []byte(`{"id":"evt_x","data":{"object":{"object":"invoice"}}}`)
	if _, err := h.Handle(context.Background(), bad); !fault.IsPermanent(err) {
		t.Errorf("an invoice without an id: got %v, want a permanent failure", err)
	}
}

// TestARotatedTokenTakesEffectWithinAMinute: the API answering 401 makes
// the effect read the token again, at most once a minute since it was
// read, and the same event is sent with the new one; until then the 401
// is retried (the event waits within the retry budget).
func TestARotatedTokenTakesEffectWithinAMinute(t *testing.T) {
	a := &api{token: "bt_old", status: http.StatusOK}
	srv := httptest.NewServer(a)
	defer srv.Close()
	ps := &tokenStore{value: "bt_old"}
	clk := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clk }
	token := secrets.FromParameter(func() secrets.SSM { return ps }, "/webhook-inbox/dev/effects/billing-api-token")
	token.SetClock(now)
	h := build(t, srv.URL, token)
	if ps.reads != 0 {
		t.Fatalf("New read the token %d times, want none", ps.reads)
	}
	ctx := context.Background()
	if _, err := h.Handle(ctx, paidEvent(t)); err != nil {
		t.Fatal(err)
	}
	a.set("bt_new", http.StatusOK) // rotated at the API...
	ps.mu.Lock()
	ps.value = "bt_new" // ...and in Parameter Store
	ps.mu.Unlock()
	mu.Lock()
	clk = clk.Add(30 * time.Second)
	mu.Unlock()
	if _, err := h.Handle(ctx, paidEvent(t)); err == nil || fault.IsPermanent(err) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("30 s after the read: got %v, want a retryable 401", err)
	}
	mu.Lock()
	clk = clk.Add(30 * time.Second)
	mu.Unlock()
	if _, err := h.Handle(ctx, paidEvent(t)); err != nil {
		t.Fatalf("a minute after the read: got %v, want the event sent with the new token", err)
	}
	if ps.reads != 2 {
		t.Errorf("token reads: got %d, want 2", ps.reads)
	}
}

// TestNoTokenElsewhere: a URL that is neither https nor loopback http is
// refused at the cold start, naming no path or query; a redirect is never
// followed, so the token goes nowhere else.
func TestNoTokenElsewhere(t *testing.T) {
	_, err := Spec.New(
		effect.NewConfig(
			map[string]string{SettingURL: "http://billing.example.com/paid?key=s3cret"},
			map[string]*secrets.Secret{SecretToken: secrets.Fixed("t", "bt")},
		),
	)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), SettingURL) {
		t.Errorf("plain http elsewhere: got %v, want a refusal naming %s and no query", err, SettingURL)
	}
	var elsewhere []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
	}))
	defer other.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	h := build(t, redirect.URL, secrets.Fixed("t", "bt"))
	if _, err := h.Handle(context.Background(), paidEvent(t)); !fault.IsPermanent(err) || len(elsewhere) != 0 {
		t.Errorf("redirect: got %v, %d requests elsewhere; want a permanent failure and none", err, len(elsewhere))
	}
}

package processorboot

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// env is a processor configuration that builds without AWS: no secret is
// read from SSM.
func env(extra map[string]string) func(string) string {
	m := map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "MAX_RECEIVE_COUNT": "5"}
	for k, v := range extra {
		m[k] = v
	}
	return envMap(m)
}

func build(e func(string) string, logger *slog.Logger, effects *effect.Registry) error {
	_, err := FromEnv(context.Background(), e, aws.Config{}, logger, effects)
	return err
}

func TestNeedsTheRedriveCount(t *testing.T) {
	err := build(envMap(map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q"}), slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "MAX_RECEIVE_COUNT") {
		t.Fatalf("got %v, want an error naming MAX_RECEIVE_COUNT", err)
	}
}

func TestRejectsAnUnreadableFieldList(t *testing.T) {
	err := build(env(map[string]string{"MIRROR_KEEP_FIELDS": "charge:metadata"}), slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "MIRROR_KEEP_FIELDS") || !strings.Contains(err.Error(), `"charge"`) {
		t.Fatalf("got %v, want an error naming MIRROR_KEEP_FIELDS and the unknown type", err)
	}
}

func TestForwardTargetMustBeHTTPSOrLoopback(t *testing.T) {
	err := build(env(map[string]string{"FORWARD_URL": "http://app.example.com/hooks?token=s3cret", "FORWARD_SECRET": "fwd_local"}), slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "FORWARD_URL") || !strings.Contains(err.Error(), "https") {
		t.Fatalf("plain http to another host: got %v, want a configuration error naming FORWARD_URL and https", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q shows the target's query", err)
	}
	for _, target := range []string{"https://app.example.com/hooks", "http://127.0.0.1:8080/hooks", "http://localhost:8080/hooks", "http://[::1]:8080/hooks"} {
		if err := build(env(map[string]string{"FORWARD_URL": target, "FORWARD_SECRET": "fwd_local"}), slog.Default(), nil); err != nil {
			t.Errorf("FORWARD_URL=%s: %v, want it accepted", target, err)
		}
	}
}

func TestLiveModeRefusesAnUnsignedForward(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	err := build(env(map[string]string{"STRIPE_MODE": "live", "FORWARD_URL": "https://app.example.com/hooks"}), logger, nil)
	if err == nil || !strings.Contains(err.Error(), "FORWARD_SECRET_PARAMETER") || !strings.Contains(err.Error(), "live") {
		t.Fatalf("live mode, no forward secret: got %v, want a cold-start error naming FORWARD_SECRET_PARAMETER", err)
	}
	if err := build(env(map[string]string{"STRIPE_MODE": "live", "FORWARD_URL": "https://app.example.com/hooks", "FORWARD_SECRET": "fwd_live"}), logger, nil); err != nil {
		t.Errorf("live mode with a secret: %v", err)
	}
	// A parameter is a secret too: it is read on first need, not now.
	if err := build(env(map[string]string{"STRIPE_MODE": "live", "FORWARD_URL": "https://app.example.com/hooks", "FORWARD_SECRET_PARAMETER": "/webhook-inbox/live/forward"}), logger, nil); err != nil {
		t.Errorf("live mode with a secret's parameter: %v", err)
	}
	// Test mode keeps the warning, so a first local try needs no secret.
	logs.Reset()
	if err := build(env(map[string]string{"FORWARD_URL": "https://app.example.com/hooks"}), logger, nil); err != nil {
		t.Fatalf("test mode, no forward secret: %v, want a warning only", err)
	}
	if !strings.Contains(logs.String(), "without a signing secret") {
		t.Errorf("test mode, no forward secret: logs %q, want the warning", logs.String())
	}
}

func TestStripeAPIBaseMustBeHTTPSOrLoopback(t *testing.T) {
	err := build(env(map[string]string{"STRIPE_API_BASE": "http://stripe.example.com", "STRIPE_API_KEY": "sk_test_local"}), slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "STRIPE_API_BASE") {
		t.Errorf("plain http API base: got %v, want an error naming STRIPE_API_BASE", err)
	}
	if _, err := newFetcher(secrets.Fixed("STRIPE_API_KEY", "sk_test_key"), "http://stripe.example.com"); err == nil {
		t.Error("fetcher, plain http API base: got nil error")
	}
}

// TestTheTeamsRegistryIsNotChanged: the forward effect runs after the
// team's effects without being registered into the registry the caller
// handed over (which the caller may share, as hooks.Registry() callers do).
func TestTheTeamsRegistryIsNotChanged(t *testing.T) {
	reg := &effect.Registry{}
	var ran []string
	reg.On(effect.Func{HandlerName: "team", Fn: func(context.Context, effect.Event) ([]types.TransactWriteItem, error) {
		ran = append(ran, "team")
		return nil, nil
	}}, "invoice.paid")
	if err := build(env(map[string]string{"FORWARD_URL": "https://app.example.com/hooks", "FORWARD_SECRET": "fwd_local"}), slog.Default(), reg); err != nil {
		t.Fatal(err)
	}
	if reg.Handles("customer.created") || strings.Join(reg.Types(), ",") != "invoice.paid" {
		t.Errorf("the caller's registry changed: it handles customer.created %v, types %v", reg.Handles("customer.created"), reg.Types())
	}
}

// TestEffectsRunTheTeamsThenForward: the team's effects, then the forward
// effect, their writes together; the first error stops the run.
func TestEffectsRunTheTeamsThenForward(t *testing.T) {
	var order []string
	handler := func(name string, err error) effect.Handler {
		return effect.Func{HandlerName: name, Fn: func(context.Context, effect.Event) ([]types.TransactWriteItem, error) {
			order = append(order, name)
			return []types.TransactWriteItem{{}}, err
		}}
	}
	team, fwd := &effect.Registry{}, &effect.Registry{}
	team.On(handler("team", nil), "*")
	fwd.On(handler("forward", nil), "*")
	writes, err := then{first: team, next: fwd}.Run(context.Background(), event.Record{ID: "evt_1", Type: "invoice.paid"}, nil)
	if err != nil || len(writes) != 2 || strings.Join(order, ",") != "team,forward" {
		t.Fatalf("got %d writes, %v, order %v; want 2, nil, team then forward", len(writes), err, order)
	}
	order = nil
	failing := &effect.Registry{}
	failing.On(handler("team", errors.New("down")), "*")
	if _, err := (then{first: failing, next: fwd}).Run(context.Background(), event.Record{ID: "evt_1", Type: "invoice.paid"}, nil); err == nil ||
		strings.Join(order, ",") != "team" {
		t.Errorf("got %v, order %v; want the team's error and no forward", err, order)
	}
	if _, err := (then{next: fwd}).Run(context.Background(), event.Record{ID: "evt_1"}, nil); err != nil {
		t.Errorf("no team effects: %v", err)
	}
}

// TestForwardReadsItsSecretOnFirstUse: the forward secret is read when the
// first event is forwarded, once; a failure to read it fails that event,
// retryably, without a request to the application.
func TestForwardReadsItsSecretOnFirstUse(t *testing.T) {
	var got atomic.Value
	var posts atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		got.Store(r.Header.Get("Webhook-Inbox-Signature"))
	}))
	defer app.Close()
	reads, fail := 0, true
	secret := secretFunc(t, func() (string, error) {
		reads++
		if fail {
			return "", errors.New("secrets: read parameter /webhook-inbox/dev/forward-secret: AccessDeniedException")
		}
		return "fwd_secret", nil
	})
	f := &forward{url: app.URL, secret: secret, client: app.Client()}
	ev := effect.Event{Record: event.Record{ID: "evt_f", Type: "invoice.paid"}, Payload: []byte(`{"id":"evt_f"}`), IdempotencyKey: "evt_f:forward"}
	if _, err := f.Handle(context.Background(), ev); err == nil || fault.IsPermanent(err) || posts.Load() != 0 {
		t.Fatalf("secret unavailable: got %v (permanent %v, %d posts), want a retryable error and no post", err, fault.IsPermanent(err), posts.Load())
	}
	fail = false
	// A failed read is remembered for secrets.FailureBackoff: the event's
	// retry comes later than that.
	secret.SetClock(func() time.Time { return time.Now().Add(secrets.FailureBackoff) })
	for range 2 {
		if _, err := f.Handle(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 2 || posts.Load() != 2 {
		t.Errorf("reads %d, posts %d; want 2 reads (one failed) and 2 posts", reads, posts.Load())
	}
	if sig, _ := got.Load().(string); !strings.HasPrefix(sig, "t=") || !strings.Contains(sig, ",v1=") {
		t.Errorf("Webhook-Inbox-Signature: got %q, want a signature", sig)
	}
}

// TestFetcherClassifiesLikeStripeAPI: the processor fetches events through
// package stripeapi, so a 409 (a conflicting request, which Stripe says to
// retry) and a 408 are retried, a 404 is not, and the key is read on first
// need only, once.
func TestFetcherClassifiesLikeStripeAPI(t *testing.T) {
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk_test_key" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if s := int(status.Load()); s != http.StatusOK {
			w.WriteHeader(s)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"No such event: 'evt_1'"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"id":"evt_1","object":"event"}`))
	}))
	defer srv.Close()
	reads := 0
	f, err := newFetcher(secretFunc(t, func() (string, error) { reads++; return "sk_test_key", nil }), srv.URL)
	if err != nil || reads != 0 {
		t.Fatalf("newFetcher: %v, %d key reads; want none", err, reads)
	}
	status.Store(http.StatusOK)
	if got, err := f.Fetch(context.Background(), "evt_1"); err != nil || string(got) != `{"id":"evt_1","object":"event"}` {
		t.Fatalf("got %q, %v", got, err)
	}
	for _, tc := range []struct {
		status    int
		permanent bool
	}{
		{http.StatusNotFound, true},
		{http.StatusBadRequest, true},
		{http.StatusConflict, false},
		{http.StatusRequestTimeout, false},
		{http.StatusUnauthorized, false},
		{http.StatusForbidden, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, false},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			status.Store(int32(tc.status))
			_, err := f.Fetch(context.Background(), "evt_1")
			if err == nil {
				t.Fatal("got nil error")
			}
			if fault.IsPermanent(err) != tc.permanent {
				t.Errorf("permanent: got %v, want %v (%v)", fault.IsPermanent(err), tc.permanent, err)
			}
			if strings.Contains(err.Error(), "sk_test_key") {
				t.Errorf("error shows the key: %v", err)
			}
		})
	}
	if reads != 1 {
		t.Errorf("key reads: got %d, want 1", reads)
	}
}

// secretFunc is a secret whose reads call read, as secrets.FromParameter's
// reads call Parameter Store.
func secretFunc(t *testing.T, read func() (string, error)) *secrets.Secret {
	t.Helper()
	return secrets.FromParameter(func() secrets.SSM { return ssmFunc(read) }, "/webhook-inbox/dev/test")
}

// ssmFunc answers GetParameter with read's SecureString.
type ssmFunc func() (string, error)

func (f ssmFunc) GetParameter(_ context.Context, name string) (secrets.Parameter, error) {
	v, err := f()
	if err != nil {
		return secrets.Parameter{}, err
	}
	return secrets.Parameter{Name: name, Value: v, Type: "SecureString"}, nil
}

type keyParameter struct{ value *string }

func (k keyParameter) GetParameter(context.Context, string) (secrets.Parameter, error) {
	return secrets.Parameter{Type: "SecureString", Value: *k.value}, nil
}

// TestTheFetcherTakesARotatedKey: the processor's fetcher reads the API
// key again when Stripe answers 401, once a minute has passed since it was
// read, and fetches with the new key.
func TestTheFetcherTakesARotatedKey(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	body, err := stripefixture.Build("invoice.paid", stripefixture.Options{ID: "evt_big"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.Add(body); err != nil {
		t.Fatal(err)
	}
	fake.RequireKey("rk_test_new")
	stored := "rk_test_old"
	clk := time.Unix(1_800_000_000, 0)
	key := secrets.FromParameter(func() secrets.SSM { return keyParameter{&stored} }, "/webhook-inbox/dev/stripe/api-key")
	key.SetClock(func() time.Time { return clk })
	f, err := newFetcher(key, fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(context.Background(), "evt_big"); err == nil || fault.IsPermanent(err) {
		t.Fatalf("old key: got %v, want a retryable 401", err)
	}
	stored = "rk_test_new"
	clk = clk.Add(time.Minute)
	if got, err := f.Fetch(context.Background(), "evt_big"); err != nil || string(got) != string(body) {
		t.Errorf("a minute later, the key rotated in Parameter Store: got %d bytes, %v; want the event", len(got), err)
	}
}

// TestRefusesARetryBudgetPastTheQueuesRetention: backoffs that would keep
// an event retrying longer than half the queue's retention fail the cold
// start, naming the variables: SQS would delete the message unseen.
func TestRefusesARetryBudgetPastTheQueuesRetention(t *testing.T) {
	err := build(env(map[string]string{"RETRY_BACKOFF_BASE": "3600", "RETRY_BACKOFF_MAX": "40000", "MAX_RECEIVE_COUNT": "10"}), slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "RETRY_BACKOFF_MAX") || !strings.Contains(err.Error(), "MAX_RECEIVE_COUNT=10") {
		t.Errorf("got %v, want an error naming the budget's variables", err)
	}
	if err := build(env(map[string]string{"RETRY_BACKOFF_BASE": "60", "RETRY_BACKOFF_MAX": "30"}), slog.Default(), nil); err == nil {
		t.Error("a base over the maximum: got nil error")
	}
	if err := build(env(map[string]string{"RETRY_BACKOFF_BASE": "60", "RETRY_BACKOFF_MAX": "7200", "MAX_RECEIVE_COUNT": "10"}), slog.Default(), nil); err != nil {
		t.Errorf("the template's defaults: %v", err)
	}
}

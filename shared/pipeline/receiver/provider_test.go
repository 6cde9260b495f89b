package receiver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/ingesttest"
)

const (
	githubSecret   = "github local secret"
	standardKey    = "standard local key"
	standardSecret = "whsec_c3RhbmRhcmQgbG9jYWwga2V5" // base64 of standardKey
)

func hmacOf(key, msg string) []byte {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func githubRequest(body, sig string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json", "x-github-delivery": "d-1", "x-github-event": "issues"}
	if sig != "" {
		h["x-hub-signature-256"] = sig
	}
	return events.APIGatewayV2HTTPRequest{Headers: h, Body: body, PathParameters: map[string]string{"provider": "github"}}
}

func githubSig(key, body string) string { return "sha256=" + hex.EncodeToString(hmacOf(key, body)) }

func standardRequest(body string, at time.Time, key string) events.APIGatewayV2HTTPRequest {
	ts := fmt.Sprint(at.Unix())
	sig := "v1," + base64.StdEncoding.EncodeToString(hmacOf(key, "msg_1."+ts+"."+body))
	return events.APIGatewayV2HTTPRequest{
		Headers:        map[string]string{"content-type": "application/json", "webhook-id": "msg_1", "webhook-timestamp": ts, "webhook-signature": sig},
		Body:           body,
		PathParameters: map[string]string{"provider": "standard"},
	}
}

// TestProviderAnswers: the Stripe table, for the providers beside it, and
// the 404 for a provider not served.
func TestProviderAnswers(t *testing.T) {
	issue := `{"action":"opened","issue":{"number":1}}`
	paid := `{"type":"invoice.paid","timestamp":"2027-01-15T08:00:00Z","data":{}}`
	existing := &event.Record{
		Provider:    "github",
		ID:          "d-1",
		Type:        "issues.opened",
		Status:      event.StatusProcessed,
		PayloadHash: ingest.Hash([]byte(issue)),
		Source:      event.SourceWebhook,
	}
	stripeByPath := request(payload("evt_1", "invoice.paid", false), "")
	stripeByPath.PathParameters = map[string]string{"provider": "stripe"}
	unknown := githubRequest(issue, githubSig(githubSecret, issue))
	unknown.PathParameters["provider"] = "gitlab"
	unconfigured := githubRequest(issue, githubSig(githubSecret, issue))
	unconfigured.PathParameters["provider"] = "shopify"
	ignored := githubRequest(`{"zen":"Keep it logically awesome."}`, githubSig(githubSecret, `{"zen":"Keep it logically awesome."}`))
	ignored.Headers["x-github-event"] = "ping"
	noDelivery := githubRequest(issue, githubSig(githubSecret, issue))
	delete(noDelivery.Headers, "x-github-delivery")
	big := strings.Repeat(" ", 2000) + issue

	tests := []struct {
		name        string
		req         events.APIGatewayV2HTTPRequest
		existing    *event.Record
		wantStatus  int
		wantOutcome outcome.Outcome
		wantType    string
		wantSent    int
	}{
		{"github stored", githubRequest(issue, githubSig(githubSecret, issue)), nil, 200, outcome.Stored, "issues.opened", 1},
		{"github duplicate", githubRequest(issue, githubSig(githubSecret, issue)), existing, 200, outcome.Duplicate, "", 0},
		{"github type outside the allowlist", ignored, nil, 200, outcome.Ignored, "ping", 0},
		{"github missing signature", githubRequest(issue, ""), nil, 400, outcome.RejectedMissingSignature, "", 0},
		{"github malformed signature", githubRequest(issue, "sha1=abc"), nil, 400, outcome.RejectedMalformedSignature, "", 0},
		{"github wrong secret", githubRequest(issue, githubSig("other", issue)), nil, 400, outcome.RejectedSignature, "", 0},
		{"github malformed JSON", githubRequest(`{"action":`, githubSig(githubSecret, `{"action":`)), nil, 400, outcome.RejectedMalformed, "", 0},
		{"github no delivery id", noDelivery, nil, 400, outcome.RejectedMissingID, "", 0},
		{"github too large", githubRequest(big, githubSig(githubSecret, big)), nil, 413, outcome.RejectedTooLarge, "", 0},
		{"standard stored", standardRequest(paid, now, standardKey), nil, 200, outcome.Stored, "invoice.paid", 1},
		{"standard stale", standardRequest(paid, now.Add(-10*time.Minute), standardKey), nil, 400, outcome.RejectedStaleTimestamp, "", 0},
		{"standard future", standardRequest(paid, now.Add(10*time.Minute), standardKey), nil, 400, outcome.RejectedFutureTimestamp, "", 0},
		{"standard wrong key", standardRequest(paid, now, "other key"), nil, 400, outcome.RejectedSignature, "", 0},
		{"unknown provider", unknown, nil, 404, outcome.RejectedUnknownProvider, "", 0},
		{"provider without a secret", unconfigured, nil, 404, outcome.RejectedUnknownProvider, "", 0},
		{"stripe by the path parameter: Stripe's checks", stripeByPath, nil, 400, outcome.RejectedMissingSignature, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &ingesttest.Store{Existing: tc.existing}
			q := &ingesttest.Queue{}
			var logs bytes.Buffer
			h := newProviderHandler(t, st, q, &logs, nil)
			resp, err := h.Handle(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("Handle returned an error: %v", err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			line := lastLine(t, &logs)
			if line["outcome"] != string(tc.wantOutcome) {
				t.Errorf("logged outcome: got %v, want %s", line["outcome"], tc.wantOutcome)
			}
			assertMetrics(t, line, "requests", "latency")
			wantStored := 0
			if tc.wantType != "" {
				wantStored = 1
			}
			if len(st.Created) != wantStored {
				t.Fatalf("records created: got %d, want %d", len(st.Created), wantStored)
			}
			if wantStored == 1 {
				r := st.Created[0]
				if r.Provider != tc.req.PathParameters["provider"] || r.Type != tc.wantType {
					t.Errorf("record: got provider %q type %q, want %q %q", r.Provider, r.Type, tc.req.PathParameters["provider"], tc.wantType)
				}
			}
			if len(q.Sent) != tc.wantSent {
				t.Errorf("messages sent: got %d, want %d", len(q.Sent), tc.wantSent)
			}
			if resp.StatusCode == 404 && line["provider"] == "gitlab" {
				t.Error("an unknown provider's name, from the path, is logged")
			}
			for _, v := range tc.req.Headers {
				if len(v) > 20 && strings.Contains(logs.String(), v) && strings.Contains(v, "=") {
					t.Errorf("log contains the signature header %q", v)
				}
			}
		})
	}
}

// TestProviderSecretsUnreadable: a provider whose secrets cannot be read
// gets 503 secrets_unavailable, as Stripe's do (the provider retries), is
// logged, and nothing is stored.
func TestProviderSecretsUnreadable(t *testing.T) {
	st := &ingesttest.Store{}
	var logs bytes.Buffer
	h := newProviderHandler(t, st, &ingesttest.Queue{}, &logs, errors.New("ssm: access denied"))
	body := `{"action":"opened"}`
	resp, err := h.Handle(context.Background(), githubRequest(body, githubSig(githubSecret, body)))
	if err != nil || resp.StatusCode != 503 {
		t.Errorf("got %d, %v; want 503", resp.StatusCode, err)
	}
	if !strings.Contains(logs.String(), `"outcome":"secrets_unavailable"`) || !strings.Contains(logs.String(), `"provider":"github"`) {
		t.Errorf("log: want outcome secrets_unavailable for github:\n%s", logs.String())
	}
	if len(st.Created) != 0 {
		t.Errorf("records created: got %d, want 0", len(st.Created))
	}
}

// fixedKeys is a provider's verifier with its secrets in hand, or, with
// err, unreadable ones.
type fixedKeys struct {
	v   provider.Verifier
	err error
}

func (k fixedKeys) Verify(ctx context.Context, r provider.Request) (provider.Verified, error) {
	if k.err != nil {
		return provider.Verified{}, fmt.Errorf("%w: %v", provider.ErrNoSecrets, k.err)
	}
	return k.v.Verify(ctx, r)
}

func newProviderHandler(t *testing.T, st ingest.Store, q ingest.Queue, logs *bytes.Buffer, secretErr error) *Handler {
	t.Helper()
	h := newHandler(t, st, q, logs)
	opts := provider.Options{Now: func() time.Time { return now }}
	build := func(name string, secrets ...string) Provider {
		v, err := provider.New(name, secrets, opts)
		if err != nil {
			t.Fatal(err)
		}
		return Provider{
			Verifier: fixedKeys{v: v, err: secretErr},
			Ingester: &ingest.Ingester{
				Store:    st,
				Queue:    q,
				Provider: name,
				Handled:  func(t string) bool { return t != "ping" },
				Now:      func() time.Time { return now },
			},
			Bodies: &memBodies{},
		}
	}
	h.cfg.Providers[provider.GitHub] = build(provider.GitHub, "previous", githubSecret)
	h.cfg.Providers[provider.Standard] = build(provider.Standard, standardSecret)
	return h
}

// memBodies is an in-memory Bodies.
type memBodies struct {
	mu     sync.Mutex
	owners map[string]string
	err    error
}

func (b *memBodies) ClaimBody(_ context.Context, provider, key, id string, _ time.Time) (string, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return "", false, b.err
	}
	if b.owners == nil {
		b.owners = map[string]string{}
	}
	k := provider + "#" + key
	if owner, ok := b.owners[k]; ok {
		return owner, false, nil
	}
	b.owners[k] = id
	return id, false, nil
}

// TestProviderBodyClaims: a provider whose signature does not cover the
// event's id has its body claimed before anything is stored. A body that
// is another event's is 400 rejected_replay, stores nothing, and its line
// names that event; a claim that cannot be written is the provider's
// retry (5xx), as a record that cannot be written is.
func TestProviderBodyClaims(t *testing.T) {
	issue := `{"action":"opened","issue":{"number":1}}`
	for _, tc := range []struct {
		name        string
		owners      map[string]string // claims already there, by the issue's id
		err         error
		noBodies    bool
		wantStatus  int
		wantOutcome outcome.Outcome
		wantStored  int
		wantLog     map[string]any
	}{
		{name: "a new body", wantStatus: 200, wantOutcome: outcome.Stored, wantStored: 1},
		{name: "the body of this very delivery id", owners: map[string]string{"d-1": "d-1"}, wantStatus: 200, wantOutcome: outcome.Stored, wantStored: 1},
		{name: "the body of another delivery", owners: map[string]string{"d-1": "d-0"}, wantStatus: 400, wantOutcome: outcome.RejectedReplay,
			wantLog: map[string]any{"replay_of": "d-0", "event_id": "d-1"}},
		{name: "the claim fails", err: errors.New("connection refused"), wantStatus: 500, wantOutcome: outcome.PersistFailed,
			wantLog: map[string]any{"failed_at": "persist", "persist_failures": 1.0}},
		{name: "the claim is throttled", err: &retry.MaxAttemptsError{Attempt: 3, Err: throttling()}, wantStatus: 503, wantOutcome: outcome.Throttled,
			wantLog: map[string]any{"failed_at": "persist"}},
		{name: "no store of bodies", noBodies: true, wantStatus: 500, wantOutcome: outcome.PersistFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &ingesttest.Store{}
			var logs bytes.Buffer
			h := newProviderHandler(t, st, &ingesttest.Queue{}, &logs, nil)
			p := h.cfg.Providers[provider.GitHub]
			b := &memBodies{err: tc.err}
			req := githubRequest(issue, githubSig(githubSecret, issue))
			if tc.owners != nil {
				// What GitHub's verifier names this body by.
				v, err := p.Verifier.Verify(context.Background(), provider.Request{Body: []byte(issue), Headers: req.Headers})
				if err != nil {
					t.Fatal(err)
				}
				b.owners = map[string]string{provider.GitHub + "#" + v.ReplayKey: tc.owners["d-1"]}
			}
			p.Bodies = b
			if tc.noBodies {
				p.Bodies = nil
			}
			h.cfg.Providers[provider.GitHub] = p
			resp, err := h.Handle(context.Background(), req)
			if err != nil || resp.StatusCode != tc.wantStatus {
				t.Fatalf("got %d, %v; want %d", resp.StatusCode, err, tc.wantStatus)
			}
			line := lastLine(t, &logs)
			if line["outcome"] != string(tc.wantOutcome) {
				t.Errorf("logged outcome: got %v, want %s", line["outcome"], tc.wantOutcome)
			}
			for k, want := range tc.wantLog {
				if line[k] != want {
					t.Errorf("log field %s: got %v, want %v", k, line[k], want)
				}
			}
			if len(st.Created) != tc.wantStored {
				t.Errorf("records created: got %d, want %d", len(st.Created), tc.wantStored)
			}
		})
	}
}

// TestADeclaredSendersShiftedCaptureIsMalformed: through the receiver, a
// captured delivery of a declared sender with bytes moved from its body
// into its id (the same signed message) is 400 rejected_malformed and
// stores nothing, while the capture itself was stored.
func TestADeclaredSendersShiftedCaptureIsMalformed(t *testing.T) {
	senders, err := provider.ParseSenders(`[{"name":"n8n","signature_header":"x-sig","timestamp_header":"x-ts","id_header":"x-id","template":"{timestamp}.{id}.{body}"}]`)
	if err != nil {
		t.Fatal(err)
	}
	st := &ingesttest.Store{}
	var logs bytes.Buffer
	h := newHandler(t, st, &ingesttest.Queue{}, &logs)
	v, err := senders[0].Spec().New([]string{"k"}, provider.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	h.cfg.Providers["n8n"] = Provider{Verifier: v, Ingester: &ingest.Ingester{Store: st, Queue: &ingesttest.Queue{}, Provider: "n8n", Now: func() time.Time { return now }}, Bodies: &memBodies{}}
	ts, body := fmt.Sprint(now.Unix()), `{"note":"a.b"}`
	sig := hex.EncodeToString(hmacOf("k", ts+".d-1."+body))
	deliver := func(id, body string) (int, string) {
		req := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"x-sig": sig, "x-ts": ts, "x-id": id}, Body: body, PathParameters: map[string]string{"provider": "n8n"}}
		logs.Reset()
		resp, err := h.Handle(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, fmt.Sprint(lastLine(t, &logs)["outcome"])
	}
	if st, o := deliver("d-1", body); st != 200 || o != string(outcome.Stored) {
		t.Fatalf("the capture: got %d %s, want 200 stored", st, o)
	}
	cut := strings.Index(body, ".")
	if st, o := deliver("d-1."+body[:cut], body[cut+1:]); st != 400 || o != string(outcome.RejectedMalformed) {
		t.Errorf("the shifted capture: got %d %s, want 400 %s", st, o, outcome.RejectedMalformed)
	}
	if len(st.Created) != 1 {
		t.Errorf("records stored: got %d, want the capture's alone", len(st.Created))
	}
}

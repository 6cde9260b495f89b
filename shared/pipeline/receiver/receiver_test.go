package receiver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/ingesttest"
)

const secret = "whsec_test_secret"

var now = time.Unix(1_800_000_000, 0)

type blockingQueue struct{}

func (blockingQueue) Send(ctx context.Context, p event.Pointer) error {
	<-ctx.Done()
	return ctx.Err()
}

// blockingStore never answers before the context ends, like a DynamoDB
// endpoint that stopped responding.
type blockingStore struct{}

func (blockingStore) Create(ctx context.Context, r *event.Record) (*event.Record, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (blockingStore) StorePayload(ctx context.Context, r *event.Record) error {
	<-ctx.Done()
	return ctx.Err()
}

func payload(id, typ string, livemode bool) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": now.Unix() - 5, "livemode": livemode,
		"api_version": "2025-02-24.acacia", "data": map[string]any{"object": map[string]any{"id": "sub_1", "object": "subscription"}},
	})
	return b
}

func request(body []byte, sig string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json"}
	if sig != "" {
		h["stripe-signature"] = sig
	}
	return events.APIGatewayV2HTTPRequest{Headers: h, Body: string(body)}
}

func throttling() error {
	return &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: "slow down"}
}

func TestAnswers(t *testing.T) {
	good := payload("evt_1", "customer.subscription.created", false)
	sign := func(b []byte) string { return provider.SignStripe(b, secret, now) }
	base64Req := request(nil, sign(good))
	base64Req.Body = base64.StdEncoding.EncodeToString(good)
	base64Req.IsBase64Encoded = true
	existing := func(st event.Status) *event.Record {
		return &event.Record{
			Provider:    "stripe",
			ID:          "evt_1",
			Type:        "customer.subscription.created",
			Status:      st,
			PayloadHash: ingest.Hash(good),
			Source:      event.SourceWebhook,
		}
	}
	conflicting := existing(event.StatusProcessed)
	conflicting.PayloadHash = ingest.Hash([]byte("another payload"))
	captured := provider.SignStripe(good, secret, now.Add(-120*24*time.Hour))
	fresh := fmt.Sprintf("t=%d", now.Unix())
	capitalized := request(good, "")
	capitalized.Headers["Stripe-Signature"] = sign(good)

	tests := []struct {
		name        string
		req         events.APIGatewayV2HTTPRequest
		existing    *event.Record
		storeErr    error
		queueErr    error
		store       ingest.Store
		queue       ingest.Queue
		verifier    provider.Verifier
		wantStatus  int
		wantOutcome outcome.Outcome
		wantStored  int
		wantSent    int
		// wantLog are further fields the log line must have.
		wantLog map[string]any
	}{
		{name: "stored and enqueued", req: request(good, sign(good)), wantStatus: 200, wantOutcome: outcome.Stored, wantStored: 1, wantSent: 1},
		{name: "base64 body", req: base64Req, wantStatus: 200, wantOutcome: outcome.Stored, wantStored: 1, wantSent: 1},
		{
			name:        "ignored type",
			req:         request(payload("evt_2", "charge.refunded", false), sign(payload("evt_2", "charge.refunded", false))),
			wantStatus:  200,
			wantOutcome: outcome.Ignored,
			wantStored:  1,
		},
		{
			name:        "duplicate of processed",
			req:         request(good, sign(good)),
			existing:    existing(event.StatusProcessed),
			wantStatus:  200,
			wantOutcome: outcome.Duplicate,
		},
		{
			name:        "duplicate of ignored",
			req:         request(good, sign(good)),
			existing:    existing(event.StatusIgnored),
			wantStatus:  200,
			wantOutcome: outcome.Duplicate,
		},
		{
			name:        "duplicate while processing",
			req:         request(good, sign(good)),
			existing:    existing(event.StatusProcessing),
			wantStatus:  200,
			wantOutcome: outcome.Duplicate,
		},
		{
			name:        "exists as received because the enqueue failed: re-enqueued",
			req:         request(good, sign(good)),
			existing:    existing(event.StatusReceived),
			wantStatus:  200,
			wantOutcome: outcome.Requeued,
			wantSent:    1,
		},
		{
			name:        "exists as failed: re-enqueued",
			req:         request(good, sign(good)),
			existing:    existing(event.StatusFailed),
			wantStatus:  200,
			wantOutcome: outcome.Requeued,
			wantSent:    1,
		},
		{
			name:        "duplicate of failed_permanent",
			req:         request(good, sign(good)),
			existing:    existing(event.StatusFailedPermanent),
			wantStatus:  200,
			wantOutcome: outcome.Duplicate,
		},
		{
			name:        "duplicate of dead_lettered",
			req:         request(good, sign(good)),
			existing:    existing(event.StatusDeadLettered),
			wantStatus:  200,
			wantOutcome: outcome.Duplicate,
		},
		{
			name:        "same id, other payload: original kept, logged and counted",
			req:         request(good, sign(good)),
			existing:    conflicting,
			wantStatus:  200,
			wantOutcome: outcome.Duplicate,
			wantLog:     map[string]any{"payload_hash_conflict": 1.0},
		},
		{name: "header name not lower-cased", req: capitalized, wantStatus: 200, wantOutcome: outcome.Stored, wantStored: 1, wantSent: 1},
		{name: "missing signature header", req: request(good, ""), wantStatus: 400, wantOutcome: outcome.RejectedMissingSignature},
		{name: "malformed signature header", req: request(good, "garbage"), wantStatus: 400, wantOutcome: outcome.RejectedMalformedSignature},
		{
			name:        "signature header without a timestamp",
			req:         request(good, "v1="+strings.Repeat("ab", 32)),
			wantStatus:  400,
			wantOutcome: outcome.RejectedMalformedSignature,
		},
		{
			name:        "no matching signature",
			req:         request(good, provider.SignStripe(good, "whsec_wrong", now)),
			wantStatus:  400,
			wantOutcome: outcome.RejectedSignature,
		},
		{name: "body altered after signing", req: request(append(bytes.Clone(good), ' '), sign(good)), wantStatus: 400, wantOutcome: outcome.RejectedSignature},
		{
			name:        "stale timestamp",
			req:         request(good, provider.SignStripe(good, secret, now.Add(-10*time.Minute))),
			wantStatus:  400,
			wantOutcome: outcome.RejectedStaleTimestamp,
		},
		{
			name:        "future timestamp",
			req:         request(good, provider.SignStripe(good, secret, now.Add(10*time.Minute))),
			wantStatus:  400,
			wantOutcome: outcome.RejectedFutureTimestamp,
		},
		// A delivery signed 120 days ago, replayed with a second, fresh t=:
		// a replay, whatever else the header says.
		{
			name:        "replay: a fresh t= in front of a captured header",
			req:         request(good, fresh+","+captured),
			wantStatus:  400,
			wantOutcome: outcome.RejectedReplay,
		},
		{name: "replay: a fresh t= behind a captured header", req: request(good, captured+","+fresh), wantStatus: 400, wantOutcome: outcome.RejectedReplay},
		{
			name:        "replay: the header sent twice, joined with a comma",
			req:         request(good, fresh+",v1="+strings.Repeat("0", 64)+","+captured),
			wantStatus:  400,
			wantOutcome: outcome.RejectedReplay,
		},
		{
			name:        "far-future timestamp (2^40 s ahead)",
			req:         request(good, provider.SignStripe(good, secret, time.Unix(now.Unix()+1<<40, 0))),
			wantStatus:  400,
			wantOutcome: outcome.RejectedFutureTimestamp,
		},
		{name: "malformed JSON", req: request([]byte(`{"id":`), sign([]byte(`{"id":`))), wantStatus: 400, wantOutcome: outcome.RejectedMalformed},
		{
			name:        "bad base64",
			req:         events.APIGatewayV2HTTPRequest{Headers: map[string]string{"stripe-signature": sign(good)}, Body: "%%%", IsBase64Encoded: true},
			wantStatus:  400,
			wantOutcome: outcome.RejectedMalformed,
		},
		{
			name:        "missing event id",
			req:         request([]byte(`{"type":"invoice.paid"}`), sign([]byte(`{"type":"invoice.paid"}`))),
			wantStatus:  400,
			wantOutcome: outcome.RejectedMissingID,
		},
		{name: "JSON null", req: request([]byte(`null`), sign([]byte(`null`))), wantStatus: 400, wantOutcome: outcome.RejectedMalformed},
		{
			name: "data.object not an object",
			req: request(
				[]byte(`{"id":"evt_4","type":"invoice.paid","data":{"object":"in_1"}}`),
				sign([]byte(`{"id":"evt_4","type":"invoice.paid","data":{"object":"in_1"}}`)),
			),
			wantStatus:  400,
			wantOutcome: outcome.RejectedMalformed,
		},
		// A repeated key reads as every reader of the payload reads it
		// (package event's doc): the last value is the event's.
		{
			name: "repeated id: the last is the event's",
			req: request(
				[]byte(`{"id":"evt_5","type":"invoice.paid","id":"evt_6"}`),
				sign([]byte(`{"id":"evt_5","type":"invoice.paid","id":"evt_6"}`)),
			),
			wantStatus:  200,
			wantOutcome: outcome.Stored,
			wantStored:  1,
			wantSent:    1,
			wantLog:     map[string]any{"event_id": "evt_6"},
		},
		{
			name:        "wrong mode",
			req:         request(payload("evt_3", "invoice.paid", true), sign(payload("evt_3", "invoice.paid", true))),
			wantStatus:  400,
			wantOutcome: outcome.RejectedWrongMode,
		},
		{
			name:        "oversize body",
			req:         request(bytes.Repeat([]byte("x"), 2048), sign(bytes.Repeat([]byte("x"), 2048))),
			wantStatus:  413,
			wantOutcome: outcome.RejectedTooLarge,
		},
		{
			name: "oversize base64 body",
			req: events.APIGatewayV2HTTPRequest{
				Headers:         map[string]string{},
				Body:            base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 2048)),
				IsBase64Encoded: true,
			},
			wantStatus:  413,
			wantOutcome: outcome.RejectedTooLarge,
		},
		{
			name:        "DynamoDB failure",
			req:         request(good, sign(good)),
			storeErr:    errors.New("connection refused"),
			wantStatus:  500,
			wantOutcome: outcome.PersistFailed,
			wantLog:     map[string]any{"failed_at": "persist", "persist_failures": 1.0},
		},
		{
			name:        "DynamoDB throttling",
			req:         request(good, sign(good)),
			storeErr:    &retry.MaxAttemptsError{Attempt: 3, Err: throttling()},
			wantStatus:  503,
			wantOutcome: outcome.Throttled,
			wantLog:     map[string]any{"failed_at": "persist", "persist_failures": 1.0},
		},
		{name: "DynamoDB time budget exhausted", req: request(good, sign(good)), store: blockingStore{}, wantStatus: 504, wantOutcome: outcome.Timeout,
			wantLog: map[string]any{"failed_at": "persist", "persist_failures": 1.0}},
		{
			name:        "SQS failure",
			req:         request(good, sign(good)),
			queueErr:    errors.New("connection refused"),
			wantStatus:  500,
			wantOutcome: outcome.EnqueueFailed,
			wantStored:  1,
			wantLog:     map[string]any{"failed_at": "enqueue", "enqueue_failures": 1.0},
		},
		{
			name:        "SQS failure when re-enqueueing",
			req:         request(good, sign(good)),
			existing:    existing(event.StatusReceived),
			queueErr:    errors.New("connection refused"),
			wantStatus:  500,
			wantOutcome: outcome.EnqueueFailed,
			wantLog:     map[string]any{"failed_at": "enqueue", "enqueue_failures": 1.0},
		},
		{
			name:        "SQS throttling",
			req:         request(good, sign(good)),
			queueErr:    &retry.MaxAttemptsError{Attempt: 3, Err: &smithy.GenericAPIError{Code: "ThrottlingException"}},
			wantStatus:  503,
			wantOutcome: outcome.Throttled,
			wantStored:  1,
			wantLog:     map[string]any{"failed_at": "enqueue", "enqueue_failures": 1.0},
		},
		{
			name:        "SQS time budget exhausted",
			req:         request(good, sign(good)),
			queue:       blockingQueue{},
			wantStatus:  504,
			wantOutcome: outcome.Timeout,
			wantStored:  1,
			wantLog:     map[string]any{"failed_at": "enqueue", "enqueue_failures": 1.0},
		},
		// The signing secrets' parameter cannot be read: nothing is wrong
		// with the delivery, so a 503 the provider retries, never a 400.
		{
			name:        "signing secrets unreadable",
			req:         request(good, sign(good)),
			verifier:    unreadable("AccessDeniedException"),
			wantStatus:  503,
			wantOutcome: outcome.SecretsUnavailable,
			wantLog:     map[string]any{"failed_at": "secrets", "secrets_failures": 1.0},
		},
		{
			name:        "signing secrets hold no secret",
			req:         request(good, sign(good)),
			verifier:    holding(" , "),
			wantStatus:  503,
			wantOutcome: outcome.SecretsUnavailable,
			wantLog:     map[string]any{"failed_at": "secrets", "secrets_failures": 1.0},
		},
		{
			name:        "signing secrets unreadable, no signature header",
			req:         request(good, ""),
			verifier:    unreadable("AccessDeniedException"),
			wantStatus:  400,
			wantOutcome: outcome.RejectedMissingSignature,
		},
		{
			name:        "signing secrets unreadable, malformed header",
			req:         request(good, "garbage"),
			verifier:    unreadable("AccessDeniedException"),
			wantStatus:  400,
			wantOutcome: outcome.RejectedMalformedSignature,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &ingesttest.Store{Existing: tc.existing, Err: tc.storeErr}
			fq := &ingesttest.Queue{Err: tc.queueErr}
			var s ingest.Store = st
			if tc.store != nil {
				s = tc.store
			}
			var q ingest.Queue = fq
			if tc.queue != nil {
				q = tc.queue
			}
			var logs bytes.Buffer
			h := newHandler(t, s, q, &logs)
			if tc.verifier != nil {
				p := h.cfg.Providers[provider.Stripe]
				p.Verifier = tc.verifier
				h.cfg.Providers[provider.Stripe] = p
			}
			resp, err := h.Handle(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("Handle returned an error: %v (errors must become answers)", err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status: got %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if len(st.Created) != tc.wantStored {
				t.Errorf("records created: got %d, want %d", len(st.Created), tc.wantStored)
			}
			if len(fq.Sent) != tc.wantSent {
				t.Errorf("messages sent: got %d, want %d", len(fq.Sent), tc.wantSent)
			}
			line := lastLine(t, &logs)
			if line["outcome"] != string(tc.wantOutcome) {
				t.Errorf("logged outcome: got %v, want %s", line["outcome"], tc.wantOutcome)
			}
			if line["status_code"] != float64(tc.wantStatus) {
				t.Errorf("logged status_code: got %v, want %d", line["status_code"], tc.wantStatus)
			}
			assertMetrics(t, line, "requests", "latency")
			for k, want := range tc.wantLog {
				if line[k] != want {
					t.Errorf("log field %s: got %v, want %v", k, line[k], want)
				}
			}
			if _, ok := tc.wantLog["failed_at"]; !ok && line["failed_at"] != nil {
				t.Errorf("log field failed_at: got %v, want none", line["failed_at"])
			}
			if resp.StatusCode == 400 && resp.Body != `{"error":"invalid webhook request"}` {
				t.Errorf("400 body must be generic, got %s", resp.Body)
			}
			if resp.StatusCode >= 500 && resp.Body != `{"error":"temporarily unable to accept the event; retry"}` {
				t.Errorf("%d body must be generic, got %s", resp.StatusCode, resp.Body)
			}
			if resp.Body == "" || resp.Headers["content-type"] != "application/json" {
				t.Errorf("answer %d has no JSON body: %q", resp.StatusCode, resp.Body)
			}
			assertNoSecrets(t, logs.String(), tc.req)
		})
	}
}

func newHandler(t *testing.T, st ingest.Store, q ingest.Queue, logs *bytes.Buffer) *Handler {
	t.Helper()
	v, err := testKeyring(secret+",whsec_previous", provider.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{
		Providers: map[string]Provider{provider.Stripe: {
			Verifier: v,
			Ingester: &ingest.Ingester{
				Store:    st,
				Queue:    q,
				Provider: "stripe",
				Handled:  func(t string) bool { return !strings.HasPrefix(t, "charge.") },
				Now:      func() time.Time { return now },
			},
			APIVersion: "2025-02-24.acacia",
		}},
		MaxBodyBytes: 1024,
		Budget:       50 * time.Millisecond,
		Logger:       slog.New(slog.NewJSONHandler(logs, nil)),
		Now:          func() time.Time { return now },
	})
}

func lastLine(t *testing.T, logs *bytes.Buffer) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want exactly one log line per request, got %d:\n%s", len(lines), logs.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("log line is not JSON: %v\n%s", err, lines[0])
	}
	// encoding/json keeps the last of duplicate keys; CloudWatch need not.
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	_, _ = dec.Token()
	seen := map[string]bool{}
	for dec.More() {
		k, _ := dec.Token()
		key := k.(string)
		if seen[key] {
			t.Errorf("log line has the field %q twice: %s", key, lines[0])
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// assertMetrics checks that the line is an EMF record with the receiver's
// dimensions, declaring (and carrying a value for) each of names.
func assertMetrics(t *testing.T, line map[string]any, names ...string) {
	t.Helper()
	var emf struct {
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	raw, _ := json.Marshal(line["_aws"])
	if err := json.Unmarshal(raw, &emf); err != nil || len(emf.CloudWatchMetrics) != 1 {
		t.Fatalf("log line carries no EMF directive: %v (%s)", err, raw)
	}
	d := emf.CloudWatchMetrics[0]
	if len(d.Dimensions) != 1 || strings.Join(d.Dimensions[0], ",") != "function,outcome" || line["function"] != "receiver" {
		t.Errorf("EMF dimensions: got %v (function=%v), want [[function outcome]] (receiver)", d.Dimensions, line["function"])
	}
	declared := map[string]bool{}
	for _, m := range d.Metrics {
		declared[m.Name] = true
		if _, ok := line[m.Name].(float64); !ok {
			t.Errorf("metric %s is declared but the line has no value for it", m.Name)
		}
	}
	for _, name := range names {
		if !declared[name] {
			t.Errorf("metric %s not declared; declared: %v", name, d.Metrics)
		}
	}
}

// assertNoSecrets checks that neither the secret, the signature header nor
// the payload reached the log.
func assertNoSecrets(t *testing.T, logs string, req events.APIGatewayV2HTTPRequest) {
	t.Helper()
	if strings.Contains(logs, secret) || strings.Contains(logs, "whsec_") {
		t.Error("log contains a signing secret")
	}
	for _, sig := range []string{req.Headers["stripe-signature"], req.Headers["Stripe-Signature"]} {
		if len(sig) > 20 && strings.Contains(logs, sig) {
			t.Error("log contains the signature header")
		}
		// Not even one v1 signature on its own.
		for part := range strings.SplitSeq(sig, ",") {
			if v, ok := strings.CutPrefix(part, "v1="); ok && len(v) >= 16 && strings.Contains(logs, v) {
				t.Error("log contains a v1 signature")
			}
		}
	}
	if len(req.Body) > 40 && strings.Contains(logs, req.Body) {
		t.Error("log contains the payload")
	}
}

func TestAPIVersionMismatchIsAcceptedAndCounted(t *testing.T) {
	body := bytes.Replace(payload("evt_9", "invoice.paid", false), []byte("2025-02-24.acacia"), []byte("2019-12-03"), 1)
	var logs bytes.Buffer
	st := &ingesttest.Store{}
	h := newHandler(t, st, &ingesttest.Queue{}, &logs)
	resp, _ := h.Handle(context.Background(), request(body, provider.SignStripe(body, secret, now)))
	if resp.StatusCode != 200 {
		t.Fatalf("status: got %d, want 200 (another API version must never be rejected)", resp.StatusCode)
	}
	line := lastLine(t, &logs)
	if line["api_version_mismatch"] != 1.0 || line["api_version"] != "2019-12-03" {
		t.Errorf("mismatch not counted: %v", line)
	}
	if st.Created[0].APIVersion != "2019-12-03" {
		t.Errorf("recorded api_version: got %q", st.Created[0].APIVersion)
	}
}

func TestPreviousSecretIsAccepted(t *testing.T) {
	body := payload("evt_rot", "invoice.paid", false)
	h := newHandler(t, &ingesttest.Store{}, &ingesttest.Queue{}, &bytes.Buffer{})
	resp, _ := h.Handle(context.Background(), request(body, provider.SignStripe(body, "whsec_previous", now)))
	if resp.StatusCode != 200 {
		t.Fatalf("status: got %d, want 200", resp.StatusCode)
	}
}

// TestLambdaDeadlineIsHonoured gives the request far less time than its
// budget, as an invocation close to its timeout has: the AWS calls must stop
// early enough that the request still answers 504 and logs its line before
// the invocation's deadline, when Lambda would kill it silently.
func TestLambdaDeadlineIsHonoured(t *testing.T) {
	body := payload("evt_deadline", "invoice.paid", false)
	for _, tc := range []struct {
		name  string
		store ingest.Store
		queue ingest.Queue
	}{
		{"DynamoDB hangs", blockingStore{}, &ingesttest.Queue{}},
		{"SQS hangs", &ingesttest.Store{}, blockingQueue{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := newHandler(t, tc.store, tc.queue, &logs)
			h.cfg.Budget = time.Hour
			invocation, cancel := context.WithTimeout(context.Background(), answerReserve+200*time.Millisecond)
			defer cancel()
			resp, err := h.Handle(invocation, request(body, provider.SignStripe(body, secret, now)))
			if invocation.Err() != nil {
				t.Fatal("Handle returned after the invocation's deadline: Lambda would have killed it without an answer")
			}
			if err != nil || resp.StatusCode != 504 {
				t.Fatalf("got %d, %v; want 504", resp.StatusCode, err)
			}
			if line := lastLine(t, &logs); line["outcome"] != string(outcome.Timeout) || line["event_id"] != "evt_deadline" {
				t.Errorf("log line: got outcome %v event %v", line["outcome"], line["event_id"])
			}
		})
	}
}

// TestDeadlineAlreadyTooClose: an invocation with less time left than the
// reserve makes no AWS call that could outlive it.
func TestDeadlineAlreadyTooClose(t *testing.T) {
	body := payload("evt_late", "invoice.paid", false)
	var logs bytes.Buffer
	h := newHandler(t, blockingStore{}, &ingesttest.Queue{}, &logs)
	invocation, cancel := context.WithTimeout(context.Background(), answerReserve/2)
	defer cancel()
	resp, _ := h.Handle(invocation, request(body, provider.SignStripe(body, secret, now)))
	if invocation.Err() != nil || resp.StatusCode != 504 {
		t.Fatalf("got %d (invocation expired: %v), want 504 before the deadline", resp.StatusCode, invocation.Err() != nil)
	}
}

// testKeyring is a Keyring of Stripe's secrets in hand (comma-separated),
// checked as the receiver's wiring checks a local variable.
func testKeyring(list string, opts provider.Options) (*provider.Keyring, error) {
	k, err := provider.NewKeyring(provider.Stripe, secrets.Fixed("test secrets", list), opts)
	if err != nil {
		return nil, err
	}
	return k, k.Load(context.Background())
}

// paramStore is Parameter Store answering every read with value, or
// failing with code.
type paramStore struct{ value, code string }

func (p paramStore) GetParameter(context.Context, string) (secrets.Parameter, error) {
	if p.code != "" {
		return secrets.Parameter{}, &secrets.APIError{Code: p.code, Status: 400}
	}
	return secrets.Parameter{Name: "/p", Type: "SecureString", Value: p.value}, nil
}

// unreadable is a Keyring of Stripe's secrets whose parameter cannot be
// read (code).
func unreadable(code string) *provider.Keyring {
	return paramKeyring(paramStore{code: code})
}

// holding is a Keyring of Stripe's secrets whose parameter holds value.
func holding(value string) *provider.Keyring {
	return paramKeyring(paramStore{value: value})
}

func paramKeyring(ps paramStore) *provider.Keyring {
	k, err := provider.NewKeyring(
		provider.Stripe,
		secrets.FromParameter(func() secrets.SSM { return ps }, "/webhook-inbox/dev/stripe/webhook-secrets"),
		provider.Options{Now: func() time.Time { return now }},
	)
	if err != nil {
		panic(err) // Stripe is in the table
	}
	return k
}

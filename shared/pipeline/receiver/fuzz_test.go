package receiver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// How a fuzzed delivery is signed.
const (
	sigAsGiven  = iota // the fuzzed header, as is
	sigCurrent         // a valid v1 signature with the current secret
	sigPrevious        // ... with the previous secret (rotation)
	sigWrong           // ... with a secret we do not hold
	// sigAround: a valid v1 signature with the current secret, with the
	// fuzzed header's text around it (before and after its first '|'):
	// extra timestamps, a second header joined with a comma, spaces.
	sigAround
	sigModes
)

// Which AWS call fails, at the SDK-client level.
const (
	failNone = iota
	failPutItem
	failPutItemThrottled
	failSendMessage
	failSendMessageThrottled
	failModes
)

const fuzzMaxBody = 64 << 10

// FuzzHandle drives the whole request path (body, base64, signature,
// envelope, mode, conditional put, enqueue, answer, log line) with fuzzed
// deliveries, and in-memory DynamoDB and SQS clients that can already hold
// the event in any status or fail. It holds the handler to the receiver's
// contract:
//   - an answer is one of the table's, never an error, with one log line;
//   - an unsigned, forged, stale or future delivery is a 400 (or 413) and
//     makes no AWS call, whatever text surrounds its signature: a stale
//     signature does not become fresh with a second t= beside it;
//   - a 2xx means the event is stored and, if it still needs processing, a
//     pointer to it was sent during this very request;
//   - an injected AWS failure that the request reaches is a 5xx;
//   - the log line carries neither secret, signature nor payload.
//
// The seed corpus is in testdata/fuzz/FuzzHandle (realistic events from
// internal/stripefixture) plus the f.Add calls below.
func FuzzHandle(f *testing.F) {
	sample := smallEvent(f)
	f.Add(sample, "", uint8(sigCurrent), int16(0), false, uint8(0), uint8(failNone))
	f.Add(sample, "", uint8(sigPrevious), int16(-299), true, uint8(0), uint8(failNone))
	f.Add(sample, "", uint8(sigCurrent), int16(-301), false, uint8(0), uint8(failNone))
	f.Add(sample, "", uint8(sigCurrent), int16(61), false, uint8(0), uint8(failNone))
	f.Add(sample, "", uint8(sigWrong), int16(0), false, uint8(0), uint8(failNone))
	f.Add(sample, "t=1800000000,v1=00", uint8(sigAsGiven), int16(0), false, uint8(0), uint8(failNone))
	f.Add(sample, "", uint8(sigCurrent), int16(0), false, uint8(1), uint8(failSendMessage))
	f.Add(sample, "", uint8(sigCurrent), int16(0), false, uint8(3), uint8(failNone))
	f.Add(sample, "", uint8(sigCurrent), int16(0), false, uint8(0), uint8(failPutItemThrottled))
	f.Add(
		[]byte(`{"id":"evt_1","object":"event","type":"charge.refunded","livemode":false,"data":{"object":{"id":"ch_1","object":"charge"}}}`),
		"",
		uint8(sigCurrent),
		int16(0),
		false,
		uint8(0),
		uint8(failSendMessage),
	)
	f.Add([]byte(`{"id":"evt_1","type":"invoice.paid","livemode":true}`), "", uint8(sigCurrent), int16(0), false, uint8(0), uint8(failNone))
	f.Add([]byte(`{"id":"evt_1","type":"invoice.paid","created":1e3}`), "", uint8(sigCurrent), int16(0), false, uint8(0), uint8(failNone))
	f.Add([]byte(`{"type":"invoice.paid"}`), "", uint8(sigCurrent), int16(0), true, uint8(0), uint8(failNone))
	// Replays of a signature an hour old: a fresh t= in front, behind, or
	// in a second header that API Gateway joins with a comma.
	f.Add(sample, "t=1800000000,|", uint8(sigAround), int16(-3600), false, uint8(0), uint8(failNone))
	f.Add(sample, "|,t=1800000000", uint8(sigAround), int16(-3600), false, uint8(0), uint8(failNone))
	f.Add(
		sample,
		"t=1800000000,v1=0000000000000000000000000000000000000000000000000000000000000000,|",
		uint8(sigAround),
		int16(-3600),
		false,
		uint8(0),
		uint8(failNone),
	)
	f.Add(sample, "|,v0=abcd", uint8(sigAround), int16(-10), false, uint8(0), uint8(failNone))

	statuses := append([]event.Status{""}, event.Statuses...) // "" is no existing record
	f.Fuzz(func(t *testing.T, body []byte, hdr string, sigMode uint8, skewSeconds int16, b64 bool, existingStatus uint8, failure uint8) {
		sigMode %= sigModes
		failure %= failModes
		existing := statuses[int(existingStatus)%len(statuses)]
		signedAt := now.Add(time.Duration(skewSeconds) * time.Second)
		switch sigMode {
		case sigCurrent:
			hdr = provider.SignStripe(body, secret, signedAt)
		case sigPrevious:
			hdr = provider.SignStripe(body, "whsec_previous", signedAt)
		case sigWrong:
			hdr = provider.SignStripe(body, "whsec_not_ours", signedAt)
		case sigAround:
			before, after, _ := strings.Cut(hdr, "|")
			hdr = before + provider.SignStripe(body, secret, signedAt) + after
		}
		req := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"stripe-signature": hdr}, Body: string(body)}
		if b64 {
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}

		db, sq := &memDynamoDB{}, &memSQS{}
		evs := &store.Events{DB: db, Table: "events"}
		env, envErr := event.DecodeEnvelope(body)
		if envErr == nil && existing != "" {
			rec := event.NewRecord(event.ProviderStripe, env, body, ingest.Hash(body), event.SourceWebhook, existing, now.Add(-time.Hour))
			if _, err := evs.Create(context.Background(), &rec); err != nil {
				t.Fatal(err)
			}
		}
		putsBefore := db.puts
		switch failure {
		case failPutItem:
			db.err = errors.New("dial tcp: connection refused")
		case failPutItemThrottled:
			db.err = &retry.MaxAttemptsError{Attempt: 3, Err: &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"}}
		case failSendMessage:
			sq.err = errors.New("dial tcp: connection refused")
		case failSendMessageThrottled:
			sq.err = &retry.MaxAttemptsError{Attempt: 3, Err: &smithy.GenericAPIError{Code: "ThrottlingException"}}
		}

		var logs bytes.Buffer
		v, err := testKeyring(secret+",whsec_previous", provider.Options{Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		handled := func(typ string) bool { return !strings.HasPrefix(typ, "charge.") }
		h := New(Config{
			Providers: map[string]Provider{provider.Stripe: {
				Verifier: v,
				Ingester: &ingest.Ingester{
					Store:    evs,
					Queue:    &queue.Queue{Client: sq, URL: "q"},
					Provider: event.ProviderStripe,
					Handled:  handled,
					Now:      func() time.Time { return now },
				},
			}},
			MaxBodyBytes: fuzzMaxBody,
			Budget:       time.Second,
			Logger:       slog.New(slog.NewJSONHandler(&logs, nil)),
			Now:          func() time.Time { return now },
		})

		resp, err := h.Handle(context.Background(), req)
		if err != nil {
			t.Fatalf("Handle returned an error: %v", err)
		}
		if _, ok := bodies[resp.StatusCode]; !ok || resp.Body != bodies[resp.StatusCode] {
			t.Fatalf("answer %d %q is not one of the table's", resp.StatusCode, resp.Body)
		}
		if n := strings.Count(logs.String(), "\n"); n != 1 {
			t.Fatalf("want one log line, got %d: %s", n, logs.String())
		}
		var line map[string]any
		if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %v", err)
		}
		if line["outcome"] == "" || line["status_code"] != float64(resp.StatusCode) {
			t.Fatalf("log line outcome %v status %v for answer %d", line["outcome"], line["status_code"], resp.StatusCode)
		}
		assertNoSecretsIn(t, logs.String(), hdr, body)

		// What the answer must be, step by step.
		age := now.Sub(signedAt)
		signedOK := (sigMode == sigCurrent || sigMode == sigPrevious || sigMode == sigAround) && age <= provider.DefaultTolerance &&
			-age <= provider.DefaultFutureSkew
		switch {
		case len(body) > fuzzMaxBody:
			want(t, resp.StatusCode, 413)
		case sigMode == sigAsGiven: // a fuzzed header is never a valid HMAC of the body
			want(t, resp.StatusCode, 400)
		case !signedOK: // wrong secret, stale or future, whatever surrounds it
			want(t, resp.StatusCode, 400)
		case envErr != nil:
			want(t, resp.StatusCode, 400)
		case env.Livemode: // the handler serves test mode
			want(t, resp.StatusCode, 400)
		}
		if resp.StatusCode == 400 || resp.StatusCode == 413 {
			if db.puts != putsBefore || len(sq.sent) != 0 {
				t.Fatalf("rejected delivery (%d) made AWS calls: %d puts, %d sends", resp.StatusCode, db.puts-putsBefore, len(sq.sent))
			}
			return
		}

		// Accepted by verification: the pipeline decides.
		needsWork := existing == "" && handled(env.Type) || existing.NeedsEnqueue()
		reached := failure == failPutItem || failure == failPutItemThrottled ||
			(failure == failSendMessage || failure == failSendMessageThrottled) && needsWork
		if reached && resp.StatusCode < 500 {
			t.Fatalf("AWS failure %d reached, answered %d: an event not safely in the pipeline was acknowledged", failure, resp.StatusCode)
		}
		if !reached {
			want(t, resp.StatusCode, 200)
		}
		if resp.StatusCode != 200 {
			return
		}
		rec, err := (&store.Events{DB: memReader{db}, Table: "events"}).Get(context.Background(), event.ProviderStripe, env.ID)
		if errors.Is(err, store.ErrNotFound) {
			t.Fatalf("answered 200 with no record of %s", env.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		if existing == "" && !rec.PayloadOmitted && !bytes.Equal(rec.Payload, body) {
			t.Fatalf("stored payload differs from the signed body")
		}
		if rec.Status.NeedsEnqueue() {
			if len(sq.sent) != 1 {
				t.Fatalf("answered 200 for a %s record with %d pointers sent, want 1", rec.Status, len(sq.sent))
			}
			p, err := queue.Decode(sq.sent[0])
			if err != nil || p.ID != env.ID || p.Type != rec.Type {
				t.Fatalf("pointer %q (%v) does not point to %s", sq.sent[0], err, env.ID)
			}
		} else if len(sq.sent) != 0 {
			t.Fatalf("a %s record was enqueued", rec.Status)
		}
	})
}

func want(t *testing.T, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("status: got %d, want %d", got, want)
	}
}

// assertNoSecretsIn checks a log for the signing secrets, the signature
// header, its v1 signatures and the payload.
func assertNoSecretsIn(t *testing.T, logs, hdr string, body []byte) {
	t.Helper()
	if strings.Contains(logs, "whsec_") {
		t.Fatal("log contains a signing secret")
	}
	if len(hdr) >= 20 && strings.Contains(logs, hdr) {
		t.Fatal("log contains the signature header")
	}
	for part := range strings.SplitSeq(hdr, ",") {
		if v, ok := strings.CutPrefix(part, "v1="); ok && len(v) >= 16 && strings.Contains(logs, v) {
			t.Fatal("log contains a v1 signature")
		}
	}
	if len(body) >= 64 && strings.Contains(logs, string(body)) {
		t.Fatal("log contains the payload")
	}
}

package receiver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// BenchmarkReceiver measures the receiver's compute per event for a 2.6 KB
// and a 16 KB event, and a 64 KB one to show the cost stays linear past the
// size from which payloads are gzipped. AWS is replaced at the SDK-client
// level by fakes answering with canned outputs, so building the DynamoDB item
// and the SQS message is measured; the network is not. The target: at most
// 1 ms per 2.6 KB event on the machine that runs it, a small share of the
// 10-30 ms the request waits on its two AWS calls (Lambda bills whole
// milliseconds). `make bench` prints the table, via
// tools/cmd/benchratio, which parses the sub-benchmark names
// BenchmarkReceiver/<size>/<what>.
func BenchmarkReceiver(b *testing.B) {
	for _, size := range []struct {
		name string
		body []byte
	}{
		{"2.6KB", smallEvent(b)},
		{"16KB", largeEvent(b)},
		{"64KB", hugeEvent(b)}, // linearity beyond the 8 KB compression threshold
	} {
		body := size.body
		b.Run(size.name+"/receiver", func(b *testing.B) {
			h := benchHandler(b)
			req := events.APIGatewayV2HTTPRequest{
				Headers: map[string]string{"content-type": "application/json", "stripe-signature": provider.SignStripe(body, secret, now)},
				Body:    string(body),
			}
			ctx := context.Background()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				resp, _ := h.Handle(ctx, req)
				if resp.StatusCode != 200 {
					b.Fatalf("status: got %d, want 200", resp.StatusCode)
				}
			}
		})
		// For scale: what decoding the whole event with stripe-go costs,
		// which the receiver never does.
		b.Run(size.name+"/stripe_event_decode", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var e stripe.Event
				if err := json.Unmarshal(body, &e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchHandler(tb testing.TB) *Handler {
	tb.Helper()
	v, err := testKeyring(secret+",whsec_previous", provider.Options{Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatal(err)
	}
	return New(Config{
		Providers: map[string]Provider{provider.Stripe: {
			Verifier: v,
			Ingester: &ingest.Ingester{
				Store:    &store.Events{DB: cannedDynamoDB{}, Table: "events", Retention: 90 * 24 * time.Hour},
				Queue:    &queue.Queue{Client: cannedSQS{}, URL: "https://sqs.us-east-1.amazonaws.com/123456789012/webhooks"},
				Provider: event.ProviderStripe,
			},
			APIVersion: stripe.APIVersion,
		}},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
}

func TestBenchmarkEventsAreRealistic(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     []byte
		min, max int
		typ      string
	}{
		{"small", smallEvent(t), 2560, 2720, "payment_intent.succeeded"},
		{"large", largeEvent(t), 15700, 16700, "invoice.paid"},
		{"huge", hugeEvent(t), 63000, 67000, "invoice.paid"},
	} {
		env, err := event.DecodeEnvelope(tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if env.Type != tc.typ {
			t.Errorf("%s: type got %s, want %s", tc.name, env.Type, tc.typ)
		}
		if n := len(tc.body); n < tc.min || n > tc.max {
			t.Errorf("%s event: got %d bytes, want %d..%d", tc.name, n, tc.min, tc.max)
		}
	}
}

package receiver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// untimed is one sender whose signature covers no time: a captured
// delivery verifies for as long as the sender keeps its secret.
type untimed struct {
	spec     provider.Spec
	opts     provider.Options
	delivery provider.Delivery // Body, ID and Type; Now is the clock's
	id       string            // the event id the inbox records it under
}

// untimedSenders are the providers whose only guard against a replayed
// capture was the event's record, and the two whose claim of the body
// expired with it.
func untimedSenders(t *testing.T) map[string]untimed {
	t.Helper()
	spec := func(name string) provider.Spec {
		s, err := provider.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	senders, err := provider.ParseSenders(`[{"name":"svc","signature_header":"x-sig","id_field":"id","type_field":"type"}]`)
	if err != nil {
		t.Fatal(err)
	}
	const squareURL = "https://hooks.example.com/webhooks/square"
	lemonBody := []byte(`{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"1","attributes":{"updated_at":"2026-01-01T00:00:00Z"}}}`)
	return map[string]untimed{
		provider.Square: {
			spec: spec(provider.Square), opts: provider.Options{Settings: map[string]string{provider.SettingURL: squareURL}},
			delivery: provider.Delivery{URL: squareURL, Body: []byte(`{"merchant_id":"M1","type":"payment.updated","event_id":"sq-ev-1","created_at":"2026-01-01T00:00:00Z","data":{"type":"payment","id":"p1"}}`)},
			id:       "sq-ev-1",
		},
		provider.LemonSqueezy: {spec: spec(provider.LemonSqueezy), delivery: provider.Delivery{Body: lemonBody}, id: lemonSqueezyID(lemonBody)},
		provider.Razorpay: {
			spec:     spec(provider.Razorpay),
			delivery: provider.Delivery{ID: "rzp-ev-1", Body: []byte(`{"entity":"event","event":"payment.captured","contains":["payment"],"payload":{"payment":{"entity":{"id":"pay_1"}}},"created_at":1}`)},
			id:       "rzp-ev-1",
		},
		provider.GitHub: {spec: spec(provider.GitHub), delivery: provider.Delivery{ID: "gh-delivery-1", Type: "issues.opened", Body: []byte(`{"action":"opened"}`)}, id: "gh-delivery-1"},
		"svc":           {spec: senders[0].Spec(), delivery: provider.Delivery{Body: []byte(`{"id":"svc-ev-1","type":"job.done"}`)}, id: "svc-ev-1"},
	}
}

// lemonSqueezyID is the id Lemon Squeezy's verifier makes of a body,
// read back from a verification.
func lemonSqueezyID(body []byte) string {
	v, err := provider.NewKeyringFor(mustLookup(provider.LemonSqueezy), secrets.Fixed("lemon", "k"), provider.Options{}).Verify(context.Background(), provider.Request{
		Body: body, Headers: mustSign(provider.LemonSqueezy, "k", provider.Delivery{Body: body}),
	})
	if err != nil {
		panic(err)
	}
	return v.Envelope.ID
}

func mustLookup(name string) provider.Spec {
	s, err := provider.Lookup(name)
	if err != nil {
		panic(err)
	}
	return s
}

func mustSign(name, secret string, d provider.Delivery) map[string]string {
	h, err := provider.Sign(name, secret, d)
	if err != nil {
		panic(err)
	}
	return h
}

// expire deletes what DynamoDB's TTL would have deleted by now: every
// item whose expires_at has passed (the emulator runs no TTL).
func expire(t *testing.T, db *dynamodb.Client, table string, now time.Time) int {
	t.Helper()
	out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, it := range out.Items {
		exp, ok := it["expires_at"].(*types.AttributeValueMemberN)
		if !ok {
			continue
		}
		var at int64
		if _, err := fmt.Sscan(exp.Value, &at); err != nil {
			t.Fatal(err)
		}
		if at >= now.Unix() {
			continue
		}
		if _, err := db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": it["pk"]}}); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestACaptureReplayedAfterRetentionIsRefused: for every sender whose
// signature covers no time, a delivery is stored, sent again within the
// retention (a duplicate), then its record and payload expire as the
// table's TTL deletes them, and the same capture presented once more is
// refused as a replay: no record again, nothing enqueued, so no second
// effect.
func TestACaptureReplayedAfterRetentionIsRefused(t *testing.T) {
	r := newRig(t)
	const retention = 90 * 24 * time.Hour
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	c := r.common
	c.Retention = retention
	db := dynamodb.NewFromConfig(r.stack.AWS)
	evs := c.Events(db)
	served := map[string]receiver.Provider{}
	senders := untimedSenders(t)
	for name, s := range senders {
		s.opts.Now = clock
		in := boot.NewIngesterOn(evs, r.stack.AWS, c, nil)
		in.Provider, in.Now = name, clock
		served[name] = receiver.Provider{Verifier: provider.NewKeyringFor(s.spec, secrets.Fixed(name, "secret of "+name), s.opts), Ingester: in, Bodies: evs}
	}
	h := receiver.New(receiver.Config{Providers: served, Logger: slogJSON(r.logs), Now: clock})
	for name, s := range senders {
		t.Run(name, func(t *testing.T) {
			now = t0
			d := s.delivery
			d.Now = now
			headers, err := s.spec.Sign("secret of "+name, d)
			if err != nil {
				t.Fatal(err)
			}
			capture := events.APIGatewayV2HTTPRequest{PathParameters: map[string]string{"provider": name}, Headers: headers, Body: string(d.Body)}
			send := func(at time.Time) (int, outcome.Outcome) {
				now = at
				resp, err := h.Handle(context.Background(), capture)
				if err != nil {
					t.Fatal(err)
				}
				lines := r.logs.lines(t)
				return resp.StatusCode, outcome.Outcome(fmt.Sprint(lines[len(lines)-1]["outcome"]))
			}
			if st, o := send(t0); st != 200 || o != outcome.Stored {
				t.Fatalf("the delivery: got %d %s, want 200 %s", st, o, outcome.Stored)
			}
			if st, _ := send(t0.Add(time.Hour)); st != 200 {
				t.Fatalf("its retry within the retention: got %d, want 200 (a duplicate)", st)
			}
			if got := len(r.drain()); got == 0 {
				t.Fatal("the delivery enqueued nothing")
			}
			later := t0.Add(retention + time.Hour)
			if n := expire(t, db, c.EventsTable, later); n < 2 {
				t.Fatalf("expired %d items, want at least the record and its payload", n)
			}
			if _, err := r.events.Get(context.Background(), name, s.id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("record %s after its TTL: got %v, want it gone", s.id, err)
			}
			st, o := send(later)
			if st != 400 || o != outcome.RejectedReplay {
				t.Errorf("the capture replayed after the retention: got %d %s, want 400 %s", st, o, outcome.RejectedReplay)
			}
			if rec, err := r.events.Get(context.Background(), name, s.id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("the replay made a new event: got record %s (%s), %v; want none", s.id, rec.Status, err)
			}
			if got := len(r.drain()); got != 0 {
				t.Errorf("the replay enqueued %d pointers, want none", got)
			}
		})
	}
}

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// post sends body with one Stripe-Signature header line per element of
// sigs, as a client that repeats the header does.
func post(t *testing.T, url string, body []byte, sigs ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/webhooks/stripe", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	for _, s := range sigs {
		req.Header.Add("Stripe-Signature", s)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReplayedAndFarFutureDeliveriesAreRejected sends, through make dev's
// gateway as an attacker would, a delivery signed 120 days ago with a fresh
// t= put in front of its header, the same delivery with a second
// Stripe-Signature header line (which the gateway, like API Gateway, joins
// to the first with a comma), and a delivery validly signed 2^40 seconds in
// the future. Each gets a 400 and leaves no record; the same body signed
// now is then accepted, so the body was never the reason.
func TestReplayedAndFarFutureDeliveriesAreRejected(t *testing.T) {
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{})
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()
	secret := devstack.DefaultWebhookSecret

	for _, tc := range []struct {
		name    string
		sigs    func(body []byte, now time.Time) []string
		outcome outcome.Outcome
	}{
		{"a fresh t= in front of a captured header", func(body []byte, now time.Time) []string {
			return []string{fmt.Sprintf("t=%d,", now.Unix()) + provider.SignStripe(body, secret, now.Add(-120*24*time.Hour))}
		}, outcome.RejectedReplay},
		{"the header sent twice", func(body []byte, now time.Time) []string {
			return []string{
				fmt.Sprintf("t=%d,v1=%s", now.Unix(), strings.Repeat("0", 64)),
				provider.SignStripe(body, secret, now.Add(-120*24*time.Hour)),
			}
		}, outcome.RejectedReplay},
		{"signed 2^40 s in the future", func(body []byte, now time.Time) []string {
			return []string{provider.SignStripe(body, secret, time.Unix(now.Unix()+1<<40, 0))}
		}, outcome.RejectedFutureTimestamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := stripefixture.Build("invoice.paid", stripefixture.Options{})
			if err != nil {
				t.Fatal(err)
			}
			env, err := event.DecodeEnvelope(body)
			if err != nil {
				t.Fatal(err)
			}
			before := len(stack.Lines(map[string]string{"msg": "webhook", "outcome": string(tc.outcome)}))
			if status, resp := post(t, stack.URL, body, tc.sigs(body, time.Now())...); status != 400 {
				t.Fatalf("got %d %s, want 400", status, resp)
			}
			testenv.Eventually(t, 10*time.Second, "the rejection to be logged as "+string(tc.outcome), func() bool {
				return len(stack.Lines(map[string]string{"msg": "webhook", "outcome": string(tc.outcome)})) == before+1
			})
			if _, err := events.Get(ctx, "stripe", env.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("record after a rejected delivery: got %v, want none", err)
			}
			if status, resp := deliver(t, stack.URL, body, secret); status != 200 {
				t.Fatalf("the same body signed now: got %d %s, want 200", status, resp)
			}
			if _, err := events.Get(ctx, "stripe", env.ID); err != nil {
				t.Fatalf("record after the valid delivery: %v", err)
			}
		})
	}
}

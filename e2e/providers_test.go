package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/devsecret"
	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// postProvider POSTs body to /webhooks/<name> with headers.
func postProvider(t *testing.T, url, name string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/webhooks/"+name, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// gatewayCase is one provider's (or declared sender's) deliveries through
// the gateway: its secret, the sample it sends of a handled type and one
// of a type the deployment does not handle, and whether it signs a time.
type gatewayCase struct {
	secret string
	// typ is the handled type of the sample at sample (under
	// internal/cli/samples); unknownTyp the type of the
	// unknownSample (or of the sample as unknown rewrites it).
	typ, sample, unknownTyp, unknownSample string
	unknown                                func(t *testing.T, body []byte) []byte
	// signsTime: a delivery signed an hour ago, or an hour ahead, is
	// refused.
	signsTime bool
}

// The URLs Square and Twilio are configured with, which their deliveries
// sign.
const (
	e2eSquareURL = "https://hooks.example.com/webhooks/square"
	e2eTwilioURL = "https://hooks.example.com/webhooks/twilio"
)

// n8nSender is the declared sender of the gateway test, as
// docs/providers.md's worked example declares n8n's workflow.
const n8nSender = `[{"name":"n8n","algorithm":"sha256","encoding":"hex","prefix":"sha256=","signature_header":"x-n8n-signature","timestamp_header":"x-n8n-timestamp",` +
	`"id_header":"x-n8n-delivery","template":"{timestamp}.{id}.{body}","type_field":"type"}]`

// gatewayCases are every provider's of the table and the declared
// sender's. Stripe's events are built from Stripe's own sample objects
// (stripefixture), not read from a sample file. Stripe's secret is the
// local stack's own: every local stack on the emulator stores Stripe's
// secrets in the template's default parameter, so the stacks of the
// packages make test runs beside this one would overwrite any other.
var gatewayCases = map[string]gatewayCase{
	provider.Stripe:   {secret: devsecret.Webhook, typ: "customer.subscription.created", unknownTyp: "charge.refunded", signsTime: true},
	provider.GitHub:   {secret: "github e2e secret", typ: "issues.opened", sample: "github/issues.opened.json", unknownTyp: "pull_request.opened", unknownSample: "github/pull_request.opened.json"},
	provider.Shopify:  {secret: "shopify e2e secret", typ: "orders/create", sample: "shopify/orders/create.json", unknownTyp: "customers/create", unknownSample: "shopify/customers/create.json"},
	provider.Standard: {secret: "whsec_ZTJlIHN0YW5kYXJkIGtleQ==", typ: "invoice.paid", sample: "standard/invoice.paid.json", unknownTyp: "user.created", unknownSample: "standard/user.created.json", signsTime: true},
	provider.Paddle: {secret: "pdl_ntfset_e2e", typ: "transaction.completed", sample: "paddle/transaction.completed.json", unknownTyp: "subscription.created",
		unknownSample: "paddle/subscription.created.json", signsTime: true},
	provider.Razorpay:     {secret: "razorpay e2e secret", typ: "payment.captured", sample: "razorpay/payment.captured.json", unknownTyp: "order.paid", unknownSample: "razorpay/order.paid.json"},
	provider.LemonSqueezy: {secret: "lemonsqueezy e2e secret", typ: "order_created", sample: "lemonsqueezy/order_created.json", unknownTyp: "subscription_created", unknownSample: "lemonsqueezy/subscription_created.json"},
	provider.Square: {secret: "square e2e key", typ: "payment.updated", sample: "square/payment.updated.json", unknownTyp: "payment.created",
		unknown: func(t *testing.T, b []byte) []byte { return jsonWith(t, b, "type", "payment.created") }},
	provider.LiveKit: {secret: "APIe2e:livekit e2e secret", typ: "room_started", sample: "livekit/room_started.json", unknownTyp: "participant_joined",
		unknownSample: "livekit/participant_joined.json", signsTime: true},
	provider.Twilio: {secret: "twilio e2e token", typ: "message.delivered", sample: "twilio/message.delivered.json", unknownTyp: "message.sent",
		unknown: func(_ *testing.T, b []byte) []byte {
			return bytes.Replace(b, []byte("MessageStatus=delivered"), []byte("MessageStatus=sent"), 1)
		}},
	"n8n": {secret: "n8n e2e secret", typ: "workflow.completed", sample: "generic/workflow.completed.json", unknownTyp: "workflow.failed", signsTime: true},
}

// jsonWith returns the JSON object b with its top-level field set to v.
func jsonWith(t *testing.T, b []byte, field, v string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m[field] = v
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryProviderThroughTheGateway drives every provider of the table
// and a declared sender (n8n, as
// GENERIC_SENDERS declares it) through make dev's stack, each turned on by
// its secret variable, each delivery signed by the provider's Sign, which
// computes what its SDK's verification code does (the vectors of
// package provider's tests): signed -> 200 -> processed; the same event
// again (a retry, n8n's after a timeout) -> 200 duplicate and one effect;
// another secret, a malformed signature, and where a time is signed one
// an hour old or ahead -> 400 and nothing stored; a type the deployment
// does not handle -> 200 and kept as ignored. On /webhooks/standard, a
// Svix-style delivery (svix-* headers) is processed too. A provider not
// served -> 404. A provider added to the table without a case fails here.
func TestEveryProviderThroughTheGateway(t *testing.T) {
	for _, name := range provider.Names {
		if _, ok := gatewayCases[name]; !ok {
			t.Errorf("%s: no gateway case: add one to gatewayCases", name)
		}
	}
	senders, err := provider.ParseSenders(n8nSender)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GENERIC_SENDERS": n8nSender, "GITHUB_WEBHOOK_SECRET": "github previous secret," + gatewayCases[provider.GitHub].secret}
	for name, tc := range gatewayCases {
		if name != provider.GitHub {
			env[strings.ToUpper(name)+"_WEBHOOK_SECRET"] = tc.secret
		}
		if name != provider.Stripe {
			env[strings.ToUpper(name)+"_EVENT_TYPES"] = tc.typ
		}
	}
	env["EVENT_TYPES"] = gatewayCases[provider.Stripe].typ
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{
		Env:       env,
		Overrides: map[string]string{"SquareWebhookUrl": e2eSquareURL, "TwilioWebhookUrl": e2eTwilioURL},
	})
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()
	read := func(t *testing.T, sample string) []byte {
		t.Helper()
		if sample == "" {
			return nil // Stripe's: built by stamp
		}
		body, err := os.ReadFile(filepath.Join("..", "internal", "cli", "samples", sample))
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	for _, name := range slices.Sorted(maps.Keys(gatewayCases)) {
		tc := gatewayCases[name]
		t.Run(name, func(t *testing.T) {
			spec, err := provider.Lookup(name)
			if err != nil {
				spec = senders[0].Spec()
			}
			url := map[string]string{provider.Square: e2eSquareURL, provider.Twilio: e2eTwilioURL}[name]
			// stamp makes body event id's (in the body, where the provider
			// puts it there) of type typ.
			stamp := func(body []byte, id, typ string) ([]byte, string) {
				var err error
				switch {
				case spec.Name == provider.Stripe:
					body, err = stripefixture.Build(typ, stripefixture.Options{ID: id})
				case spec.Name == senders[0].Name:
					body, id, err = senders[0].Sample(body, id, typ)
				case spec.Stamp != nil:
					body, id, err = spec.Stamp(body, id)
				}
				if err != nil {
					t.Fatal(err)
				}
				return body, id
			}
			sign := func(secret, id, typ string, body []byte, at time.Time) map[string]string {
				h, err := spec.Sign(secret, provider.Delivery{ID: id, Type: typ, Shop: "e2e.myshopify.com", URL: url, Body: body, Now: at})
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			// lines are the receiver's lines of this provider matching m:
			// Stripe's carry no provider field.
			lines := func(m map[string]string) int {
				if name != provider.Stripe {
					m["provider"] = name
					return len(stack.Lines(m))
				}
				n := 0
				for _, l := range stack.Lines(m) {
					if _, ok := l["provider"]; !ok {
						n++
					}
				}
				return n
			}
			processed := func(id string) int { return len(stack.Lines(map[string]string{"msg": "processed", "event_id": id})) }
			status := func(id string, want event.Status) {
				t.Helper()
				testenv.Eventually(t, 30*time.Second, fmt.Sprintf("event %s to be %s", id, want), func() bool {
					r, err := events.Get(ctx, name, id)
					return err == nil && r.Status == want
				})
			}
			stored := func(what, id string) {
				t.Helper()
				if _, err := events.Get(ctx, name, id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s: record: got %v, want none", what, err)
				}
			}
			post := func(what string, body []byte, h map[string]string, want int) {
				t.Helper()
				if got, resp := postProvider(t, stack.URL, name, body, h); got != want {
					t.Fatalf("%s: got %d %s, want %d", what, got, resp, want)
				}
			}
			// refused checks that the receiver logged one more refusal of
			// this provider's with the outcome.
			seen := map[outcome.Outcome]int{}
			refused := func(what string, want outcome.Outcome) {
				t.Helper()
				seen[want]++
				testenv.Eventually(t, 10*time.Second, what+" to be logged "+string(want), func() bool {
					return lines(map[string]string{"msg": "webhook", "outcome": string(want)}) == seen[want]
				})
			}

			// Good, then its retry.
			body, id := stamp(read(t, tc.sample), name+"-e2e-1", tc.typ)
			post("first delivery", body, sign(tc.secret, id, tc.typ, body, time.Now()), 200)
			status(id, event.StatusProcessed)
			post("the retry", body, sign(tc.secret, id, tc.typ, body, time.Now()), 200)
			testenv.Eventually(t, 10*time.Second, "the duplicate to be logged", func() bool {
				return lines(map[string]string{"msg": "webhook", "event_id": id, "outcome": "duplicate"}) == 1
			})
			// Give a wrongly enqueued duplicate time to be processed.
			time.Sleep(2 * time.Second)
			if n := processed(id); n != 1 {
				t.Errorf("effects of the event: got %d, want exactly 1", n)
			}
			r, err := events.Get(ctx, name, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Provider != name || r.Type != tc.typ || r.Attempts != 1 || r.Source != event.SourceWebhook {
				t.Errorf("record: got provider %s type %s attempts %d source %s", r.Provider, r.Type, r.Attempts, r.Source)
			}
			if name == provider.Shopify && r.Account != "e2e.myshopify.com" {
				t.Errorf("shopify record: account %q, want the shop domain", r.Account)
			}
			// Keyed by provider: Stripe has no event of this id.
			if _, err := events.Get(ctx, event.ProviderStripe, id); name != provider.Stripe && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("stripe record of the same id: got %v, want none", err)
			}

			// Another secret: refused, nothing stored.
			bad, badID := stamp(read(t, tc.sample), name+"-e2e-wrong", tc.typ)
			post("another secret", bad, sign(wrongSecret(name), badID, tc.typ, bad, time.Now()), 400)
			refused("another secret", outcome.RejectedSignature)
			stored("another secret", badID)

			// A malformed signature: every header the provider signs with
			// holds no signature at all.
			mal, malID := stamp(read(t, tc.sample), name+"-e2e-malformed", tc.typ)
			h := sign(tc.secret, malID, tc.typ, mal, time.Now())
			for k := range h {
				if !strings.Contains(strings.ToLower(k), "id") && !strings.Contains(strings.ToLower(k), "token") {
					h[k] = "malformed"
				}
			}
			post("a malformed signature", mal, h, 400)
			refused("a malformed signature", outcome.RejectedMalformedSignature)
			stored("a malformed signature", malID)

			// A signed time an hour old (a replay) or an hour ahead.
			if tc.signsTime {
				for i, at := range []struct {
					at   time.Time
					want outcome.Outcome
				}{{time.Now().Add(-time.Hour), outcome.RejectedStaleTimestamp}, {time.Now().Add(time.Hour), outcome.RejectedFutureTimestamp}} {
					b, bid := stamp(read(t, tc.sample), fmt.Sprintf("%s-e2e-time-%d", name, i), tc.typ)
					post("signed "+string(at.want), b, sign(tc.secret, bid, tc.typ, b, at.at), 400)
					refused("signed "+string(at.want), at.want)
					stored("a time outside the window", bid)
				}
			}

			// A type the deployment does not handle: acknowledged, kept
			// as ignored, never processed.
			unk := read(t, tc.sample)
			switch {
			case tc.unknownSample != "":
				unk = read(t, tc.unknownSample)
			case tc.unknown != nil:
				unk = tc.unknown(t, unk)
			}
			unk, unkID := stamp(unk, name+"-e2e-unknown", tc.unknownTyp)
			post("an unhandled type", unk, sign(tc.secret, unkID, tc.unknownTyp, unk, time.Now()), 200)
			status(unkID, event.StatusIgnored)

			// Svix's header names on /webhooks/standard, as Svix's
			// libraries send them.
			if name == provider.Standard {
				sv, svID := stamp(read(t, tc.sample), "msg_e2e_svix", tc.typ)
				svix := map[string]string{}
				for k, v := range sign(tc.secret, svID, tc.typ, sv, time.Now()) {
					svix[strings.Replace(strings.ToLower(k), "webhook-", "svix-", 1)] = v
				}
				post("svix-* headers", sv, svix, 200)
				status(svID, event.StatusProcessed)
				post("svix-* headers under another secret", sv, map[string]string{"svix-id": "msg_e2e_svix_2", "svix-timestamp": svix["svix-timestamp"], "svix-signature": sign(wrongSecret(name), "msg_e2e_svix_2", tc.typ, sv, time.Now())["webhook-signature"]}, 400)
				refused("svix-* headers under another secret", outcome.RejectedSignature)
				stored("svix-* headers under another secret", "msg_e2e_svix_2")
			}
		})
	}
	status, resp := postProvider(t, stack.URL, "gitlab", []byte(`{}`), nil)
	if status != 404 {
		t.Errorf("unknown provider: got %d %s, want 404", status, resp)
	}
	// The stack's log reaches the test through a pipe, maybe after the answer.
	testenv.Eventually(t, 10*time.Second, "the unknown provider's log line", func() bool {
		return len(stack.Lines(map[string]string{"msg": "webhook", "outcome": "rejected_unknown_provider"})) >= 1
	})
	if n := len(stack.Lines(map[string]string{"msg": "webhook", "outcome": "rejected_unknown_provider"})); n != 1 {
		t.Errorf("unknown provider: %d log lines, want 1", n)
	}
}

// TestAProviderWithoutASecretIsNotServed: make dev without
// GITHUB_WEBHOOK_SECRET answers /webhooks/github 404 and stores nothing,
// while Stripe's endpoint works as before.
func TestAProviderWithoutASecretIsNotServed(t *testing.T) {
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{})
	events := eventsStore(t, stack.Prefix)
	body := []byte(`{"action":"opened"}`)
	h, _ := provider.Sign(provider.GitHub, "any", provider.Delivery{ID: "d-404", Type: "issues.opened", Body: body, Now: time.Now()})
	if status, resp := postProvider(t, stack.URL, provider.GitHub, body, h); status != 404 {
		t.Fatalf("got %d %s, want 404", status, resp)
	}
	if _, err := events.Get(context.Background(), provider.GitHub, "d-404"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("record: got %v, want none", err)
	}
}

func wrongSecret(name string) string {
	switch name {
	case provider.Standard:
		return "whsec_bm90IHRoZSBrZXk="
	case provider.LiveKit:
		return "APIe2e:not the secret"
	case provider.Stripe:
		return "whsec_not_the_secret"
	}
	return "not the secret"
}

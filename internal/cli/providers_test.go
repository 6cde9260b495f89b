package cli

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

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

const standardTestSecret = "whsec_c3RhbmRhcmQgbG9jYWwga2V5"

// squareURL is the notification URL Square's samples are signed for.
const squareURL = "https://hooks.example.com/webhooks/square"

// TestSendProvider sends each provider's samples to a stand-in that checks
// them with the receiver's own verifiers.
func TestSendProvider(t *testing.T) {
	secrets := map[string]string{
		provider.GitHub:       "gh secret",
		provider.Shopify:      "shp secret",
		provider.Standard:     standardTestSecret,
		provider.Paddle:       "pdl_ntfset_send",
		provider.Razorpay:     "rzp send",
		provider.LemonSqueezy: "ls send",
		provider.Square:       "sq send",
		provider.LiveKit:      "APIsend:lk send",
		provider.Twilio:       "tw send",
	}
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/webhooks/")
		v, err := provider.New(
			name,
			[]string{secrets[name]},
			provider.Options{Now: func() time.Time { return now }, Settings: map[string]string{provider.SettingURL: squareURL}},
		)
		if !ok || err != nil {
			http.Error(w, `{"error":"not found"}`, 404)
			return
		}
		b, _ := io.ReadAll(r.Body)
		h := map[string]string{}
		for k := range r.Header {
			h[strings.ToLower(k)] = r.Header.Get(k)
		}
		out, err := v.Verify(r.Context(), provider.Request{Body: b, Headers: h})
		env := out.Envelope
		if err != nil {
			http.Error(w, `{"error":"invalid webhook request"}`, 400)
			return
		}
		mu.Lock()
		got = append(got, name+" "+env.ID+" "+env.Type)
		mu.Unlock()
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	defer srv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name, env string
		args      []string
		code      int
		want      string
	}{
		{"github", secrets[provider.GitHub], []string{"send", "--provider", "github", "issues.opened", "--id", "d-1", "--repeat", "2", "--url", srv.URL + "/webhooks/github"}, 0, "d-1  issues.opened"},
		{"github push", secrets[provider.GitHub], []string{"send", "--provider", "github", "push", "--id", "d-2", "--json", "--url", srv.URL + "/webhooks/github"}, 0, `"id":"d-2","type":"push","status":200`},
		{"shopify", secrets[provider.Shopify], []string{"send", "--provider", "shopify", "orders/create", "--id", "e-1", "--url", srv.URL + "/webhooks/shopify"}, 0, "e-1  orders/create"},
		{"standard", secrets[provider.Standard], []string{"send", "--provider", "standard", "user.created", "--id", "msg_1", "--url", srv.URL + "/webhooks/standard"}, 0, "msg_1  user.created"},
		{"paddle", secrets[provider.Paddle], []string{"send", "--provider", "paddle", "transaction.completed", "--id", "evt_1", "--url", srv.URL + "/webhooks/paddle"}, 0, "evt_1  transaction.completed"},
		{"razorpay", secrets[provider.Razorpay], []string{"send", "--provider", "razorpay", "payment.captured", "--id", "GhR5zMHc2LbQ8k", "--url", srv.URL + "/webhooks/razorpay"}, 0, "GhR5zMHc2LbQ8k  payment.captured"},
		{"lemonsqueezy", secrets[provider.LemonSqueezy], []string{"send", "--provider", "lemonsqueezy", "order_created", "--id", "s-1", "--url", srv.URL + "/webhooks/lemonsqueezy"}, 0, "body-2cfd26409104d0d1a2b15f8fcdbadf05  order_created"},
		{"square", secrets[provider.Square], []string{"send", "--provider", "square", "payment.updated", "--id", "sq-1", "--url", srv.URL + "/webhooks/square"}, 0, "sq-1  payment.updated"},
		{"livekit", secrets[provider.LiveKit], []string{"send", "--provider", "livekit", "room_started", "--id", "EV_1", "--url", srv.URL + "/webhooks/livekit"}, 0, "EV_1  room_started"},
		{"twilio", secrets[provider.Twilio], []string{"send", "--provider", "twilio", "message.delivered", "--id", "idem-1", "--url", srv.URL + "/webhooks/twilio"}, 0, "idem-1  message.delivered"},
		{"wrong secret", "other", []string{"send", "--provider", "github", "push", "--id", "d-3", "--url", srv.URL + "/webhooks/github"}, 1, "d-3  push"},
		{"no sample", secrets[provider.GitHub], []string{"send", "--provider", "github", "nonsense", "--url", srv.URL}, 2, ""},
		{"no secret", "", []string{"send", "--provider", "shopify", "orders/create", "--url", srv.URL}, 2, ""},
		{"--dev is Stripe's", "", []string{"send", "--provider", "github", "--dev", "push", "--url", srv.URL}, 2, ""},
		{"unknown provider", "", []string{"send", "--provider", "gitlab", "push", "--url", srv.URL}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := offline(t)
			c.env["SQUARE_WEBHOOK_URL"] = squareURL
			c.env["TWILIO_WEBHOOK_URL"] = squareURL
			for _, n := range provider.Names {
				if tc.env != "" && strings.Contains(strings.Join(tc.args, " "), "--provider "+n) {
					c.env[strings.ToUpper(n)+"_WEBHOOK_SECRET"] = tc.env
				}
			}
			r := c.run(ctx, tc.args...).must(t, tc.code)
			if !strings.Contains(r.stdout, tc.want) {
				t.Errorf("stdout: got %q, want it to contain %q", r.stdout, tc.want)
			}
		})
	}
	want := "github d-1 issues.opened,github d-1 issues.opened,github d-2 push,shopify e-1 orders/create,standard msg_1 user.created,paddle evt_1 transaction.completed,razorpay GhR5zMHc2LbQ8k payment.captured,lemonsqueezy body-2cfd26409104d0d1a2b15f8fcdbadf05 order_created,square sq-1 payment.updated,livekit EV_1 room_started,twilio idem-1 message.delivered"
	if g := strings.Join(got, ","); g != want {
		t.Errorf("received: got %s, want %s", g, want)
	}
}

// TestSendProviderURL: without --url, the provider's endpoint is the
// Stripe endpoint's with the provider's name.
func TestSendProviderURL(t *testing.T) {
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	defer srv.Close()
	c := offline(t)
	c.env["WEBHOOK_URL"] = srv.URL + "/webhooks/stripe"
	c.env["SHOPIFY_WEBHOOK_SECRET"] = "s"
	c.run(context.Background(), "send", "--provider", "shopify", "customers/create").must(t, 0)
	if path != "/webhooks/shopify" {
		t.Errorf("path: got %s, want /webhooks/shopify", path)
	}
}

// TestEventByProvider: the same id from two providers is two records, and
// --provider picks one.
func TestEventByProvider(t *testing.T) {
	w := newWorld(t, true)
	ctx := context.Background()
	body := []byte(`{"action":"opened","issue":{"number":1}}`)
	gh := event.NewRecord(
		provider.GitHub,
		event.Envelope{ID: "evt_same", Type: "issues.opened"},
		body,
		ingest.Hash(body),
		event.SourceWebhook,
		event.StatusReceived,
		w.clock.Now(),
	)
	if _, err := w.events.Create(ctx, &gh); err != nil {
		t.Fatal(err)
	}
	shop := event.NewRecord(
		provider.Shopify,
		event.Envelope{ID: "evt_same", Type: "orders/create", Account: "s.myshopify.com", Created: 1796050800},
		body,
		ingest.Hash(body),
		event.SourceWebhook,
		event.StatusReceived,
		w.clock.Now(),
	)
	if _, err := w.events.Create(ctx, &shop); err != nil {
		t.Fatal(err)
	}
	c := w.cli()
	r := c.run(ctx, "event", "evt_same", "--provider", "github", "--json").must(t, 0)
	var j EventJSON
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.Provider != "github" || j.ID != "evt_same" || j.Type != "issues.opened" || j.Status != "received" || j.Attempts != 0 || j.Source != "webhook" {
		t.Errorf("github record: got %+v", j)
	}
	r = c.run(ctx, "event", "evt_same", "--provider", "shopify").must(t, 0)
	if !strings.Contains(r.stdout, "orders/create") || !strings.Contains(r.stdout, "s.myshopify.com") || !strings.Contains(r.stdout, "shopify") {
		t.Errorf("shopify record: got %s", r.stdout)
	}
	// Stripe stays the default: no Stripe event has this id.
	c.run(ctx, "event", "evt_same").must(t, 1)
	c.run(ctx, "event", "evt_same", "--provider", "gitlab").must(t, 2)
}

// TestSendDeclaredSender: --provider names a sender GENERIC_SENDERS
// declares, and send signs the generic sample as declared (the id in the
// signed header, or in the body's field with the type), which the
// receiver's verifier of that declaration accepts; a sender not declared
// is refused.
func TestSendDeclaredSender(t *testing.T) {
	const decl = `[{"name":"n8n","prefix":"sha256=","signature_header":"x-n8n-signature","timestamp_header":"x-n8n-timestamp","id_header":"x-n8n-delivery",` +
		`"template":"{timestamp}.{id}.{body}","type_field":"type"},` +
		`{"name":"svc","algorithm":"sha1","encoding":"base64","signature_header":"x-sig","id_field":"meta.id","type_field":"event"}]`
	senders, err := provider.ParseSenders(decl)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _ := strings.CutPrefix(r.URL.Path, "/webhooks/")
		for _, s := range senders {
			if s.Name != name {
				continue
			}
			v, _ := s.Spec().New([]string{name + " secret"}, provider.Options{Now: func() time.Time { return now }})
			b, _ := io.ReadAll(r.Body)
			h := map[string]string{}
			for k := range r.Header {
				h[strings.ToLower(k)] = r.Header.Get(k)
			}
			out, err := v.Verify(r.Context(), provider.Request{Body: b, Headers: h})
			if err != nil {
				http.Error(w, `{"error":"invalid webhook request"}`, 400)
				return
			}
			got = append(got, name+" "+out.Envelope.ID+" "+out.Envelope.Type)
			_, _ = io.WriteString(w, `{"received":true}`)
			return
		}
		http.Error(w, `{"error":"not found"}`, 404)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"n8n", []string{"send", "--provider", "n8n", "workflow.completed", "--id", "run-1", "--url", srv.URL + "/webhooks/n8n"}, 0},
		{"svc", []string{"send", "--provider", "svc", "order.paid", "--id", "o-1", "--url", srv.URL + "/webhooks/svc"}, 0},
		{"not declared", []string{"send", "--provider", "zapier", "x", "--url", srv.URL}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := offline(t)
			c.env["GENERIC_SENDERS"] = decl
			c.env["N8N_WEBHOOK_SECRET"] = "n8n secret"
			c.env["SVC_WEBHOOK_SECRET"] = "svc secret"
			c.run(context.Background(), tc.args...).must(t, tc.code)
		})
	}
	if g, want := strings.Join(got, ","), "n8n run-1 workflow.completed,svc o-1 order.paid"; g != want {
		t.Errorf("received: got %s, want %s", g, want)
	}
}

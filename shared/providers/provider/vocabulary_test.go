package provider

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
)

// TestOneVerifierInterface: Verifier is the repository's only interface
// with a Verify method, tests included, so every provider, the Keyring
// and every caller speak one vocabulary. A second one (a receiver's own,
// a provider's with another shape) fails here.
func TestOneVerifierInterface(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	var found []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			it, ok := spec.Type.(*ast.InterfaceType)
			if !ok {
				return true
			}
			for _, m := range it.Methods.List {
				for _, name := range m.Names {
					if name.Name == "Verify" {
						rel, _ := filepath.Rel(root, path)
						found = append(found, filepath.ToSlash(rel)+": "+spec.Name.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("scanned %d Go files under %s, want the whole repository", files, root)
	}
	if len(found) != 1 || found[0] != "shared/providers/provider/provider.go: Verifier" {
		t.Errorf("interfaces with a Verify method: got %v, want only shared/providers/provider/provider.go: Verifier", found)
	}
}

// TestTheTable: every provider is one row, known by its name, whose
// signer makes what its verifier accepts.
func TestTheTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All {
		if s.Name == "" || s.Check == nil || s.New == nil || s.Sign == nil {
			t.Errorf("%q: a row with a field missing", s.Name)
		}
		if seen[s.Name] {
			t.Errorf("%s: two rows", s.Name)
		}
		seen[s.Name] = true
		if !Known(s.Name) {
			t.Errorf("%s: not Known", s.Name)
		}
	}
	if Known("gitlab") {
		t.Error("gitlab: Known, want unknown")
	}
	if _, err := NewKeyring("gitlab", nil, Options{}); err == nil {
		t.Error("a keyring of an unknown provider: got no error")
	}
}

// TestCheckRefusesWhatNoSecretCanVerify: each provider's Check refuses,
// without a secret, what its Verify would refuse whatever the secrets, with
// the same class of error, and passes what its signer makes.
func TestCheckRefusesWhatNoSecretCanVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","action":"opened"}`)
	secrets := map[string]string{
		Stripe:       "whsec_check",
		GitHub:       "gh",
		Shopify:      "shp",
		Standard:     standardSecret,
		Paddle:       paddleSecret,
		Razorpay:     razorpaySecret,
		LemonSqueezy: lemonSqueezySecret,
		Square:       squareKey,
		LiveKit:      liveKitKey + ":" + liveKitSecret,
		Twilio:       "twilio token",
	}
	bad := map[string][]struct {
		headers map[string]string
		want    error
	}{
		Stripe: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"stripe-signature": "garbage"}, ErrMalformedSignature},
			{map[string]string{"stripe-signature": "t=1800000000,v0=abcd"}, ErrNoMatch},
			{map[string]string{"stripe-signature": "t=1,t=2"}, ErrReplay},
		},
		GitHub: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"x-hub-signature-256": "sha1=abcd"}, ErrMalformedSignature},
			{map[string]string{"x-hub-signature-256": "sha256=abcd"}, ErrMalformedSignature},
		},
		Shopify: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"x-shopify-hmac-sha256": "not base64"}, ErrMalformedSignature},
		},
		Standard: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"webhook-signature": "v1,AAAA", "webhook-timestamp": "1"}, event.ErrMissingID},
			{map[string]string{"webhook-signature": "v1,AAAA", "webhook-id": "m", "webhook-timestamp": "soon"}, ErrMalformedSignature},
		},
		Twilio: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"x-twilio-signature": "AAAA"}, ErrMalformedSignature},
		},
		LiveKit: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"authorization": "Bearer x"}, ErrMalformedSignature},
		},
		Square: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"x-square-hmacsha256-signature": "not base64"}, ErrMalformedSignature},
		},
		LemonSqueezy: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"x-signature": "not hex"}, ErrMalformedSignature},
		},
		Razorpay: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"x-razorpay-signature": "abcd"}, ErrMalformedSignature},
		},
		Paddle: {
			{map[string]string{}, ErrMissingSignature},
			{map[string]string{"paddle-signature": "ts=1800000000"}, ErrMalformedSignature},
			{map[string]string{"paddle-signature": "ts=1800000000;h1=abcd"}, ErrMalformedSignature},
			{map[string]string{"paddle-signature": "h1=" + strings.Repeat("0", 64)}, ErrMalformedSignature},
		},
	}
	for _, s := range All {
		t.Run(s.Name, func(t *testing.T) {
			cases, ok := bad[s.Name]
			if !ok {
				t.Fatalf("no cases for %s: add its headers that cannot verify", s.Name)
			}
			v, err := New(s.Name, []string{secrets[s.Name]}, testOptions(s.Name, Options{Now: func() time.Time { return now }}))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range cases {
				r := Request{Body: body, Headers: tc.headers}
				if err := s.Check(r); !errors.Is(err, tc.want) {
					t.Errorf("Check(%v): got %v, want %v", tc.headers, err, tc.want)
				}
				if _, err := v.Verify(context.Background(), r); !errors.Is(err, tc.want) {
					t.Errorf("Verify(%v): got %v, want %v, as Check says", tc.headers, err, tc.want)
				}
			}
			h, err := s.Sign(secrets[s.Name], Delivery{ID: "id-1", Type: "invoice.paid", Shop: "s.myshopify.com", URL: squareURL, Body: body, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(Request{Body: body, Headers: h}); err != nil {
				t.Errorf("Check of a signed delivery: got %v, want nil", err)
			}
		})
	}
}

// TestReplayKeys: a provider whose signature does not cover the event's id
// names the signed body, so the same body under another id, or (GitHub)
// another event name, has the same key; Shopify's topic is part of it, as
// Shopify sends one order's body under orders/create and orders/paid.
// Stripe and Standard Webhooks sign the id (or the body holding it) with a
// timestamp: no key.
func TestReplayKeys(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(
		`{"id":"450789469","action":"opened","type":"invoice.paid","object":"event","livemode":false,"event_id":"evt_450789469","event_type":"invoice.paid","event":"payment.captured","meta":{"event_name":"order_created"},"event_id":"evt_450789469","event":"room_started"}`,
	)
	key := func(name, secret string, d Delivery) string {
		t.Helper()
		d.Body, d.Now, d.URL = body, now, squareURL
		h, err := Sign(name, secret, d)
		if err != nil {
			t.Fatal(err)
		}
		v, err := New(name, []string{secret}, testOptions(name, Options{Now: func() time.Time { return now }}))
		if err != nil {
			t.Fatal(err)
		}
		out, err := v.Verify(context.Background(), Request{Body: body, Headers: h})
		if err != nil {
			t.Fatal(err)
		}
		return out.ReplayKey
	}
	gh := key(GitHub, "gh", Delivery{ID: "d-1", Type: "issues.opened"})
	if gh == "" || gh != key(GitHub, "gh", Delivery{ID: "d-2", Type: "issues.opened"}) ||
		gh != key(GitHub, "gh", Delivery{ID: "d-3", Type: "pull_request.opened"}) {
		t.Error("GitHub: want one key for the body, whatever the delivery id and event name")
	}
	paid := key(Shopify, "shp", Delivery{ID: "e-1", Type: "orders/paid", Shop: "a.myshopify.com"})
	if paid == "" || paid != key(Shopify, "shp", Delivery{ID: "e-2", Type: "orders/paid", Shop: "b.myshopify.com"}) {
		t.Error("Shopify: want one key for the topic and body, whatever the event id and shop")
	}
	if paid == key(Shopify, "shp", Delivery{ID: "e-3", Type: "orders/create", Shop: "a.myshopify.com"}) {
		t.Error("Shopify: orders/create and orders/paid of one body: got one key, want two")
	}
	if paid == gh {
		t.Error("Shopify's key is GitHub's")
	}
	if k := key(Stripe, "whsec_k", Delivery{}); k != "" {
		t.Errorf("Stripe: got key %q, want none", k)
	}
	if k := key(Standard, standardSecret, Delivery{ID: "msg_1"}); k != "" {
		t.Errorf("Standard Webhooks: got key %q, want none", k)
	}
	rz := key(Razorpay, razorpaySecret, Delivery{ID: "ev-1"})
	if rz == "" || rz != key(Razorpay, razorpaySecret, Delivery{ID: "ev-2"}) || rz != gh {
		t.Error("Razorpay: want one key for the body, whatever the event id (GitHub's rule: the body alone)")
	}
	// No time signed: a key even where the id is signed, so that a
	// capture stays a replay after its record's TTL.
	if k := key(LemonSqueezy, lemonSqueezySecret, Delivery{}); k == "" {
		t.Error("Lemon Squeezy: got no key, want one (no time is signed)")
	}
	if k := key(Square, squareKey, Delivery{}); k == "" {
		t.Error("Square: got no key, want one (no time is signed)")
	}
	if k := key(LiveKit, liveKitKey+":"+liveKitSecret, Delivery{}); k != "" {
		t.Errorf("LiveKit: got key %q, want none (the token covers the body's hash, the body its id)", k)
	}
	tw := key(Twilio, "twilio token", Delivery{ID: "idem-1"})
	if tw == "" || tw != key(Twilio, "twilio token", Delivery{ID: "idem-2"}) {
		t.Error("Twilio: want one key for the signed URL and body, whatever the idempotency token")
	}
	if k := key(Paddle, paddleSecret, Delivery{}); k != "" {
		t.Errorf("Paddle: got key %q, want none (its signature covers the timestamp and the body, which holds the id)", k)
	}
}

// TestStripeChecksTheModeAfterTheSignature: a live event at a test
// deployment (or the reverse) is ErrWrongMode, with its envelope, but only
// once its signature verified.
func TestStripeChecksTheModeAfterTheSignature(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	live := []byte(`{"id":"evt_live","object":"event","type":"invoice.paid","livemode":true}`)
	for _, tc := range []struct {
		name     string
		livemode bool
		secret   string
		want     error
	}{
		{"live event, live deployment", true, "whsec_m", nil},
		{"live event, test deployment", false, "whsec_m", ErrWrongMode},
		{"live event, test deployment, forged", false, "whsec_other", ErrNoMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(Stripe, []string{"whsec_m"}, Options{Livemode: tc.livemode, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			out, err := v.Verify(context.Background(), Request{Body: live, Headers: map[string]string{"stripe-signature": SignStripe(live, tc.secret, now)}})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err == nil || errors.Is(err, ErrWrongMode) {
				if out.Envelope.ID != "evt_live" {
					t.Errorf("envelope: got %+v, want the event's", out.Envelope)
				}
			}
		})
	}
}

// TestOutcome: the one switch from errors to outcomes, a replay before a
// malformed header, wrapped errors included.
func TestOutcome(t *testing.T) {
	_, twoT := ParseStripeHeader("t=1,t=2")
	for _, tc := range []struct {
		err  error
		want outcome.Outcome
	}{
		{ErrMissingSignature, outcome.RejectedMissingSignature},
		{ErrMalformedSignature, outcome.RejectedMalformedSignature},
		{twoT, outcome.RejectedReplay},
		{errors.Join(errors.New("x"), ErrReplay), outcome.RejectedReplay},
		{ErrNoMatch, outcome.RejectedSignature},
		{ErrTooOld, outcome.RejectedStaleTimestamp},
		{ErrTooNew, outcome.RejectedFutureTimestamp},
		{ErrWrongMode, outcome.RejectedWrongMode},
		{fmt.Errorf("x: %w", ErrWrongEndpoint), outcome.RejectedWrongEndpoint},
		{ErrNoSecrets, outcome.SecretsUnavailable},
		{event.ErrMissingID, outcome.RejectedMissingID},
		{event.ErrMalformed, outcome.RejectedMalformed},
		{errors.New("anything else"), outcome.RejectedSignature},
	} {
		if got := Outcome(tc.err); got != tc.want {
			t.Errorf("Outcome(%v): got %s, want %s", tc.err, got, tc.want)
		}
	}
	if !errors.Is(twoT, ErrMalformedSignature) {
		t.Errorf("a second t=: got %v, want it malformed too", twoT)
	}
}

func TestRequestURL(t *testing.T) {
	r := Request{Host: "hooks.example.com", Path: "/webhooks/twilio", Query: "a=1&b=2"}
	if got := r.URL(); got != "https://hooks.example.com/webhooks/twilio?a=1&b=2" {
		t.Errorf("got %s", got)
	}
	r.Query = ""
	if got := r.URL(); got != "https://hooks.example.com/webhooks/twilio" {
		t.Errorf("no query: got %s", got)
	}
}

package provider

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// GitHub's documented example ("Validating webhook deliveries").
const (
	githubSecret             = "It's a Secret to Everybody"
	githubBody               = "Hello, World!"
	githubPublishedSignature = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

// The Standard Webhooks library's own test vector.
const (
	standardSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	standardID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	standardTimestamp = 1614265330
	standardBody      = `{"test": 2432232314}`
	standardSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// TestGitHubPublishedExample checks the signature of GitHub's example. Its
// body is no JSON object, so a verified delivery goes on to be refused as
// malformed: the signature passed, which is what the example tests.
func TestGitHubPublishedExample(t *testing.T) {
	headers := map[string]string{"x-hub-signature-256": githubPublishedSignature, "x-github-delivery": "d1", "x-github-event": "ping"}
	for _, tc := range []struct {
		name    string
		secrets []string
		want    error
	}{
		{"documented secret", []string{githubSecret}, event.ErrMalformed},
		{"rotation, documented secret second", []string{"new secret", githubSecret}, event.ErrMalformed},
		{"another secret", []string{"It's a Secret to Nobody"}, ErrNoMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(GitHub, tc.secrets, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = verify(v, []byte(githubBody), headers)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestStandardPublishedVector(t *testing.T) {
	at := func(ts int64) Options {
		return Options{Now: func() time.Time { return time.Unix(ts, 0) }}
	}
	headers := map[string]string{"webhook-id": standardID, "webhook-timestamp": "1614265330", "webhook-signature": standardSignature}
	for _, tc := range []struct {
		name    string
		secrets []string
		opts    Options
		headers map[string]string
		want    error
	}{
		// The vector's payload has no "type": it verifies, then is refused
		// as having no type, the same 400 as an event without an id.
		{"vector", []string{standardSecret}, at(standardTimestamp), headers, event.ErrMissingID},
		{"vector among several entries and secrets", []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("another key")), standardSecret}, at(standardTimestamp),
			map[string]string{"Webhook-Id": standardID, "Webhook-Timestamp": "1614265330", "Webhook-Signature": "v1,bm90IGl0 " + standardSignature}, event.ErrMissingID},
		{"other key", []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("another key"))}, at(standardTimestamp), headers, ErrNoMatch},
		{"stale", []string{standardSecret}, at(standardTimestamp + 301), headers, ErrTooOld},
		{"at the tolerance", []string{standardSecret}, at(standardTimestamp + 300), headers, event.ErrMissingID},
		{"future", []string{standardSecret}, at(standardTimestamp - 61), headers, ErrTooNew},
		{"tolerance setting", []string{standardSecret}, Options{Tolerance: time.Hour, Now: at(standardTimestamp + 3000).Now}, headers, event.ErrMissingID},
		{"no signature", []string{standardSecret}, at(standardTimestamp), map[string]string{"webhook-id": standardID, "webhook-timestamp": "1614265330"}, ErrMissingSignature},
		{"bad timestamp", []string{standardSecret}, at(standardTimestamp), map[string]string{"webhook-id": standardID, "webhook-timestamp": "soon", "webhook-signature": standardSignature}, ErrMalformedSignature},
		{"no id", []string{standardSecret}, at(standardTimestamp), map[string]string{"webhook-timestamp": "1614265330", "webhook-signature": standardSignature}, event.ErrMissingID},
		{"id changed", []string{standardSecret}, at(standardTimestamp), map[string]string{"webhook-id": "msg_other", "webhook-timestamp": "1614265330", "webhook-signature": standardSignature}, ErrNoMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(Standard, tc.secrets, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = verify(v, []byte(standardBody), tc.headers)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestStandardEnvelope(t *testing.T) {
	body := []byte(`{"type":"invoice.paid","timestamp":"2021-02-25T15:02:10Z","data":{"id":"inv_1"}}`)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a local key"))
	mac := hmac.New(sha256.New, []byte("a local key"))
	mac.Write([]byte("msg_1.1614265330." + string(body)))
	sig := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	v, err := New(Standard, []string{secret}, Options{Now: func() time.Time { return time.Unix(standardTimestamp, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	env, err := verify(v, body, map[string]string{"webhook-id": "msg_1", "webhook-timestamp": "1614265330", "webhook-signature": sig})
	if err != nil {
		t.Fatal(err)
	}
	want := event.Envelope{ID: "msg_1", Type: "invoice.paid", Created: standardTimestamp}
	if env != want {
		t.Errorf("got %+v, want %+v", env, want)
	}
}

func TestStandardRefusesSecretsThatAreNotWhsec(t *testing.T) {
	for _, s := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!"} {
		if _, err := New(Standard, []string{s}, Options{}); err == nil {
			t.Errorf("secret %q: got no error, want one", s)
		}
	}
}

// shopifyHMAC computes Shopify's signature independently of the package:
// base64 of HMAC-SHA256(secret, body).
func shopifyHMAC(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestShopify(t *testing.T) {
	const secret = "shpss_test_client_secret"
	body := `{"id":820982911946154508,"email":"jon@example.com","updated_at":"2026-11-30T10:00:00-05:00"}`
	// Computed once, outside Go, with: printf %s "$body" | openssl dgst -sha256 -hmac "$secret" -binary | base64
	const published = "6JdwCHgdtQB3N7StMaP2Ickl59/DYUKGjNdqa6KJyHA="
	if got := shopifyHMAC(secret, body); got != published {
		t.Fatalf("independent HMAC: got %s, want %s", got, published)
	}
	base := func() map[string]string {
		return map[string]string{
			"x-shopify-hmac-sha256":  published,
			"x-shopify-topic":        "orders/create",
			"x-shopify-event-id":     "98880550-7158-44d4-b7cd-2c97c8a091b5",
			"x-shopify-webhook-id":   "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
			"x-shopify-shop-domain":  "shop.myshopify.com",
			"x-shopify-triggered-at": "2026-11-30T15:00:00.123456Z",
		}
	}
	v, err := New(Shopify, []string{"old", secret}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	env, err := verify(v, []byte(body), base())
	if err != nil {
		t.Fatal(err)
	}
	want := event.Envelope{ID: "98880550-7158-44d4-b7cd-2c97c8a091b5", Type: "orders/create", Created: 1796050800,
		Account: "shop.myshopify.com", ObjectID: "820982911946154508", ObjectType: "orders"}
	if env != want {
		t.Errorf("got %+v, want %+v", env, want)
	}

	noEventID := base()
	delete(noEventID, "x-shopify-event-id")
	if env, err := verify(v, []byte(body), noEventID); err != nil || env.ID != "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043" {
		t.Errorf("without X-Shopify-Event-Id: got id %q, %v; want the webhook id", env.ID, err)
	}

	for _, tc := range []struct {
		name   string
		change func(h map[string]string)
		body   string
		want   error
	}{
		{"no signature", func(h map[string]string) { delete(h, "x-shopify-hmac-sha256") }, body, ErrMissingSignature},
		{"hex, not base64", func(h map[string]string) {
			h["x-shopify-hmac-sha256"] = hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
		}, body, ErrMalformedSignature},
		{"wrong secret", func(h map[string]string) { h["x-shopify-hmac-sha256"] = shopifyHMAC("other", body) }, body, ErrNoMatch},
		{"body changed", func(map[string]string) {}, body + " ", ErrNoMatch},
		{"no topic", func(h map[string]string) { delete(h, "x-shopify-topic") }, body, event.ErrMissingID},
		{"no id at all", func(h map[string]string) {
			delete(h, "x-shopify-event-id")
			delete(h, "x-shopify-webhook-id")
		}, body, event.ErrMissingID},
		{"not JSON", func(h map[string]string) { h["x-shopify-hmac-sha256"] = shopifyHMAC(secret, "oops") }, "oops", event.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := base()
			tc.change(h)
			_, err := verify(v, []byte(tc.body), h)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func githubSign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestGitHub(t *testing.T) {
	const secret = "gh secret"
	body := `{"action":"opened","number":1,"pull_request":{"id":1}}`
	base := func() map[string]string {
		return map[string]string{
			"x-hub-signature-256": githubSign(secret, body),
			"x-github-delivery":   "72d3162e-cc78-11e3-81ab-4c9367dc0958",
			"x-github-event":      "pull_request",
		}
	}
	v, err := New(GitHub, []string{secret}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	env, err := verify(v, []byte(body), base())
	if err != nil {
		t.Fatal(err)
	}
	if want := (event.Envelope{ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958", Type: "pull_request.opened"}); env != want {
		t.Errorf("got %+v, want %+v", env, want)
	}
	push := `{"ref":"refs/heads/main"}`
	h := base()
	h["x-hub-signature-256"], h["x-github-event"] = githubSign(secret, push), "push"
	if env, err := verify(v, []byte(push), h); err != nil || env.Type != "push" {
		t.Errorf("push without action: got type %q, %v; want push", env.Type, err)
	}
	for _, tc := range []struct {
		name   string
		change func(h map[string]string)
		want   error
	}{
		{"no signature", func(h map[string]string) { delete(h, "x-hub-signature-256") }, ErrMissingSignature},
		{"sha1 header value", func(h map[string]string) { h["x-hub-signature-256"] = "sha1=0123" }, ErrMalformedSignature},
		{"short hex", func(h map[string]string) { h["x-hub-signature-256"] = "sha256=abcd" }, ErrMalformedSignature},
		{"wrong secret", func(h map[string]string) { h["x-hub-signature-256"] = githubSign("other", body) }, ErrNoMatch},
		{"no delivery id", func(h map[string]string) { delete(h, "x-github-delivery") }, event.ErrMissingID},
		{"no event", func(h map[string]string) { delete(h, "x-github-event") }, event.ErrMissingID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := base()
			tc.change(h)
			_, err := verify(v, []byte(body), h)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// verify verifies a delivery of body with headers and returns its
// envelope.
func verify(v Verifier, body []byte, headers map[string]string) (event.Envelope, error) {
	out, err := v.Verify(context.Background(), Request{Body: body, Headers: headers})
	return out.Envelope, err
}

func TestNew(t *testing.T) {
	if _, err := New("gitlab", []string{"s"}, Options{}); err == nil {
		t.Error("unknown provider: got no error, want one")
	}
	if _, err := New(GitHub, nil, Options{}); err == nil {
		t.Error("no secret: got no error, want one")
	}
}

func TestDecodeObjectTakesOneObjectOnly(t *testing.T) {
	type shape struct {
		Type string `json:"type"`
	}
	for _, body := range []string{`null`, `[]`, `"x"`, `1`, `{"type":1}`, `{"type":"a"`, ``} {
		if _, err := decodeObject[shape]([]byte(body)); !errors.Is(err, event.ErrMalformed) {
			t.Errorf("%q: got %v, want ErrMalformed", body, err)
		}
	}
	if v, err := decodeObject[shape]([]byte(`{"type":"a","type":"b"}`)); err != nil || v.Type != "b" {
		t.Errorf("repeated key: got %q, %v; want the last value, as encoding/json reads it everywhere", v.Type, err)
	}
}

// TestEveryProviderIsInTheTablesVocabulary: event.Providers (the console's
// filter, the reconciler's stuck sweep) names every provider of the table,
// Stripe first, so a record of any of them can be listed and swept.
func TestEveryProviderIsInTheTablesVocabulary(t *testing.T) {
	if !slices.Equal(event.Providers, Names) || Names[0] != event.ProviderStripe {
		t.Errorf("event.Providers = %v, want the table's names %v, Stripe first", event.Providers, Names)
	}
}

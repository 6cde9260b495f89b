package provider

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// declared parses one sender's declaration, failing the test on an error.
func declared(t *testing.T, doc string) Sender {
	t.Helper()
	s, err := ParseSenders("[" + doc + "]")
	if err != nil {
		t.Fatal(err)
	}
	return s[0]
}

// senderVerify verifies a delivery of body with headers for s under
// secrets, at now.
func senderVerify(t *testing.T, s Sender, secrets []string, now int64, body string, headers map[string]string) (event.Envelope, error) {
	t.Helper()
	v, err := newOf(s.Spec(), secrets, Options{Now: func() time.Time { return time.Unix(now, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return verify(v, []byte(body), headers)
}

// TestSenderTakesTheVendorsVectors: declared as each of these senders
// signs, a configured sender accepts the vector that sender's SDK
// accepted (../shared/FACTS.md): a body-only hex MAC (Razorpay's), a
// timestamp template in separate headers (Paddle's "ts:body", hex), a
// literal text before the body in base64 (Square's URL), and a prefix
// (GitHub's published example, whose body is not JSON: the MAC matches,
// then the body has no id).
func TestSenderTakesTheVendorsVectors(t *testing.T) {
	t.Run("razorpay's", func(t *testing.T) {
		s := declared(t, `{"name":"rzp","signature_header":"X-Razorpay-Signature","id_field":"payload.payment.entity.id","type_field":"event"}`)
		env, err := senderVerify(t, s, []string{razorpaySecret}, 0, razorpayBody, map[string]string{"x-razorpay-signature": razorpayVectorHeader})
		if err != nil {
			t.Fatal(err)
		}
		if want := (event.Envelope{ID: "pay_DESlfW9H8K9uqM", Type: "payment.captured"}); env != want {
			t.Errorf("got %+v, want %+v", env, want)
		}
	})
	t.Run("paddle's", func(t *testing.T) {
		s := declared(t, `{"name":"pdl","signature_header":"x-sig","timestamp_header":"x-ts","template":"{timestamp}:{body}","id_field":"event_id","type_field":"event_type"}`)
		h1 := strings.TrimPrefix(paddleVectorHeader, "ts=1712917129;h1=")
		env, err := senderVerify(t, s, []string{paddleSecret}, paddleTimestamp, paddleBody, map[string]string{"x-sig": h1, "x-ts": "1712917129"})
		if err != nil {
			t.Fatal(err)
		}
		if want := (event.Envelope{ID: "evt_01hv8wptq8987qeep44cyrewp9", Type: "transaction.completed", Created: paddleTimestamp}); env != want {
			t.Errorf("got %+v, want %+v", env, want)
		}
	})
	t.Run("square's", func(t *testing.T) {
		s := declared(t, `{"name":"sq","encoding":"base64","signature_header":"x-square-hmacsha256-signature","template":"`+squareURL+`{body}","id_field":"event_id","type_field":"type"}`)
		env, err := senderVerify(t, s, []string{squareKey}, 0, squareBody, map[string]string{"X-Square-HmacSha256-Signature": squareVectorHeader})
		if err != nil {
			t.Fatal(err)
		}
		if want := (event.Envelope{ID: "ac3ac95b-f97d-458c-a6e6-18981597e05f", Type: "webhooks.test_notification"}); env != want {
			t.Errorf("got %+v, want %+v", env, want)
		}
	})
	t.Run("github's", func(t *testing.T) {
		s := declared(t, `{"name":"gh","prefix":"sha256=","signature_header":"x-hub-signature-256","id_field":"id"}`)
		h := map[string]string{"x-hub-signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"}
		if _, err := senderVerify(t, s, []string{"It's a Secret to Everybody"}, 0, "Hello, World!", h); !errors.Is(err, event.ErrMalformed) {
			t.Errorf("got %v, want the MAC to match and the body to be refused as not JSON", err)
		}
		if _, err := senderVerify(t, s, []string{"not the secret"}, 0, "Hello, World!", h); !errors.Is(err, ErrNoMatch) {
			t.Errorf("wrong secret: got %v, want ErrNoMatch", err)
		}
	})
}

// mac is an HMAC computed independently of the package.
func mac(alg string, secret, msg string) []byte {
	h := sha256.New
	if alg == "sha1" {
		h = sha1.New
	}
	m := hmac.New(h, []byte(secret))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// TestSenderOptions drives each option of a declaration with deliveries
// signed independently of the package: each verified, each way of being
// refused.
func TestSenderOptions(t *testing.T) {
	const now = 1_800_000_000
	ts := strconv.Itoa(now)
	body := `{"id":"ev_1","type":"workflow.completed","data":{"run":{"id":42}}}`
	hexOf := func(alg, secret, msg string) string { return hex.EncodeToString(mac(alg, secret, msg)) }
	b64Of := func(alg, secret, msg string) string { return base64.StdEncoding.EncodeToString(mac(alg, secret, msg)) }
	n8n := `{"name":"n8n","prefix":"sha256=","signature_header":"x-n8n-signature","timestamp_header":"x-n8n-timestamp","id_header":"x-n8n-delivery",` +
		`"template":"{timestamp}.{id}.{body}","type_field":"type"}`
	good := map[string]string{"x-n8n-signature": "sha256=" + hexOf("sha256", "k", ts+".d-1."+body), "x-n8n-timestamp": ts, "x-n8n-delivery": "d-1"}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range good {
			h[a] = b
		}
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	for _, tc := range []struct {
		name    string
		decl    string
		secrets []string
		at      int64
		body    string
		headers map[string]string
		wantID  string
		wantTyp string
		want    error
	}{
		{"n8n: signed id and timestamp", n8n, []string{"k"}, now, body, good, "d-1", "workflow.completed", nil},
		{"n8n: rotation, the key second", n8n, []string{"new", "k"}, now, body, good, "d-1", "workflow.completed", nil},
		{"n8n: wrong secret", n8n, []string{"other"}, now, body, good, "", "", ErrNoMatch},
		{"n8n: the id changed", n8n, []string{"k"}, now, body, with("x-n8n-delivery", "d-2"), "", "", ErrNoMatch},
		{"n8n: the timestamp changed", n8n, []string{"k"}, now, body, with("x-n8n-timestamp", strconv.Itoa(now+1)), "", "", ErrNoMatch},
		{"n8n: the body changed", n8n, []string{"k"}, now, body + " ", good, "", "", ErrNoMatch},
		{"n8n: at the tolerance", n8n, []string{"k"}, now + 300, body, good, "d-1", "workflow.completed", nil},
		{"n8n: stale", n8n, []string{"k"}, now + 301, body, good, "", "", ErrTooOld},
		{"n8n: at the future skew", n8n, []string{"k"}, now - 60, body, good, "d-1", "workflow.completed", nil},
		{"n8n: future", n8n, []string{"k"}, now - 61, body, good, "", "", ErrTooNew},
		{"n8n: no signature", n8n, []string{"k"}, now, body, with("x-n8n-signature", ""), "", "", ErrMissingSignature},
		{"n8n: no prefix", n8n, []string{"k"}, now, body, with("x-n8n-signature", strings.TrimPrefix(good["x-n8n-signature"], "sha256=")), "", "", ErrMalformedSignature},
		{"n8n: not hex", n8n, []string{"k"}, now, body, with("x-n8n-signature", "sha256=zz"), "", "", ErrMalformedSignature},
		{"n8n: a SHA-1's length", n8n, []string{"k"}, now, body, with("x-n8n-signature", "sha256="+hexOf("sha1", "k", ts+".d-1."+body)), "", "", ErrMalformedSignature},
		{"n8n: no timestamp", n8n, []string{"k"}, now, body, with("x-n8n-timestamp", ""), "", "", ErrMalformedSignature},
		{"n8n: timestamp not seconds", n8n, []string{"k"}, now, body, with("x-n8n-timestamp", "soon"), "", "", ErrMalformedSignature},
		{"n8n: no id header", n8n, []string{"k"}, now, body, with("x-n8n-delivery", ""), "", "", event.ErrMissingID},
		{
			"n8n: no type", n8n, []string{"k"}, now, `{"id":"ev_1"}`,
			with("x-n8n-signature", "sha256="+hexOf("sha256", "k", ts+".d-1."+`{"id":"ev_1"}`)), "", "", event.ErrMissingID,
		},
		{
			"n8n: not JSON", n8n, []string{"k"}, now, `oops`,
			with("x-n8n-signature", "sha256="+hexOf("sha256", "k", ts+".d-1.oops")), "", "", event.ErrMalformed,
		},
		{
			"body only, hex, the id a nested number, no type field", `{"name":"svc","signature_header":"x-sig","id_field":"data.run.id"}`, []string{"k"}, now, body,
			map[string]string{"X-Sig": hexOf("sha256", "k", body)}, "42", "svc", nil,
		},
		{
			"upper-case hex", `{"name":"svc","signature_header":"x-sig","id_field":"id"}`, []string{"k"}, now, body,
			map[string]string{"x-sig": strings.ToUpper(hexOf("sha256", "k", body))}, "ev_1", "svc", nil,
		},
		{
			"the id field missing", `{"name":"svc","signature_header":"x-sig","id_field":"event_id"}`, []string{"k"}, now, body,
			map[string]string{"x-sig": hexOf("sha256", "k", body)}, "", "", event.ErrMissingID,
		},
		{
			"a JSON array", `{"name":"svc","signature_header":"x-sig","id_field":"id"}`, []string{"k"}, now, `[1]`,
			map[string]string{"x-sig": hexOf("sha256", "k", `[1]`)}, "", "", event.ErrMalformed,
		},
		{
			"sha1, base64", `{"name":"old","algorithm":"sha1","encoding":"base64","signature_header":"x-sig","id_field":"id","type_field":"type"}`, []string{"k"}, now, body,
			map[string]string{"x-sig": b64Of("sha1", "k", body)}, "ev_1", "workflow.completed", nil,
		},
		{
			"sha1 refuses a SHA-256", `{"name":"old","algorithm":"sha1","encoding":"base64","signature_header":"x-sig","id_field":"id"}`, []string{"k"}, now, body,
			map[string]string{"x-sig": b64Of("sha256", "k", body)}, "", "", ErrMalformedSignature,
		},
		{
			"base64 refuses hex", `{"name":"b","encoding":"base64","signature_header":"x-sig","id_field":"id"}`, []string{"k"}, now, body,
			map[string]string{"x-sig": hexOf("sha256", "k", body)}, "", "", ErrMalformedSignature,
		},
		{
			"a timestamp, the id the body's: Slack's shape", `{"name":"slackish","prefix":"v0=","signature_header":"x-sig","timestamp_header":"x-ts","template":"v0:{timestamp}:{body}","id_field":"id"}`,
			[]string{"k"}, now, body, map[string]string{"x-sig": "v0=" + hexOf("sha256", "k", "v0:"+ts+":"+body), "x-ts": ts}, "ev_1", "slackish", nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := senderVerify(t, declared(t, tc.decl), tc.secrets, tc.at, tc.body, tc.headers)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err == nil && (env.ID != tc.wantID || env.Type != tc.wantTyp) {
				t.Errorf("got id %q type %q, want %q %q", env.ID, env.Type, tc.wantID, tc.wantTyp)
			}
		})
	}
}

// TestSenderDeclarations: what a declaration may say, and what is
// refused at boot with a reason, an unsigned id header first.
func TestSenderDeclarations(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string // want: "" is accepted, else a part of the error
	}{
		{"none", ``, ""},
		{"an empty list", `[]`, ""},
		{"the least", `[{"name":"svc","signature_header":"x-sig","id_field":"id"}]`, ""},
		{"two", `[{"name":"a","signature_header":"x-sig","id_field":"id"},{"name":"b","signature_header":"x-sig","id_field":"id"}]`, ""},
		{"an unsigned id header", `[{"name":"svc","signature_header":"x-sig","id_header":"x-id"}]`, "id_header x-id is not signed"},
		{"an unsigned id header beside a timestamp", `[{"name":"svc","signature_header":"x-sig","id_header":"x-id","timestamp_header":"x-ts","template":"{timestamp}.{body}"}]`, "is not signed"},
		{"an unsigned timestamp", `[{"name":"svc","signature_header":"x-sig","timestamp_header":"x-ts","id_field":"id"}]`, "timestamp_header x-ts is not signed"},
		{"{timestamp} without its header", `[{"name":"svc","signature_header":"x-sig","template":"{timestamp}.{body}","id_field":"id"}]`, "timestamp_header is required"},
		{"{id} without its header", `[{"name":"svc","signature_header":"x-sig","template":"{id}.{body}","id_field":"id"}]`, "id_header is required"},
		{"both ids", `[{"name":"svc","signature_header":"x-sig","template":"{id}.{body}","id_header":"x-id","id_field":"id"}]`, "want one"},
		{"no id", `[{"name":"svc","signature_header":"x-sig"}]`, "no id"},
		{"no body in the template", `[{"name":"svc","signature_header":"x-sig","template":"{id}","id_header":"x-id"}]`, "{body} is required"},
		{"the body twice", `[{"name":"svc","signature_header":"x-sig","template":"{body}{body}","id_field":"id"}]`, "{body} twice"},
		{"an unknown placeholder", `[{"name":"svc","signature_header":"x-sig","template":"{url}{body}","id_field":"id"}]`, "unknown placeholder {url}"},
		{"a stray brace", `[{"name":"svc","signature_header":"x-sig","template":"{{body}","id_field":"id"}]`, "stray brace"},
		{"no signature header", `[{"name":"svc","id_field":"id"}]`, "signature_header is required"},
		{"a header name with a space", `[{"name":"svc","signature_header":"x sig","id_field":"id"}]`, "not a header name"},
		{"md5", `[{"name":"svc","algorithm":"md5","signature_header":"x-sig","id_field":"id"}]`, "want sha256 or sha1"},
		{"base32", `[{"name":"svc","encoding":"base32","signature_header":"x-sig","id_field":"id"}]`, "want hex or base64"},
		{"an empty path segment", `[{"name":"svc","signature_header":"x-sig","id_field":"data..id"}]`, "want a field name"},
		{"a provider's name", `[{"name":"github","signature_header":"x-sig","id_field":"id"}]`, "is a provider's"},
		{"stripe", `[{"name":"stripe","signature_header":"x-sig","id_field":"id"}]`, "is a provider's"},
		{"a name with a dash", `[{"name":"my-n8n","signature_header":"x-sig","id_field":"id"}]`, "lower-case letters"},
		{"an upper-case name", `[{"name":"N8N","signature_header":"x-sig","id_field":"id"}]`, "lower-case letters"},
		{"the same name twice", `[{"name":"a","signature_header":"x-sig","id_field":"id"},{"name":"a","signature_header":"x-sig","id_field":"id"}]`, "a second sender named"},
		{"a misspelt field", `[{"name":"svc","signature_heder":"x-sig","id_field":"id"}]`, "unknown field"},
		{"not an array", `{"name":"svc"}`, "not a JSON array"},
		{"text after", `[] []`, "text after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSenders(tc.doc)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want it accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	s := declared(t, `{"name":"svc","signature_header":"X-Sig","id_field":"id"}`)
	if s.Algorithm != "sha256" || s.Encoding != "hex" || s.Template != "{body}" || s.SignatureHeader != "x-sig" {
		t.Errorf("defaults: got %+v", s)
	}
}

// TestSenderSignIsVerified: what a sender's Spec signs (and stamps, when
// the id is the body's) its verifier accepts, under each id source.
func TestSenderSignIsVerified(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, decl := range []string{
		`{"name":"a","prefix":"sha256=","signature_header":"x-sig","timestamp_header":"x-ts","id_header":"x-id","template":"{timestamp}.{id}.{body}","type_field":"type"}`,
		`{"name":"b","algorithm":"sha1","encoding":"base64","signature_header":"x-sig","id_field":"meta.id","type_field":"type"}`,
	} {
		s := declared(t, decl)
		t.Run(s.Name, func(t *testing.T) {
			spec := s.Spec()
			body, id := []byte(`{"type":"workflow.completed"}`), "id-1"
			if spec.Stamp != nil {
				var err error
				if body, id, err = spec.Stamp(body, id); err != nil {
					t.Fatal(err)
				}
			}
			h, err := spec.Sign("k", Delivery{ID: id, Body: body, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if err := spec.Check(Request{Body: body, Headers: h}); err != nil {
				t.Errorf("Check: %v", err)
			}
			v, err := newOf(spec, []string{"k"}, Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			env, err := verify(v, body, h)
			if err != nil || env.ID != "id-1" || env.Type != "workflow.completed" {
				t.Errorf("got %+v, %v; want id-1 workflow.completed", env, err)
			}
			// A key to claim exactly when no time is signed: then the
			// claim, kept for good, outlives the record.
			out, err := v.Verify(t.Context(), Request{Body: body, Headers: h})
			if err != nil || (out.ReplayKey == "") != (s.TimestampHeader != "") {
				t.Errorf("replay key %q, %v; want one exactly when no timestamp is signed (timestamp header %q)", out.ReplayKey, err, s.TimestampHeader)
			}
		})
	}
}

// TestSenderTemplatesSeparateTheirParts: a template is refused at cold
// start unless every two placeholders are separated by text that holds
// no ASCII letter or digit, so that one signed message splits into its
// timestamp, id and body one way only.
func TestSenderTemplatesSeparateTheirParts(t *testing.T) {
	for _, tc := range []struct {
		name, template, want string // want: "" is accepted, else a part of the error
	}{
		{"the body alone", `{body}`, ""},
		{"text before the body", `https://example.com/hook{body}`, ""},
		{"n8n's shape", `{timestamp}.{id}.{body}`, ""},
		{"svix's shape", `{id}.{timestamp}.{body}`, ""},
		{"slack's shape", `v0:{timestamp}:{body}`, ""},
		{"the id after the body", `{body}|{id}`, ""},
		{"a longer separator", `{timestamp}::{id}--{body}`, ""},
		{"the id against the body", `{id}{body}`, "nothing between {id} and {body}"},
		{"the timestamp against the body", `{timestamp}{body}`, "nothing between {timestamp} and {body}"},
		{"the body against the id", `{body}{id}`, "nothing between {body} and {id}"},
		{"the timestamp against the id", `{timestamp}{id}.{body}`, "nothing between {timestamp} and {id}"},
		{"a digit between", `{timestamp}1{body}`, `"1" between {timestamp} and {body} holds a letter or digit`},
		{"a letter between", `{id}x{body}`, `"x" between {id} and {body} holds a letter or digit`},
		{"a letter in a longer separator", `{timestamp}.{id}.v1.{body}`, `".v1." between {id} and {body} holds a letter or digit`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decl := `[{"name":"svc","signature_header":"x-sig","template":"` + tc.template + `"`
			if strings.Contains(tc.template, "{timestamp}") {
				decl += `,"timestamp_header":"x-ts"`
			}
			if strings.Contains(tc.template, "{id}") {
				decl += `,"id_header":"x-id"`
			} else {
				decl += `,"id_field":"id"`
			}
			_, err := ParseSenders(decl + `}]`)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("got %v, want it accepted", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestSenderForgeryByShiftingBytes builds the forgery: one captured
// delivery, its bytes shifted between the id and the body so that the
// signed message is the same, presented as a new event. A template with
// nothing between {id} and {body} is refused at cold start; with a
// separator, an id holding one of its bytes is refused as malformed, and
// so is the shift.
func TestSenderForgeryByShiftingBytes(t *testing.T) {
	const now = 1_800_000_000
	ts := strconv.Itoa(now)
	t.Run("no separator", func(t *testing.T) {
		doc := `[{"name":"svc","signature_header":"x-sig","template":"{id}{body}","id_header":"x-id"}]`
		if _, err := ParseSenders(doc); err == nil {
			t.Fatalf("a template with nothing between {id} and {body} was accepted: the capture below verifies as a new event")
		}
	})
	s := declared(t, `{"name":"n8n","signature_header":"x-sig","timestamp_header":"x-ts","id_header":"x-id","template":"{timestamp}.{id}.{body}"}`)
	// The capture: event d-1, whose body holds the separator.
	body := `{"note":"a.b"}`
	sig := hex.EncodeToString(mac("sha256", "k", ts+".d-1."+body))
	env, err := senderVerify(t, s, []string{"k"}, now, body, map[string]string{"x-sig": sig, "x-ts": ts, "x-id": "d-1"})
	if err != nil || env.ID != "d-1" {
		t.Fatalf("the capture: got %+v, %v; want it verified as d-1", env, err)
	}
	// The forgery: the body's bytes up to its "." moved into the id.
	cut := strings.Index(body, ".")
	forgedID, forgedBody := "d-1."+body[:cut], body[cut+1:]
	if ts+"."+forgedID+"."+forgedBody != ts+".d-1."+body {
		t.Fatal("the forgery does not sign the same message")
	}
	env, err = senderVerify(t, s, []string{"k"}, now, forgedBody, map[string]string{"x-sig": sig, "x-ts": ts, "x-id": forgedID})
	if !errors.Is(err, event.ErrMalformed) {
		t.Fatalf("the forgery: got %+v, %v; want it refused as malformed (an id holding the separator)", env, err)
	}
	if Outcome(err) != Outcome(event.ErrMalformed) {
		t.Errorf("the forgery's outcome: got %s, want %s, as any malformed delivery", Outcome(err), Outcome(event.ErrMalformed))
	}
	if err := s.Spec().Check(Request{Body: []byte(forgedBody), Headers: map[string]string{"x-sig": sig, "x-ts": ts, "x-id": forgedID}}); !errors.Is(err, event.ErrMalformed) {
		t.Errorf("Check of the forgery: got %v, want it malformed before any secret", err)
	}
	t.Run("a UTF-8 separator, byte by byte", func(t *testing.T) {
		// "→" is E2 86 92, "€" E2 82 AC: an id holding "€" holds the
		// separator's first byte, so the split would not be unique.
		u := declared(t, `{"name":"u","signature_header":"x-sig","id_header":"x-id","template":"{id}→{body}"}`)
		msg := "a€b→" + body
		_, err := senderVerify(t, u, []string{"k"}, now, body, map[string]string{"x-sig": hex.EncodeToString(mac("sha256", "k", msg)), "x-id": "a€b"})
		if !errors.Is(err, event.ErrMalformed) {
			t.Errorf("an id sharing a byte with a UTF-8 separator: got %v, want malformed", err)
		}
	})
}

package provider

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// stripeBody is formatted as Stripe sends events: indented by two spaces,
// no trailing newline.
const stripeBody = `{
  "id": "evt_1",
  "object": "event",
  "type": "invoice.paid",
  "data": {
    "object": {
      "id": "in_1",
      "description": "Plan <Pro> & more",
      "lines": []
    }
  }
}`

// diagnoseCase is a delivery, the secrets it is checked with (diagnoseSecret
// when nil) and what Diagnose must say about it.
type diagnoseCase struct {
	name      string
	payload   []byte
	header    string
	secrets   []string
	want      Problem
	alter     string // substring of Alteration
	message   string // substring of Message
	note      string // substring of one of Notes
	secretIdx int
}

const diagnoseSecret = "whsec_right"

// diagnoseNow is the clock of the Diagnose tests.
var diagnoseNow = time.Unix(1_700_000_000, 0)

func diagnoseCases() []diagnoseCase {
	now := diagnoseNow
	body := []byte(stripeBody)
	secret := diagnoseSecret
	sign := func(b []byte, at time.Time) string { return SignStripe(b, secret, at) }
	minified := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1","description":"Plan <Pro> & more","lines":[]}}}`)
	fourSpaces := bytes.ReplaceAll(body, []byte("\n  "), []byte("\n    "))
	withNewline := append(bytes.Clone(body), '\n')
	crlf := bytes.ReplaceAll(body, []byte("\n"), []byte("\r\n"))
	escaped := bytes.ReplaceAll(
		bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("<"), []byte(`\u003c`)), []byte(">"), []byte(`\u003e`)),
		[]byte("&"),
		[]byte(`\u0026`),
	)
	b64 := []byte(base64.StdEncoding.EncodeToString(body))

	return []diagnoseCase{
		{name: "valid", payload: body, header: sign(body, now.Add(-12*time.Second)), want: ProblemNone, message: "signed 12s ago", secretIdx: 0},
		{
			name:      "valid with the second secret",
			payload:   body,
			header:    sign(body, now),
			secrets:   []string{"whsec_old", secret},
			want:      ProblemNone,
			message:   "secret 2",
			secretIdx: 1,
		},
		{
			name:      "header pasted with its name",
			payload:   body,
			header:    "Stripe-Signature: " + sign(body, now),
			want:      ProblemMalformedHeader,
			message:   `pair 1 is "Stripe-Signature: t=`,
			secretIdx: -1,
		},
		{
			name:      "space after a comma",
			payload:   body,
			header:    strings.Replace(sign(body, now), ",", ", ", 1),
			want:      ProblemMalformedHeader,
			message:   "pair 2 contains whitespace",
			secretIdx: -1,
		},
		{name: "whitespace around the header", payload: body, header: " " + sign(body, now) + "\t", want: ProblemNone, secretIdx: 0},
		{
			name:      "a second timestamp",
			payload:   body,
			header:    "t=1700000000," + sign(body, now.Add(-time.Hour)),
			want:      ProblemMalformedHeader,
			message:   "more than one t= timestamp (pairs 1 and 2)",
			secretIdx: -1,
		},
		{name: "trailing comma", payload: body, header: sign(body, now) + ",", want: ProblemMalformedHeader, message: "pair 3 is empty", secretIdx: -1},
		{name: "no header", payload: body, header: "  ", want: ProblemMissingHeader, secretIdx: -1},
		{
			name:      "garbage header",
			payload:   body,
			header:    "garbage",
			want:      ProblemMalformedHeader,
			message:   `pair 1 is not one key=value; pair 1 is "garbage"`,
			secretIdx: -1,
		},
		{
			name:      "no timestamp",
			payload:   body,
			header:    "v1=" + strings.Repeat("ab", 32),
			want:      ProblemMalformedHeader,
			message:   "no t= timestamp.",
			secretIdx: -1,
		},
		{
			name:      "timestamp not a number",
			payload:   body,
			header:    "t=yesterday,v1=" + strings.Repeat("ab", 32),
			want:      ProblemMalformedHeader,
			message:   "not a Unix time",
			secretIdx: -1,
		},
		{name: "signature not hex", payload: body, header: "t=1700000000,v1=zz", want: ProblemMalformedHeader, message: "64 hex digits", secretIdx: -1},
		{name: "only a v0 signature", payload: body, header: "t=1700000000,v0=" + strings.Repeat("ab", 32), want: ProblemNoSignature, secretIdx: -1},
		{
			name:      "wrong secret",
			payload:   body,
			header:    SignStripe(body, "whsec_other", now),
			want:      ProblemWrongSecret,
			message:   "not this endpoint's",
			secretIdx: -1,
		},
		{
			name:      "wrong secret, and stale",
			payload:   body,
			header:    SignStripe(body, "whsec_other", now.Add(-time.Hour)),
			want:      ProblemWrongSecret,
			note:      "signed 1h0m0s ago",
			secretIdx: -1,
		},
		{
			name:      "an API key as the secret",
			payload:   body,
			header:    sign(body, now),
			secrets:   []string{"sk_test_123"},
			want:      ProblemWrongSecret,
			note:      "secret 1 does not start with whsec_",
			secretIdx: -1,
		},
		{
			name:      "no secret",
			payload:   body,
			header:    sign(body, now),
			secrets:   []string{" "},
			want:      ProblemWrongSecret,
			message:   "no signing secret",
			secretIdx: -1,
		},
		{
			name:      "stale",
			payload:   body,
			header:    sign(body, now.Add(-2*time.Hour-5*time.Minute)),
			want:      ProblemStaleTimestamp,
			message:   "signed 2h5m0s ago, more than the 5m0s tolerance",
			secretIdx: 0,
		},
		{name: "future", payload: body, header: sign(body, now.Add(3*time.Minute)), want: ProblemFutureTimestamp, message: "signed 3m0s ahead", secretIdx: 0},
		{
			name:      "two signatures",
			payload:   body,
			header:    sign(body, now) + ",v1=" + strings.Split(SignStripe(body, "whsec_other", now), "v1=")[1],
			want:      ProblemNone,
			note:      "2 v1 signatures",
			secretIdx: 0,
		},
		{
			name:      "trailing newline added",
			payload:   withNewline,
			header:    sign(body, now),
			want:      ProblemBodyAltered,
			alter:     "a trailing newline was added",
			message:   "changed by something between Stripe and you",
			secretIdx: 0,
		},
		{
			name:      "trailing newline removed",
			payload:   body,
			header:    sign(withNewline, now),
			want:      ProblemBodyAltered,
			alter:     "the trailing newline was removed",
			secretIdx: 0,
		},
		{name: "LF to CRLF", payload: crlf, header: sign(body, now), want: ProblemBodyAltered, alter: "from LF to CRLF", secretIdx: 0},
		{name: "CRLF to LF", payload: body, header: sign(crlf, now), want: ProblemBodyAltered, alter: "from CRLF to LF", secretIdx: 0},
		{name: "minified", payload: minified, header: sign(body, now), want: ProblemBodyAltered, alter: "without whitespace", secretIdx: 0},
		{name: "re-indented", payload: fourSpaces, header: sign(body, now), want: ProblemBodyAltered, alter: "different indentation", secretIdx: 0},
		{
			name:      "byte-order mark",
			payload:   append([]byte("\xef\xbb\xbf"), body...),
			header:    sign(body, now),
			want:      ProblemBodyAltered,
			alter:     "byte-order mark",
			secretIdx: 0,
		},
		{name: "HTML escaped", payload: escaped, header: sign(body, now), want: ProblemBodyAltered, alter: `\u003c`, secretIdx: 0},
		{
			name:      "minified and a newline added",
			payload:   append(bytes.Clone(minified), '\n'),
			header:    sign(body, now),
			want:      ProblemBodyAltered,
			alter:     "a trailing newline was added, and the JSON was re-serialized",
			secretIdx: 0,
		},
		{name: "altered and stale", payload: withNewline, header: sign(body, now.Add(-time.Hour)), want: ProblemBodyAltered, note: "also stale", secretIdx: 0},
		{name: "base64", payload: b64, header: sign(body, now), want: ProblemBase64Body, alter: "base64", message: "isBase64Encoded", secretIdx: 0},
		{name: "base64 with a newline", payload: append(bytes.Clone(b64), '\n'), header: sign(body, now), want: ProblemBase64Body, secretIdx: 0},
		{
			name:      "base64 of a body with CRLF",
			payload:   []byte(base64.StdEncoding.EncodeToString(crlf)),
			header:    sign(body, now),
			want:      ProblemBase64Body,
			alter:     "base64-encoded, and its line endings",
			secretIdx: 0,
		},
		{
			name:      "changed beyond repair",
			payload:   bytes.Replace(body, []byte("evt_1"), []byte("evt_2"), 1),
			header:    sign(body, now),
			want:      ProblemWrongSecret,
			secretIdx: -1,
		},
	}
}

func TestDiagnose(t *testing.T) {
	now := diagnoseNow
	for _, tc := range diagnoseCases() {
		t.Run(tc.name, func(t *testing.T) {
			secrets := tc.secrets
			if secrets == nil {
				secrets = []string{diagnoseSecret}
			}
			d := DiagnoseStripe(tc.payload, tc.header, secrets, Options{Now: func() time.Time { return now }})
			if d.Problem != tc.want {
				t.Fatalf("problem: got %s (%s), want %s", d.Problem, d.Message, tc.want)
			}
			if d.Valid != (tc.want == ProblemNone) {
				t.Errorf("valid: got %v for %s", d.Valid, d.Problem)
			}
			if d.Secret != tc.secretIdx {
				t.Errorf("secret: got %d, want %d", d.Secret, tc.secretIdx)
			}
			if !strings.Contains(d.Alteration, tc.alter) {
				t.Errorf("alteration: got %q, want it to contain %q", d.Alteration, tc.alter)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message: got %q, want it to contain %q", d.Message, tc.message)
			}
			if tc.note != "" && !strings.Contains(strings.Join(d.Notes, "\n"), tc.note) {
				t.Errorf("notes: got %q, want one containing %q", d.Notes, tc.note)
			}
			if d.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

// TestDiagnoseAgreesWithVerify: whatever Diagnose explains, Verify decides
// the same way, for every case of TestDiagnose and a few more.
func TestDiagnoseAgreesWithVerify(t *testing.T) {
	now := diagnoseNow
	body := []byte(stripeBody)
	cases := diagnoseCases()
	for i, c := range []struct {
		payload []byte
		header  string
	}{
		{body, SignStripe(body, "whsec_b", now)},
		{body, ""},
		{body, "t=1"},
		{body, "t=x,v1=00"},
		{body, "t=1700000000,v0=" + strings.Repeat("ab", 32)},
		{body, SignStripe(body, "whsec_c", now)},
		{append(bytes.Clone(body), '\n'), SignStripe(body, "whsec_a", now)},
		{[]byte(base64.StdEncoding.EncodeToString(body)), SignStripe(body, "whsec_a", now)},
		{body, SignStripe(body, "whsec_a", now.Add(-301*time.Second))},
		{body, SignStripe(body, "whsec_a", now.Add(61*time.Second))},
		{body, SignStripe(body, "whsec_a", now.Add(-300*time.Second))},
		{body, "t=1700000000," + SignStripe(body, "whsec_a", now.Add(-time.Hour))},
		{body, SignStripe(body, "whsec_a", time.Unix(now.Unix()+1<<40, 0))},
	} {
		cases = append(cases, diagnoseCase{name: fmt.Sprintf("extra %d", i), payload: c.payload, header: c.header, secrets: []string{"whsec_a", "whsec_b"}})
	}
	opts := Options{Now: func() time.Time { return now }}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			secrets := c.secrets
			if secrets == nil {
				secrets = []string{diagnoseSecret}
			}
			d := DiagnoseStripe(c.payload, c.header, secrets, opts)
			v, err := New(Stripe, secrets, opts)
			if err != nil {
				// No receiver runs without a secret; Diagnose must not
				// call such a delivery valid either.
				if d.Valid {
					t.Errorf("no usable secret: Diagnose says valid")
				}
				return
			}
			got := stripeVerify(v, c.payload, c.header)
			want := d.Problem.Err()
			if !errors.Is(got, want) || (want == nil) != (got == nil) || d.Valid != (got == nil) {
				t.Errorf("Diagnose says %s (valid=%v), Verify says %v", d.Problem, d.Valid, got)
			}
		})
	}
}

// BenchmarkDiagnose: a valid delivery costs one HMAC per secret; a wrong
// secret costs every undo, alone and in pairs (the worst case).
func BenchmarkDiagnose(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	// About 2.6 KB of valid JSON, like a real event, so the JSON undos run.
	body := bytes.Replace([]byte(stripeBody), []byte("Plan <Pro> & more"), bytes.Repeat([]byte("x"), 2400), 1)
	opts := Options{Now: func() time.Time { return now }}
	for _, bc := range []struct {
		name   string
		header string
	}{
		{"valid", SignStripe(body, "whsec_right", now)},
		{"wrong_secret", SignStripe(body, "whsec_other", now)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				DiagnoseStripe(body, bc.header, []string{"whsec_right"}, opts)
			}
		})
	}
}

package signature

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Problem names what is wrong with a delivery's signature. The values are
// stable: inboxctl verify --json prints them.
type Problem string

// The problems Diagnose tells apart.
const (
	// ProblemNone: the delivery verifies.
	ProblemNone Problem = "none"
	// ProblemMissingHeader: there is no Stripe-Signature header.
	ProblemMissingHeader Problem = "missing_header"
	// ProblemMalformedHeader: the header is not "t=<unix>,v1=<hex>,...".
	ProblemMalformedHeader Problem = "malformed_header"
	// ProblemNoSignature: the header carries no v1 signature.
	ProblemNoSignature Problem = "no_v1_signature"
	// ProblemWrongSecret: no v1 signature is valid for any secret given,
	// even after undoing the body changes Diagnose knows.
	ProblemWrongSecret Problem = "wrong_secret"
	// ProblemStaleTimestamp: the signature is valid but older than the
	// tolerance.
	ProblemStaleTimestamp Problem = "stale_timestamp"
	// ProblemFutureTimestamp: the signature is valid but its timestamp is
	// further ahead of the clock than the allowed skew.
	ProblemFutureTimestamp Problem = "future_timestamp"
	// ProblemBodyAltered: the body verifies only after undoing a change
	// that something between the provider and the receiver made to it.
	ProblemBodyAltered Problem = "body_altered"
	// ProblemBase64Body: the body is the base64 encoding of a payload that
	// verifies (an API Gateway isBase64Encoded body used without decoding).
	ProblemBase64Body Problem = "base64_body"
)

// Diagnosis explains whether a delivery verifies and, if not, exactly why.
type Diagnosis struct {
	// Valid is true when Verify would accept the delivery.
	Valid   bool
	Problem Problem
	// Message says what was found and what to do next, in a few sentences.
	Message string
	// Timestamp is the header's t= (zero when there is none); Age is how
	// long before the clock's now it was (negative when ahead).
	Timestamp time.Time
	Age       time.Duration
	// Signatures counts the header's v1 signatures.
	Signatures int
	// Secret is the index of the secret that verified the (possibly
	// restored) body, or -1.
	Secret int
	// Alteration describes the change made to the body, for
	// ProblemBodyAltered and ProblemBase64Body.
	Alteration string
	// Notes are secondary findings worth an operator's attention.
	Notes []string
}

// undo reverses one kind of change that proxies, frameworks and copy-paste
// make to a body. It returns the restored candidate, or ok=false when the
// change cannot have happened to this body.
type undo struct {
	// change describes the alteration, as "something ...": "a trailing
	// newline was added".
	change string
	base64 bool
	fn     func(body []byte) (restored []byte, ok bool)
}

var undos = []undo{
	{change: "the body is base64-encoded", base64: true, fn: func(b []byte) ([]byte, bool) {
		s := strings.TrimSpace(string(b))
		if len(s) < 4 {
			return nil, false
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if d, err := enc.DecodeString(s); err == nil {
				return d, true
			}
		}
		return nil, false
	}},
	{change: "a byte-order mark was added at the start", fn: func(b []byte) ([]byte, bool) {
		return bytes.CutPrefix(b, []byte("\xef\xbb\xbf"))
	}},
	{change: "a trailing newline was added", fn: func(b []byte) ([]byte, bool) {
		if r, ok := bytes.CutSuffix(b, []byte("\r\n")); ok {
			return r, true
		}
		return bytes.CutSuffix(b, []byte("\n"))
	}},
	{change: "whitespace was added around it", fn: func(b []byte) ([]byte, bool) {
		r := bytes.TrimSpace(b)
		return r, len(r) != len(b)
	}},
	{change: "the trailing newline was removed", fn: func(b []byte) ([]byte, bool) {
		if bytes.HasSuffix(b, []byte("\n")) {
			return nil, false
		}
		return append(bytes.Clone(b), '\n'), true
	}},
	{change: "its line endings were converted from LF to CRLF", fn: func(b []byte) ([]byte, bool) {
		if !bytes.Contains(b, []byte("\r\n")) {
			return nil, false
		}
		return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), true
	}},
	{change: "its line endings were converted from CRLF to LF", fn: func(b []byte) ([]byte, bool) {
		if !bytes.Contains(b, []byte("\n")) || bytes.Contains(b, []byte("\r\n")) {
			return nil, false
		}
		return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")), true
	}},
	{change: "the JSON was re-serialized without whitespace (parsed and encoded again)", fn: func(b []byte) ([]byte, bool) {
		if bytes.Contains(b, []byte("\n")) || !json.Valid(b) {
			return nil, false
		}
		// Stripe sends its JSON indented by two spaces.
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") != nil {
			return nil, false
		}
		return out.Bytes(), true
	}},
	{change: "the JSON was re-serialized with different indentation (parsed and pretty-printed again)", fn: func(b []byte) ([]byte, bool) {
		// Surrounding whitespace is another change, undone separately.
		if !bytes.Contains(b, []byte("\n")) || len(bytes.TrimSpace(b)) != len(b) || !json.Valid(b) {
			return nil, false
		}
		var compact, out bytes.Buffer
		if json.Compact(&compact, b) != nil || json.Indent(&out, compact.Bytes(), "", "  ") != nil {
			return nil, false
		}
		return out.Bytes(), !bytes.Equal(out.Bytes(), b)
	}},
	{change: `the JSON was re-encoded with <, > and & escaped as \u003c, \u003e, \u0026`, fn: func(b []byte) ([]byte, bool) {
		if !bytes.Contains(b, []byte(`\u00`)) {
			return nil, false
		}
		r := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
		return []byte(r), r != string(b)
	}},
}

// header is a parsed Stripe-Signature header.
type header struct {
	timestamp int64
	v1        [][]byte
}

func parseHeader(h string) (header, string) {
	h = strings.TrimSpace(h)
	// Accept a header pasted whole, name included.
	if name, rest, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(name), "stripe-signature") {
		h = strings.TrimSpace(rest)
	}
	var out header
	haveT := false
	for part := range strings.SplitSeq(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return out, fmt.Sprintf("%q is not a key=value pair", strings.TrimSpace(part))
		}
		switch k {
		case "t":
			sec, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return out, fmt.Sprintf("t=%q is not a Unix time in seconds", v)
			}
			out.timestamp, haveT = sec, true
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return out, fmt.Sprintf("v1=%q is not a hex HMAC-SHA256 (64 hex digits)", v)
			}
			out.v1 = append(out.v1, sig)
		}
	}
	if !haveT {
		return out, "it has no t= timestamp"
	}
	return out, ""
}

// matches returns the index of the secret for which one of h's v1
// signatures is valid over body, or -1.
func (h header) matches(body []byte, secrets []string) int {
	for i, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(strconv.FormatInt(h.timestamp, 10)))
		mac.Write([]byte("."))
		mac.Write(body)
		want := mac.Sum(nil)
		for _, sig := range h.v1 {
			if hmac.Equal(sig, want) {
				return i
			}
		}
	}
	return -1
}

// Diagnose checks a captured delivery against secrets as Verify would and,
// when it fails, says exactly why: no or a malformed header, no v1
// signature, a stale or future timestamp, a body changed on its way (it
// tries to undo the usual changes: a trailing newline added or removed, LF
// and CRLF, a byte-order mark, JSON minified or re-indented, HTML
// characters escaped, a base64-encoded body, and pairs of these), or a
// secret for which no signature is valid. opts bounds the timestamp as in
// Verify. Diagnose is an operator's tool: it does more work than Verify and
// says more than a receiver may ever tell a sender.
func Diagnose(payload []byte, sigHeader string, secrets []string, opts Options) Diagnosis {
	d := Diagnosis{Secret: -1}
	tolerance, skew, now := opts.Tolerance, opts.FutureSkew, opts.Now
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if skew <= 0 {
		skew = DefaultFutureSkew
	}
	if now == nil {
		now = time.Now
	}
	var clean []string
	for i, s := range secrets {
		if s = strings.TrimSpace(s); s != "" {
			clean = append(clean, s)
			if !strings.HasPrefix(s, "whsec_") {
				d.Notes = append(d.Notes, fmt.Sprintf("secret %d does not start with whsec_: signing secrets do (an sk_ or rk_ key is an API key, not a signing secret)", i+1))
			}
		}
	}

	if strings.TrimSpace(sigHeader) == "" {
		d.Problem = ProblemMissingHeader
		d.Message = "there is no Stripe-Signature header: capture the request's headers along with its body (a proxy or load balancer may be dropping the header)"
		return d
	}
	h, bad := parseHeader(sigHeader)
	if bad != "" {
		d.Problem = ProblemMalformedHeader
		d.Message = "the Stripe-Signature header is malformed: " + bad + `. Stripe sends "t=<unix time>,v1=<hex signature>": pass the header's value exactly as received`
		return d
	}
	d.Timestamp = time.Unix(h.timestamp, 0).UTC()
	d.Age = now().Sub(d.Timestamp)
	d.Signatures = len(h.v1)
	if len(h.v1) == 0 {
		d.Problem = ProblemNoSignature
		d.Message = "the Stripe-Signature header has no v1 signature (only other schemes): the endpoint must receive v1 signatures, which every Stripe webhook endpoint sends"
		return d
	}
	if len(h.v1) > 1 {
		d.Notes = append(d.Notes, fmt.Sprintf("the header has %d v1 signatures: Stripe signs with every active secret of the endpoint while a rolled secret is still valid", len(h.v1)))
	}
	if len(clean) == 0 {
		d.Problem = ProblemWrongSecret
		d.Message = "no signing secret was given: pass the endpoint's whsec_... secret"
		return d
	}

	ageText := func() string {
		if d.Age >= 0 {
			return fmt.Sprintf("signed %s ago", d.Age.Round(time.Second))
		}
		return fmt.Sprintf("signed %s ahead of this clock", (-d.Age).Round(time.Second))
	}
	if i := h.matches(payload, clean); i >= 0 {
		d.Secret = i
		switch {
		case d.Age > tolerance:
			d.Problem = ProblemStaleTimestamp
			d.Message = fmt.Sprintf("the signature is valid (secret %d), but it was %s, more than the %s tolerance: a receiver rejects it as a possible replay. "+
				"If this is a live delivery, check the receiver's clock (NTP) and queues in front of it; a delivery captured earlier is always stale", i+1, ageText(), tolerance)
		case -d.Age > skew:
			d.Problem = ProblemFutureTimestamp
			d.Message = fmt.Sprintf("the signature is valid (secret %d), but it was %s, more than the %s allowed: the receiver's clock is behind (or the sender's ahead); check NTP", i+1, ageText(), skew)
		default:
			d.Valid = true
			d.Problem = ProblemNone
			d.Message = fmt.Sprintf("the signature matches secret %d; %s", i+1, ageText())
		}
		return d
	}

	// Try to undo one change, then two, in every order.
	type attempt struct {
		body  []byte
		steps []undo
	}
	var tries []attempt
	for _, u := range undos {
		if b, ok := u.fn(payload); ok {
			tries = append(tries, attempt{b, []undo{u}})
		}
	}
	for _, first := range tries[:len(tries):len(tries)] {
		for _, u := range undos {
			if u.change == first.steps[0].change {
				continue
			}
			if b, ok := u.fn(first.body); ok {
				tries = append(tries, attempt{b, []undo{first.steps[0], u}})
			}
		}
	}
	for _, a := range tries {
		i := h.matches(a.body, clean)
		if i < 0 {
			continue
		}
		d.Secret = i
		var changes []string
		b64 := false
		for _, s := range a.steps {
			changes = append(changes, s.change)
			b64 = b64 || s.base64
		}
		d.Alteration = strings.Join(changes, ", and ")
		if b64 {
			d.Problem = ProblemBase64Body
			d.Message = fmt.Sprintf("the body was changed by something between Stripe and you: %s; decoded, it verifies with secret %d. "+
				"Decode the body before verifying (API Gateway sets isBase64Encoded for bodies it encodes)", d.Alteration, i+1)
		} else {
			d.Problem = ProblemBodyAltered
			d.Message = fmt.Sprintf("the body was changed by something between Stripe and you: %s; undone, it verifies with secret %d. "+
				"Verify the raw request body, byte for byte as received, before any framework parses, re-encodes or logs it", d.Alteration, i+1)
		}
		if d.Age > tolerance {
			d.Notes = append(d.Notes, fmt.Sprintf("the timestamp is also stale: %s, more than the %s tolerance", ageText(), tolerance))
		}
		return d
	}

	d.Problem = ProblemWrongSecret
	d.Message = fmt.Sprintf("no v1 signature is valid for the %d secret(s) given. Either the secret is not this endpoint's "+
		"(each endpoint has its own whsec_..., test and live mode differ, and `stripe listen` prints its own), "+
		"or the body was changed in a way that cannot be undone (keys reordered, characters re-escaped): "+
		"verify the raw body exactly as received", len(clean))
	if d.Age > tolerance {
		d.Notes = append(d.Notes, fmt.Sprintf("the timestamp is %s, beyond the %s tolerance, so it would fail even with the right secret", ageText(), tolerance))
	}
	return d
}

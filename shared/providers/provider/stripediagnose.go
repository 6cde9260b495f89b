package provider

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Problem names what is wrong with a delivery's signature. The values are
// stable: inboxctl verify --json prints them.
type Problem string

// The problems DiagnoseStripe tells apart.
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
	// even after undoing the body changes DiagnoseStripe knows.
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

// Err returns the error Stripe's Verify returns for the signature
// (compare with errors.Is) of a delivery in which DiagnoseStripe finds p:
// nil for ProblemNone, and ErrNoMatch for every signature that does not
// verify as received, whatever DiagnoseStripe could undo to make it
// verify. inboxctl verify and the receiver must agree on this class for
// every delivery.
func (p Problem) Err() error {
	switch p {
	case ProblemNone:
		return nil
	case ProblemMissingHeader:
		return ErrMissingSignature
	case ProblemMalformedHeader:
		return ErrMalformedSignature
	case ProblemStaleTimestamp:
		return ErrTooOld
	case ProblemFutureTimestamp:
		return ErrTooNew
	}
	return ErrNoMatch
}

// Diagnosis explains whether a delivery verifies and, if not, exactly why.
type Diagnosis struct {
	// Valid is true when Stripe's Verify would accept the signature.
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

// DiagnoseStripe checks a captured Stripe delivery against secrets as
// Stripe's Verify checks its signature and, when it fails, says exactly
// why: no or a malformed header, no v1 signature, a stale or future
// timestamp, a body changed on its way (it tries to undo the usual
// changes: a trailing newline added or removed, LF and CRLF, a byte-order
// mark, JSON minified or re-indented, HTML characters escaped, a
// base64-encoded body, and pairs of these), or a secret for which no
// signature is valid. opts bounds the timestamp as in Verify. It is an
// operator's tool (inboxctl verify): it does more work than Verify and says
// more than a receiver may ever tell a sender. Whatever it says, Verify
// decides the signature the same way (Problem.Err); the envelope Verify
// reads next is not its concern.
//
// Its steps, in order: the secrets given (notes on ones that are not
// signing secrets), the header, the signature over the body as received
// and its age, then the body changes it knows how to undo.
func DiagnoseStripe(payload []byte, header string, secrets []string, opts Options) Diagnosis {
	dg := diagnosis{d: Diagnosis{Secret: -1}, w: opts.window()}
	dg.secrets(secrets)
	h, ok := dg.header(header)
	if !ok {
		return dg.d
	}
	if len(dg.clean) == 0 {
		dg.d.Problem = ProblemWrongSecret
		dg.d.Message = "no signing secret was given: pass the endpoint's whsec_... secret"
		return dg.d
	}
	i, err := h.match(payload, dg.clean)
	switch {
	case err != nil:
		dg.d.Problem, dg.d.Message = ProblemMalformedHeader, err.Error()
	case i >= 0:
		dg.verdict(h, i)
	case !dg.undo(h, payload):
		dg.wrongSecret(h)
	}
	return dg.d
}

// diagnosis is DiagnoseStripe's state between its steps.
type diagnosis struct {
	d     Diagnosis
	w     window
	clean []string // the secrets given, trimmed, blanks dropped
}

// secrets keeps the secrets given, noting those that are not signing
// secrets.
func (dg *diagnosis) secrets(secrets []string) {
	for i, s := range secrets {
		if s = strings.TrimSpace(s); s != "" {
			dg.clean = append(dg.clean, s)
			if !strings.HasPrefix(s, "whsec_") {
				dg.d.Notes = append(
					dg.d.Notes,
					fmt.Sprintf("secret %d does not start with whsec_: signing secrets do (an sk_ or rk_ key is an API key, not a signing secret)", i+1),
				)
			}
		}
	}
}

// header parses the header as Verify does. It returns false, with the
// problem found, when there is none to check signatures against: missing,
// malformed, or without a v1 signature.
func (dg *diagnosis) header(value string) (StripeHeader, bool) {
	h, err := ParseStripeHeader(value)
	var bad *StripeHeaderError
	switch {
	case errors.Is(err, ErrMissingSignature):
		dg.d.Problem = ProblemMissingHeader
		dg.d.Message = "there is no Stripe-Signature header: capture the request's headers along with its body (a proxy or load balancer may be dropping the header)"
		return h, false
	case errors.As(err, &bad):
		dg.d.Problem = ProblemMalformedHeader
		dg.d.Message = "the Stripe-Signature header is malformed: " + bad.Reason + quotePair(
			value,
			bad.Pair,
		) + `. Stripe sends "t=<unix time>,v1=<64 hex digits>", one t= and no spaces: pass the header's value exactly as received`
		if bad.Replay {
			dg.d.Message += ". Two timestamps are what two Stripe-Signature headers joined with a comma look like, or a timestamp put in front of a captured header to replay it: the receiver rejects both"
		}
		return h, false
	case err != nil:
		dg.d.Problem, dg.d.Message = ProblemMalformedHeader, err.Error()
		return h, false
	}
	dg.d.Timestamp = time.Unix(h.Timestamp, 0).UTC()
	dg.d.Age = age(dg.w.now(), h.Timestamp)
	dg.d.Signatures = h.Signatures
	if h.Signatures == 0 {
		dg.d.Problem = ProblemNoSignature
		dg.d.Message = "the Stripe-Signature header has no v1 signature (only other schemes): the endpoint must receive v1 signatures, which every Stripe webhook endpoint sends"
		return h, false
	}
	if h.Signatures > 1 {
		dg.d.Notes = append(
			dg.d.Notes,
			fmt.Sprintf(
				"the header has %d v1 signatures: Stripe signs with every active secret of the endpoint while a rolled secret is still valid",
				h.Signatures,
			),
		)
	}
	return h, true
}

// ageText says when h was signed, in seconds as the checks count (d.Age
// saturates).
func (dg *diagnosis) ageText(h StripeHeader) string {
	ageSeconds := dg.w.now().Unix() - h.Timestamp
	if ageSeconds >= 0 {
		return fmt.Sprintf("signed %s ago", seconds(ageSeconds))
	}
	return fmt.Sprintf("signed %s ahead of this clock", seconds(-ageSeconds))
}

// verdict is the answer for a body that verifies as received with secret
// i: valid, or stale, or from the future.
func (dg *diagnosis) verdict(h StripeHeader, i int) {
	dg.d.Secret = i
	tolerance, skew := time.Duration(dg.w.tolerance)*time.Second, time.Duration(dg.w.skew)*time.Second
	ageErr := dg.w.check(h.Timestamp)
	switch {
	case errors.Is(ageErr, ErrTooOld):
		dg.d.Problem = ProblemStaleTimestamp
		dg.d.Message = fmt.Sprintf(
			"the signature is valid (secret %d), but it was %s, more than the %s tolerance: a receiver rejects it as a possible replay. "+
				"If this is a live delivery, check the receiver's clock (NTP) and queues in front of it; a delivery captured earlier is always stale",
			i+1,
			dg.ageText(h),
			tolerance,
		)
	case errors.Is(ageErr, ErrTooNew):
		dg.d.Problem = ProblemFutureTimestamp
		dg.d.Message = fmt.Sprintf(
			"the signature is valid (secret %d), but it was %s, more than the %s allowed: the receiver's clock is behind (or the sender's ahead); check NTP",
			i+1,
			dg.ageText(h),
			skew,
		)
		if h.Timestamp-dg.w.now().Unix() > 24*60*60 {
			dg.d.Notes = append(
				dg.d.Notes,
				"no clock is that far off: whoever signed this timestamp holds the secret (a test tool, or a leaked secret: roll it)",
			)
		}
	default:
		dg.d.Valid = true
		dg.d.Problem = ProblemNone
		dg.d.Message = fmt.Sprintf("the signature matches secret %d; %s", i+1, dg.ageText(h))
	}
}

// attempt is a body with some changes undone.
type attempt struct {
	body  []byte
	steps []undo
}

// attempts are payload with one change undone, then two, in every order.
func attempts(payload []byte) []attempt {
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
	return tries
}

// undo looks for changes that, undone, make the body verify, and reports
// whether it found one (the problem is then the change).
func (dg *diagnosis) undo(h StripeHeader, payload []byte) bool {
	for _, a := range attempts(payload) {
		i, err := h.match(a.body, dg.clean)
		if err != nil || i < 0 {
			continue
		}
		dg.d.Secret = i
		var changes []string
		b64 := false
		for _, s := range a.steps {
			changes = append(changes, s.change)
			b64 = b64 || s.base64
		}
		dg.d.Alteration = strings.Join(changes, ", and ")
		if b64 {
			dg.d.Problem = ProblemBase64Body
			dg.d.Message = fmt.Sprintf("the body was changed by something between Stripe and you: %s; decoded, it verifies with secret %d. "+
				"Decode the body before verifying (API Gateway sets isBase64Encoded for bodies it encodes)", dg.d.Alteration, i+1)
		} else {
			dg.d.Problem = ProblemBodyAltered
			dg.d.Message = fmt.Sprintf("the body was changed by something between Stripe and you: %s; undone, it verifies with secret %d. "+
				"Verify the raw request body, byte for byte as received, before any framework parses, re-encodes or logs it", dg.d.Alteration, i+1)
		}
		if errors.Is(dg.w.check(h.Timestamp), ErrTooOld) {
			dg.d.Notes = append(
				dg.d.Notes,
				fmt.Sprintf("the timestamp is also stale: %s, more than the %s tolerance", dg.ageText(h), time.Duration(dg.w.tolerance)*time.Second),
			)
		}
		return true
	}
	return false
}

// wrongSecret is the answer when nothing makes the body verify.
func (dg *diagnosis) wrongSecret(h StripeHeader) {
	dg.d.Problem = ProblemWrongSecret
	dg.d.Message = fmt.Sprintf("no v1 signature is valid for the %d secret(s) given. Either the secret is not this endpoint's "+
		"(each endpoint has its own whsec_..., test and live mode differ, and `stripe listen` prints its own), "+
		"or the body was changed in a way that cannot be undone (keys reordered, characters re-escaped): "+
		"verify the raw body exactly as received", len(dg.clean))
	if errors.Is(dg.w.check(h.Timestamp), ErrTooOld) {
		dg.d.Notes = append(
			dg.d.Notes,
			fmt.Sprintf(
				"the timestamp is %s, beyond the %s tolerance, so it would fail even with the right secret",
				dg.ageText(h),
				time.Duration(dg.w.tolerance)*time.Second,
			),
		)
	}
}

// age is how long before now ts was (negative when ahead), saturated at
// what a time.Duration holds (about 292 years either way): for display only,
// the checks compare seconds.
func age(now time.Time, ts int64) time.Duration {
	const limit = int64(1<<63-1) / int64(time.Second)
	n := now.Unix()
	switch {
	case ts > n && ts-n >= limit:
		return -time.Duration(limit) * time.Second
	case ts < n && n-ts >= limit:
		return time.Duration(limit) * time.Second
	}
	return time.Duration(n-ts)*time.Second + time.Duration(now.Nanosecond())
}

// quotePair returns "; pair n is "..."" for an operator's message (never a
// receiver's log), shortened, or "" when n is 0.
func quotePair(header string, n int) string {
	if n <= 0 {
		return ""
	}
	pairs := strings.Split(strings.Trim(header, " \t"), ",")
	if n > len(pairs) {
		return ""
	}
	p := pairs[n-1]
	if len(p) > 80 {
		p = p[:80] + "..."
	}
	return fmt.Sprintf("; pair %d is %q", n, p)
}

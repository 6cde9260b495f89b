package provider

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// SendersVariable is the variable holding the configured senders: a JSON
// array of Sender (ParseSenders), for any sender without a provider of its
// own (an n8n workflow, an internal service).
const SendersVariable = "GENERIC_SENDERS"

// Sender is one configured sender: a scheme declared in configuration,
// not code. It signs an HMAC (SHA-256, or SHA-1 where a sender offers
// only that) over its body, or over Template (the timestamp, the id and
// the body with text between them), in hex or base64 with an optional
// prefix, in the header SignatureHeader. Its Spec serves it on
// /webhooks/<Name>, like any provider's, under the same Keyring, window
// and dedupe.
type Sender struct {
	// Name is the sender's name: /webhooks/<name>, the prefix of its
	// records' keys, its variables' (<NAME>_WEBHOOK_SECRET,
	// <NAME>_EVENT_TYPES). Lower-case letters, digits and "_", starting
	// with a letter; not a provider's name.
	Name string `json:"name"`
	// Algorithm is "sha256" (the default) or "sha1".
	Algorithm string `json:"algorithm,omitempty"`
	// Encoding is how the MAC is written: "hex" (the default, either case)
	// or "base64" (standard, padded).
	Encoding string `json:"encoding,omitempty"`
	// Prefix comes before the encoded MAC in the header ("sha256="), if
	// any: a header without it is malformed.
	Prefix string `json:"prefix,omitempty"`
	// SignatureHeader is the header holding the signature.
	SignatureHeader string `json:"signature_header"`
	// TimestampHeader is the header holding the signed time, in Unix
	// seconds, if the sender signs one: Template must then hold
	// {timestamp}, and the receiver's window applies (SIGNATURE_TOLERANCE
	// behind, SIGNATURE_FUTURE_SKEW ahead), as for Stripe.
	TimestampHeader string `json:"timestamp_header,omitempty"`
	// Template is what is signed: {body} (the default) or text holding
	// {body} once and, each at most once, {timestamp} and {id}, such as
	// "{timestamp}.{body}" or "{id}.{timestamp}.{body}".
	Template string `json:"template,omitempty"`
	// IDHeader is the header holding the event's id, which the signature
	// must cover (Template's {id}): an unsigned id would let anyone who
	// captured one delivery replay it under a fresh id.
	IDHeader string `json:"id_header,omitempty"`
	// IDField is the body's field holding the event's id ("id", or a path
	// such as "data.event_id"): the body is signed, so is it. Exactly one
	// of IDHeader and IDField is set.
	IDField string `json:"id_field,omitempty"`
	// TypeField is the body's field holding the event's type ("type", or
	// a path); without one every event's type is the sender's name.
	TypeField string `json:"type_field,omitempty"`

	parts []templatePart
	// idSeparators is every byte of the template's text beside {id}
	// between it and another placeholder: an id holding one is refused
	// (parseTemplate says why).
	idSeparators string
	hash         func() hash.Hash
}

// templatePart is a piece of a Sender's Template: literal text or one of
// the delivery's signed parts.
type templatePart struct {
	literal string
	field   string // "", "timestamp", "id" or "body"
}

var (
	senderName  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)
	headerName  = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	placeholder = regexp.MustCompile(`\{[^{}]*\}`)
)

// ParseSenders reads the JSON array of senders doc holds (SendersVariable)
// and checks each (Sender.Validate): the names unique, none a provider's.
// Blank doc is no sender. Its errors name the sender and the field, so a
// cold start fails with what to fix.
func ParseSenders(doc string) ([]Sender, error) {
	if strings.TrimSpace(doc) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	var out []Sender
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("provider: %s: not a JSON array of senders: %w", SendersVariable, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("provider: %s: text after the array", SendersVariable)
	}
	seen := map[string]bool{}
	var errs []error
	for i := range out {
		if err := out[i].Validate(); err != nil {
			errs = append(errs, fmt.Errorf("provider: %s: sender %d: %w", SendersVariable, i+1, err))
			continue
		}
		if seen[out[i].Name] {
			errs = append(errs, fmt.Errorf("provider: %s: sender %d: a second sender named %q", SendersVariable, i+1, out[i].Name))
		}
		seen[out[i].Name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Validate checks s and fills its defaults: it fails on anything the
// receiver could not verify as declared, and on a declaration that would
// trust what no signature covers (an id header or a timestamp header
// outside Template).
func (s *Sender) Validate() error {
	if !senderName.MatchString(s.Name) {
		return fmt.Errorf("name %q: want lower-case letters, digits and _, starting with a letter (at most 40)", s.Name)
	}
	if Known(s.Name) {
		return fmt.Errorf("name %q is a provider's: that provider is configured by its own secret", s.Name)
	}
	switch s.Algorithm {
	case "", "sha256":
		s.Algorithm, s.hash = "sha256", sha256.New
	case "sha1":
		s.hash = sha1.New
	default:
		return fmt.Errorf("sender %s: algorithm %q: want sha256 or sha1", s.Name, s.Algorithm)
	}
	switch s.Encoding {
	case "":
		s.Encoding = "hex"
	case "hex", "base64":
	default:
		return fmt.Errorf("sender %s: encoding %q: want hex or base64", s.Name, s.Encoding)
	}
	for field, h := range map[string]*string{"signature_header": &s.SignatureHeader, "timestamp_header": &s.TimestampHeader, "id_header": &s.IDHeader} {
		*h = strings.ToLower(strings.TrimSpace(*h))
		if *h != "" && !headerName.MatchString(*h) {
			return fmt.Errorf("sender %s: %s %q is not a header name", s.Name, field, *h)
		}
	}
	if s.SignatureHeader == "" {
		return fmt.Errorf("sender %s: signature_header is required", s.Name)
	}
	if s.Template == "" {
		s.Template = "{body}"
	}
	parts, err := parseTemplate(s.Template)
	if err != nil {
		return fmt.Errorf("sender %s: template %q: %w", s.Name, s.Template, err)
	}
	s.parts = parts
	s.idSeparators = idSeparators(parts)
	signs := func(f string) bool {
		return slices.ContainsFunc(parts, func(p templatePart) bool { return p.field == f })
	}
	switch {
	case signs("timestamp") && s.TimestampHeader == "":
		return fmt.Errorf("sender %s: the template signs {timestamp}: timestamp_header is required", s.Name)
	case s.TimestampHeader != "" && !signs("timestamp"):
		return fmt.Errorf("sender %s: timestamp_header %s is not signed: the template must hold {timestamp}, or the window bounds nothing", s.Name, s.TimestampHeader)
	case signs("id") && s.IDHeader == "":
		return fmt.Errorf("sender %s: the template signs {id}: id_header is required", s.Name)
	case s.IDHeader != "" && !signs("id"):
		return fmt.Errorf(
			"sender %s: id_header %s is not signed: an unsigned id is not trusted; put {id} in the template, or take the id from the body (id_field)",
			s.Name,
			s.IDHeader,
		)
	case s.IDHeader != "" && s.IDField != "":
		return fmt.Errorf("sender %s: id_header and id_field both set: want one", s.Name)
	case s.IDHeader == "" && s.IDField == "":
		return fmt.Errorf("sender %s: no id: set id_header (signed in the template) or id_field (the body's)", s.Name)
	}
	for field, p := range map[string]string{"id_field": s.IDField, "type_field": s.TypeField} {
		if p != "" && slices.Contains(strings.Split(p, "."), "") {
			return fmt.Errorf("sender %s: %s %q: want a field name, or names joined by dots", s.Name, field, p)
		}
	}
	return nil
}

// parseTemplate splits a Template into literals and placeholders: {body}
// exactly once, {timestamp} and {id} at most once each, and every two
// placeholders separated by text holding no ASCII letter or digit.
//
// That separation makes one signed message one delivery, so a captured
// one cannot be presented again with bytes moved between its id and its
// body (a new id, a new event). Proof: read the message from both ends
// toward {body}, the one part that may hold any byte. Going right from
// the start, each part before {body} is followed by a separator S:
// {timestamp} is decimal digits (read refuses others) and S's first byte
// is not one, so it ends at the first non-digit; {id} holds no byte of S
// (read refuses such an id), so it ends at the first occurrence of S's
// first byte. Going left from the end, the parts after {body} end the
// same way at S's last byte. Every boundary is fixed by the bytes, and
// {body} is what lies between.
func parseTemplate(t string) ([]templatePart, error) {
	var parts []templatePart
	count := map[string]int{}
	rest := t
	for rest != "" {
		loc := placeholder.FindStringIndex(rest)
		if loc == nil {
			parts = append(parts, templatePart{literal: rest})
			break
		}
		if loc[0] > 0 {
			parts = append(parts, templatePart{literal: rest[:loc[0]]})
		}
		f := rest[loc[0]+1 : loc[1]-1]
		switch f {
		case "timestamp", "id", "body":
		default:
			return nil, fmt.Errorf("unknown placeholder {%s}: want {timestamp}, {id} or {body}", f)
		}
		if count[f]++; count[f] > 1 {
			return nil, fmt.Errorf("{%s} twice", f)
		}
		parts = append(parts, templatePart{field: f})
		rest = rest[loc[1]:]
	}
	if count["body"] != 1 {
		return nil, errors.New("{body} is required: the body must be signed")
	}
	for i, p := range parts {
		if strings.ContainsAny(p.literal, "{}") {
			return nil, fmt.Errorf("a stray brace in %q", p.literal)
		}
		if p.field == "" || i+1 == len(parts) {
			continue
		}
		next := parts[i+1]
		if next.field != "" {
			return nil, fmt.Errorf("nothing between {%s} and {%s}: bytes could move from one to the other under the same signature; put text such as \".\" between them", p.field, next.field)
		}
		if i+2 < len(parts) && strings.IndexFunc(next.literal, isASCIIAlnum) >= 0 {
			return nil, fmt.Errorf("%q between {%s} and {%s} holds a letter or digit, which a timestamp or an id can hold: separate placeholders with punctuation, such as \".\"", next.literal, p.field, parts[i+2].field)
		}
	}
	return parts, nil
}

func isASCIIAlnum(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// idSeparators is the text beside {id} in parts, between it and another
// placeholder (parseTemplate checked the parts).
func idSeparators(parts []templatePart) string {
	var seps strings.Builder
	for i, p := range parts {
		if p.field != "id" {
			continue
		}
		if i >= 2 && parts[i-2].field != "" {
			seps.WriteString(parts[i-1].literal)
		}
		if i+2 < len(parts) && parts[i+2].field != "" {
			seps.WriteString(parts[i+1].literal)
		}
	}
	return seps.String()
}

// Spec is s's row, as a provider's: what the Keyring, the receiver and
// inboxctl send use. s must have passed Validate.
func (s Sender) Spec() Spec {
	spec := Spec{
		Name:  s.Name,
		Check: func(r Request) error { _, err := s.read(r); return err },
		New:   func(secrets []string, opts Options) (Verifier, error) { return s.verifier(secrets, opts), nil },
		Sign:  s.sign,
	}
	if s.IDField != "" {
		spec.Stamp = stampField(strings.Split(s.IDField, ".")...)
	}
	return spec
}

// Sample returns body as the sender would send it as a fresh event named
// id of type typ: the id in IDField and the type in TypeField, where the
// declaration puts them in the body; and the id the inbox records it
// under. For inboxctl send and tests, which sign one sample for any
// declaration.
func (s Sender) Sample(body []byte, id, typ string) ([]byte, string, error) {
	var err error
	if s.IDField != "" {
		if body, err = setField(body, id, strings.Split(s.IDField, ".")...); err != nil {
			return nil, "", err
		}
	}
	if s.TypeField != "" {
		if body, err = setField(body, typ, strings.Split(s.TypeField, ".")...); err != nil {
			return nil, "", err
		}
	}
	return body, id, nil
}

// senderHeaders is what a sender's delivery's headers say.
type senderHeaders struct {
	mac      []byte
	ts, id   string
	signedAt int64
}

// read reads the signature, the timestamp and the id header, as
// declared, without any secret.
func (s Sender) read(r Request) (senderHeaders, error) {
	var h senderHeaders
	sig := strings.TrimSpace(r.Header(s.SignatureHeader))
	if sig == "" {
		return h, ErrMissingSignature
	}
	enc, ok := strings.CutPrefix(sig, s.Prefix)
	if !ok {
		return h, fmt.Errorf("%w: no %q prefix", ErrMalformedSignature, s.Prefix)
	}
	var err error
	if s.Encoding == "base64" {
		h.mac, err = base64.StdEncoding.DecodeString(enc)
	} else {
		h.mac, err = hex.DecodeString(enc)
	}
	if err != nil || len(h.mac) != s.hash().Size() {
		return h, fmt.Errorf("%w: not a %s %s MAC", ErrMalformedSignature, s.Encoding, s.Algorithm)
	}
	if s.TimestampHeader != "" {
		h.ts = strings.TrimSpace(r.Header(s.TimestampHeader))
		n, perr := strconv.ParseInt(h.ts, 10, 64)
		if perr != nil || h.ts[0] == '+' || h.ts[0] == '-' {
			return h, fmt.Errorf("%w: %s is not Unix seconds", ErrMalformedSignature, s.TimestampHeader)
		}
		h.signedAt = n
	}
	if s.IDHeader != "" {
		if h.id = strings.TrimSpace(r.Header(s.IDHeader)); h.id == "" {
			return h, event.ErrMissingID
		}
		// parseTemplate's proof needs it, byte by byte (a separator
		// may be UTF-8): such an id could be a captured delivery's bytes
		// moved from its body.
		for i := range len(h.id) {
			if strings.IndexByte(s.idSeparators, h.id[i]) >= 0 {
				return h, fmt.Errorf("%w: %s holds %q, a byte the template puts beside {id}", event.ErrMalformed, s.IDHeader, h.id[i])
			}
		}
	}
	return h, nil
}

// signed is the Template filled in: what the MAC is computed over.
func (s Sender) signed(ts, id string, body []byte) []byte {
	var b bytes.Buffer
	for _, p := range s.parts {
		switch p.field {
		case "timestamp":
			b.WriteString(ts)
		case "id":
			b.WriteString(id)
		case "body":
			b.Write(body)
		default:
			b.WriteString(p.literal)
		}
	}
	return b.Bytes()
}

// sender verifies a configured sender's deliveries under its secrets.
type sender struct {
	s      Sender
	keys   [][]byte
	window window
}

func (s Sender) verifier(secrets []string, opts Options) *sender {
	v := &sender{s: s, window: opts.window()}
	for _, k := range secrets {
		v.keys = append(v.keys, []byte(k))
	}
	return v
}

// Verify checks the MAC under every secret, each in constant time, then
// the signed timestamp against the window, then reads the id (the signed
// header's, or the body's field) and the type (the body's field, or the
// sender's name). Every part it trusts is signed: a replay is its id's
// duplicate, or outside the window. Without a signed timestamp, a capture
// verifies for good, after the event's record has expired too:
// Verified.ReplayKey is then the hash of the signed message, whose claim
// is kept for good, so it stays a replay.
func (v *sender) Verify(_ context.Context, r Request) (Verified, error) {
	h, err := v.s.read(r)
	if err != nil {
		return Verified{}, err
	}
	msg := v.s.signed(h.ts, h.id, r.Body)
	matched := false
	for _, k := range v.keys {
		m := hmac.New(v.s.hash, k)
		m.Write(msg)
		if hmac.Equal(m.Sum(nil), h.mac) {
			matched = true
		}
	}
	if !matched {
		return Verified{}, ErrNoMatch
	}
	if v.s.TimestampHeader != "" {
		if err := v.window.check(h.signedAt); err != nil {
			return Verified{}, err
		}
	}
	env := event.Envelope{ID: h.id, Type: v.s.Name, Created: h.signedAt}
	if v.s.IDField != "" || v.s.TypeField != "" {
		dec := json.NewDecoder(bytes.NewReader(r.Body))
		dec.UseNumber()
		var body any
		if err := dec.Decode(&body); err != nil {
			return Verified{}, fmt.Errorf("%w: %w", event.ErrMalformed, err)
		}
		if _, ok := body.(map[string]any); !ok {
			return Verified{}, fmt.Errorf("%w: the body is not a JSON object", event.ErrMalformed)
		}
		if v.s.IDField != "" {
			env.ID = fieldString(body, v.s.IDField)
		}
		if v.s.TypeField != "" {
			env.Type = fieldString(body, v.s.TypeField)
		}
	}
	if env.ID == "" || env.Type == "" {
		return Verified{}, event.ErrMissingID
	}
	if v.s.TimestampHeader == "" {
		return Verified{Envelope: env, ReplayKey: replayKey(msg)}, nil
	}
	return Verified{Envelope: env}, nil
}

// fieldString is the string or number at the dotted path in a decoded
// JSON value, or "".
func fieldString(v any, path string) string {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

// sign signs d as the sender is declared to: d.ID in the id header when
// it has one (else the body's field holds it: Spec.Stamp), d.Now in the
// timestamp header.
func (s Sender) sign(secret string, d Delivery) (map[string]string, error) {
	ts := strconv.FormatInt(d.Now.Unix(), 10)
	m := hmac.New(s.hash, []byte(secret))
	m.Write(s.signed(ts, d.ID, d.Body))
	sum := m.Sum(nil)
	enc := hex.EncodeToString(sum)
	if s.Encoding == "base64" {
		enc = base64.StdEncoding.EncodeToString(sum)
	}
	out := map[string]string{s.SignatureHeader: s.Prefix + enc}
	if s.TimestampHeader != "" {
		out[s.TimestampHeader] = ts
	}
	if s.IDHeader != "" {
		out[s.IDHeader] = d.ID
	}
	return out, nil
}

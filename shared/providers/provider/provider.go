package provider

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
)

// Verifier verifies one delivery against its raw body and its headers and
// returns what it says. It is the one interface every provider's check
// implements, and so does the Keyring that reads a provider's secrets.
// Its error wraps one of the package's sentinels, event.ErrMalformed or
// event.ErrMissingID, and Outcome names the answer to each.
// Implementations are safe for concurrent use.
type Verifier interface {
	Verify(ctx context.Context, r Request) (Verified, error)
}

// Request is one delivery as it arrived.
type Request struct {
	// Body is the raw body, byte for byte as the provider signed it
	// (decoded when API Gateway passed it in base64).
	Body []byte
	// Headers are the request's headers as API Gateway passes them
	// (lower-cased names; Header finds any case). API Gateway joins a
	// repeated header's values with commas.
	Headers map[string]string
	// Host, Path and Query say where it was posted: API Gateway's domain
	// name, the raw path and the raw query string (no "?"), for the
	// providers that sign the URL (URL).
	Host, Path, Query string
}

// Header returns the request's named header, whatever the case of its
// name.
func (r Request) Header(name string) string { return Header(r.Headers, name) }

// URL is the URL the delivery was posted to, as the sender saw it:
// https://Host Path ?Query.
func (r Request) URL() string {
	u := "https://" + r.Host + r.Path
	if r.Query != "" {
		u += "?" + r.Query
	}
	return u
}

// Verified is what a verified delivery says.
type Verified struct {
	// Envelope is the event the delivery carries: its id, type and,
	// where the provider gives them, its time, account and object.
	Envelope event.Envelope
	// ReplayKey is set when the signature does not cover the event's id,
	// or covers no time: the hex SHA-256 of what names the event among
	// the signed parts (GitHub: the body; Shopify: the topic and the
	// body; Square: the URL and the body). The receiver accepts one event
	// id per key, for good: a claim made longer ago than records are kept
	// is a replay under its own id too, since the record that made it a
	// duplicate has expired (docs/security.md says each provider's
	// window). Empty when a signed timestamp bounds the delivery's age
	// and the signature covers the id.
	ReplayKey string
}

// Errors of Verify besides event.ErrMalformed and event.ErrMissingID. The
// receiver answers each with the same generic 400 (ErrNoSecrets: 503), and
// says which one in its log line and metric (Outcome).
var (
	ErrMissingSignature   = errors.New("provider: no signature header")
	ErrMalformedSignature = errors.New("provider: malformed signature header")
	ErrNoMatch            = errors.New("provider: no signature matches a configured secret")
	ErrTooOld             = errors.New("provider: signed timestamp older than the tolerance")
	ErrTooNew             = errors.New("provider: signed timestamp too far in the future")
	// ErrReplay: the delivery carries a signature made for another one: a
	// Stripe header with a second timestamp, or a body signed once and
	// already accepted as another event (Verified.ReplayKey).
	ErrReplay = errors.New("provider: the signature was made for another delivery")
	// ErrWrongMode: a live event at a test deployment, or the reverse, for
	// the providers whose events say which (Stripe's livemode).
	ErrWrongMode = errors.New("provider: the event's mode is not this deployment's")
	// ErrNoSecrets: the signing secrets cannot be had (their parameter
	// cannot be read, or holds no secret). Nothing is wrong with the
	// delivery: the receiver answers 503 (secrets_unavailable), so the
	// provider retries it.
	ErrNoSecrets = errors.New("provider: the signing secrets cannot be read")
)

// Outcome is the receiver's outcome for a delivery Verify refused with
// err: the one switch from this vocabulary's errors to outcomes
// (docs/outcomes.md). An error it does not know is a signature that did
// not verify.
func Outcome(err error) outcome.Outcome {
	switch {
	case errors.Is(err, ErrNoSecrets):
		return outcome.SecretsUnavailable
	case errors.Is(err, ErrMissingSignature):
		return outcome.RejectedMissingSignature
	// Before ErrMalformedSignature: a Stripe header with a second
	// timestamp is both.
	case errors.Is(err, ErrReplay):
		return outcome.RejectedReplay
	case errors.Is(err, ErrMalformedSignature):
		return outcome.RejectedMalformedSignature
	case errors.Is(err, ErrTooOld):
		return outcome.RejectedStaleTimestamp
	case errors.Is(err, ErrTooNew):
		return outcome.RejectedFutureTimestamp
	case errors.Is(err, ErrWrongMode):
		return outcome.RejectedWrongMode
	case errors.Is(err, ErrWrongEndpoint):
		return outcome.RejectedWrongEndpoint
	case errors.Is(err, event.ErrMissingID):
		return outcome.RejectedMissingID
	case errors.Is(err, event.ErrMalformed):
		return outcome.RejectedMalformed
	}
	return outcome.RejectedSignature
}

// Defaults for Options.
const (
	DefaultTolerance  = 300 * time.Second
	DefaultFutureSkew = 60 * time.Second
)

// Options tune every provider's verifier. Zero values take the defaults.
type Options struct {
	// Tolerance is how old a signed timestamp may be, in whole seconds,
	// for the providers that sign one (Stripe, Standard Webhooks).
	Tolerance time.Duration
	// FutureSkew is how far ahead of the clock a signed timestamp may be,
	// in whole seconds.
	FutureSkew time.Duration
	// Livemode is the mode this deployment serves, for the providers whose
	// events say which: an event of the other mode is ErrWrongMode.
	Livemode bool
	// Settings are one provider's own settings beyond its secrets, by the
	// names its Spec.Settings lists (the URL a sender signs, a configurable
	// sender's header name); the receiver reads each from the variable
	// SettingVariable names.
	Settings map[string]string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Spec is one provider: its row in the table (All).
type Spec struct {
	// Name is the provider's name: /webhooks/{provider}, the prefix of its
	// records' keys, its variables' (GITHUB_WEBHOOK_SECRET, ...).
	Name string
	// Check reads r's signature without any secret and fails as Verify
	// would when no secret can make it verify: no signature header, one
	// that cannot be a signature. The Keyring calls it before it reads
	// the secrets, so such requests cost no read of Parameter Store.
	Check func(r Request) error
	// New returns the provider's verifier for secrets (at least one, each
	// trimmed and non-empty: the current one and, during a rotation, the
	// previous one).
	New func(secrets []string, opts Options) (Verifier, error)
	// Sign returns the headers the provider sends with d, signed with
	// secret: for inboxctl send and for tests, never for checking.
	Sign func(secret string, d Delivery) (map[string]string, error)
	// Stamp, for a provider whose event id is in the body (Paddle's
	// event_id, Square's, LiveKit's id) or made from it (Lemon
	// Squeezy's), returns body as the provider would send it as a fresh
	// event named id, and the id the inbox records it under: for inboxctl
	// send and tests, which send one sample under many ids. Nil when the
	// id is a header's (Delivery.ID).
	Stamp func(body []byte, id string) (stamped []byte, recorded string, err error)
	// Settings names the settings New reads from Options.Settings, if
	// any: what a provider needs beyond its secrets (the notification URL
	// a sender signs with the body, the header a configurable sender
	// signs in).
	Settings []string
}

// SettingVariable is the variable holding provider's setting:
// <PROVIDER>_WEBHOOK_<SETTING> (SQUARE_WEBHOOK_URL for a provider square's
// setting URL).
func SettingVariable(provider, setting string) string {
	return strings.ToUpper(provider) + "_WEBHOOK_" + strings.ToUpper(setting)
}

// All is the table of providers, in the order operators read them.
// Adding a provider is one file holding its Spec and one row here.
var All = []Spec{stripeSpec, githubSpec, shopifySpec, standardSpec, paddleSpec, razorpaySpec, lemonSqueezySpec, squareSpec, liveKitSpec, twilioSpec}

// Names lists the providers' names, in All's order.
var Names = func() []string {
	out := make([]string, len(All))
	for i, s := range All {
		out[i] = s.Name
	}
	return out
}()

// Lookup returns the named provider's Spec.
func Lookup(name string) (Spec, error) {
	for _, s := range All {
		if s.Name == name {
			return s, nil
		}
	}
	return Spec{}, fmt.Errorf("provider: unknown provider %q (want one of %s)", name, strings.Join(Names, ", "))
}

// Known reports whether name is a provider's.
func Known(name string) bool {
	_, err := Lookup(name)
	return err == nil
}

// New returns the verifier of the named provider for secrets (at least
// one; blank entries are dropped).
func New(name string, secrets []string, opts Options) (Verifier, error) {
	spec, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return newOf(spec, secrets, opts)
}

// newOf is New for spec, a provider's or a configured sender's.
func newOf(spec Spec, secrets []string, opts Options) (Verifier, error) {
	clean := cleanSecrets(secrets)
	if len(clean) == 0 {
		return nil, fmt.Errorf("provider %s: no signing secret", spec.Name)
	}
	return spec.New(clean, opts)
}

func cleanSecrets(secrets []string) []string {
	var clean []string
	for _, s := range secrets {
		if s = strings.TrimSpace(s); s != "" {
			clean = append(clean, s)
		}
	}
	return clean
}

// Header returns the named header, whatever the case of its name: API
// Gateway's HTTP API lower-cases names, other integrations may not.
func Header(headers map[string]string, name string) string {
	if v, ok := headers[name]; ok {
		return v
	}
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// window is the accepted range of signed timestamps around the clock's
// now.
type window struct {
	tolerance, skew int64 // seconds
	now             func() time.Time
}

func (o Options) window() window {
	w := window{tolerance: int64(o.Tolerance / time.Second), skew: int64(o.FutureSkew / time.Second), now: o.Now}
	if o.Tolerance <= 0 {
		w.tolerance = int64(DefaultTolerance / time.Second)
	}
	if o.FutureSkew <= 0 {
		w.skew = int64(DefaultFutureSkew / time.Second)
	}
	if w.now == nil {
		w.now = time.Now
	}
	return w
}

// check returns nil when ts (Unix seconds) is inside the window, else
// ErrTooOld or ErrTooNew with the distance. Both sides are compared in
// whole seconds, never as time.Duration values (which saturate about 292
// years out, where a far-future timestamp once looked fresh): now is a
// present-day Unix time and the bounds are at most a time.Duration in
// seconds, so neither now-tolerance nor now+skew can overflow, whatever
// ts is.
func (w window) check(ts int64) error {
	now := w.now().Unix()
	switch {
	case ts < now-w.tolerance:
		return fmt.Errorf("%w: signed %s ago", ErrTooOld, seconds(now-ts))
	case ts > now+w.skew:
		return fmt.Errorf("%w: signed %s ahead", ErrTooNew, seconds(ts-now))
	}
	return nil
}

// seconds formats n seconds as a duration when one can hold it (about 292
// years), else in seconds and years.
func seconds(n int64) string {
	if n >= 0 && n < int64(1<<63-1)/int64(time.Second) {
		return (time.Duration(n) * time.Second).String()
	}
	const year = 31_557_600 // a Julian year, in seconds
	return fmt.Sprintf("%ds (about %d years)", n, n/year)
}

// macs holds HMAC-SHA256 keys and tells whether a MAC matches any of them.
type macs [][]byte

func newMACs(secrets []string) macs {
	m := make(macs, len(secrets))
	for i, s := range secrets {
		m[i] = []byte(s)
	}
	return m
}

// match reports whether got is the HMAC-SHA256 of body under any key. Every
// key is tried, each compared in constant time, so the answer's timing
// says nothing about which key (if any) came close.
func (m macs) match(body, got []byte) bool {
	ok := false
	for _, k := range m {
		h := hmac.New(sha256.New, k)
		h.Write(body)
		if hmac.Equal(h.Sum(nil), got) {
			ok = true
		}
	}
	return ok
}

// replayKey is the hex SHA-256 of parts, each but the last followed by a
// newline (no provider's header value holds one).
func replayKey(parts ...[]byte) string {
	h := sha256.New()
	for i, p := range parts {
		h.Write(p)
		if i < len(parts)-1 {
			h.Write([]byte{'\n'})
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// decodeObject reads body, one JSON object, as a T (a struct) with
// encoding/json, the rule every reader of a payload follows (package
// event). One pass: anything but an object or null fails to decode into a
// struct, and null leaves the pointer nil.
func decodeObject[T any](body []byte) (T, error) {
	var v *T
	if err := json.Unmarshal(body, &v); err != nil {
		var zero T
		return zero, fmt.Errorf("%w: %w", event.ErrMalformed, err)
	}
	if v == nil {
		var zero T
		return zero, fmt.Errorf("%w: top level is null", event.ErrMalformed)
	}
	return *v, nil
}

// stampField returns a Spec.Stamp that sets the body's field at path
// (top level first) to the id (the body's other fields are kept; their order may change).
func stampField(path ...string) func(body []byte, id string) ([]byte, string, error) {
	return func(body []byte, id string) ([]byte, string, error) {
		b, err := setField(body, id, path...)
		return b, id, err
	}
}

// setField returns body with the field at path (top level first) set to
// the string v, creating the objects on the way.
func setField(body []byte, v string, path ...string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, fmt.Errorf("provider: the body is not a JSON object: %v", err)
	}
	var val []byte
	var err error
	if len(path) == 1 {
		val, err = json.Marshal(v)
	} else {
		inner := m[path[0]]
		if len(inner) == 0 || string(inner) == "null" {
			inner = []byte("{}")
		}
		val, err = setField(inner, v, path[1:]...)
	}
	if err != nil {
		return nil, err
	}
	m[path[0]] = val
	return json.Marshal(m)
}

// Stamp returns body as the named provider would send it as a fresh
// event named id, and the id the inbox records it under (Spec.Stamp):
// body and id unchanged when the provider's id is a header's.
func Stamp(name string, body []byte, id string) ([]byte, string, error) {
	spec, err := Lookup(name)
	if err != nil {
		return nil, "", err
	}
	if spec.Stamp == nil {
		return body, id, nil
	}
	return spec.Stamp(body, id)
}

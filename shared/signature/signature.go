package signature

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v81/webhook"
)

// Errors returned by Verify. Callers answer all of them with the same generic
// 400: which check failed is for logs and metrics, never for the sender.
var (
	ErrMissingHeader   = errors.New("signature: no Stripe-Signature header")
	ErrMalformedHeader = errors.New("signature: malformed Stripe-Signature header")
	ErrNoMatch         = errors.New("signature: no v1 signature matches a configured secret")
	ErrTooOld          = errors.New("signature: timestamp older than the tolerance")
	ErrTooNew          = errors.New("signature: timestamp too far in the future")
)

// Defaults for Options.
const (
	DefaultTolerance  = 300 * time.Second
	DefaultFutureSkew = 60 * time.Second
)

// Options tune a Verifier. Zero values take the defaults.
type Options struct {
	// Tolerance is how old a signed timestamp may be (replay protection),
	// in whole seconds.
	Tolerance time.Duration
	// FutureSkew is how far ahead of our clock a timestamp may be, in whole
	// seconds.
	FutureSkew time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// window is the accepted range of timestamps around the clock's now.
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
// seconds: now is a present-day Unix time and the bounds are at most a
// time.Duration in seconds, so neither now-tolerance nor now+skew can
// overflow, whatever ts is.
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

// Verifier checks Stripe-Signature headers against a set of secrets.
// It is safe for concurrent use.
type Verifier struct {
	secrets []string
	window  window
}

// New returns a Verifier that accepts a delivery signed with any of secrets:
// during a rotation both the current and the previous secret are configured.
func New(secrets []string, opts Options) (*Verifier, error) {
	clean := cleanSecrets(secrets)
	if len(clean) == 0 {
		return nil, errors.New("signature: no signing secret configured")
	}
	return &Verifier{secrets: clean, window: opts.window()}, nil
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

// Verify returns nil when header carries a v1 signature of payload made with
// one of the secrets, at a timestamp within the tolerance. payload must be
// the raw body exactly as received.
func (v *Verifier) Verify(payload []byte, header string) error {
	h, err := ParseHeader(header)
	if err != nil {
		return err
	}
	// The signature check first, so that a forged header cannot use the
	// timestamp checks to learn anything.
	i, err := h.match(payload, v.secrets)
	if err != nil {
		return err
	}
	if i < 0 {
		return ErrNoMatch
	}
	return v.window.check(h.Timestamp)
}

// match returns the index of the first secret for which one of h's v1
// signatures is valid over payload, or -1. stripe-go computes and compares
// (hmac.Equal over every v1); ParseHeader has made sure it reads the same
// single t= as h.Timestamp.
func (h Header) match(payload []byte, secrets []string) (int, error) {
	if h.Signatures == 0 {
		return -1, nil
	}
	for i, secret := range secrets {
		err := webhook.ValidatePayloadIgnoringTolerance(payload, h.value, secret)
		if err == nil {
			return i, nil
		}
		if !errors.Is(err, webhook.ErrNoValidSignature) {
			// Cannot happen for a header ParseHeader accepted; if stripe-go
			// ever reads headers differently, refuse rather than guess.
			return -1, &MalformedError{Reason: "stripe-go rejects it: " + err.Error()}
		}
	}
	return -1, nil
}

// Sign returns a Stripe-Signature header for payload signed with secret at t,
// as Stripe would send it. The CLI and tests use it to make deliveries.
func Sign(payload []byte, secret string, t time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
		Payload: payload, Secret: secret, Timestamp: t,
	}).Header
}

// Package signature verifies that a webhook delivery was signed by the
// provider, over the exact bytes received.
//
// Stripe signs "<timestamp>.<raw body>" with HMAC-SHA256 and sends the result
// in the Stripe-Signature header as "t=<unix>,v1=<hex>[,v1=<hex>...]". The
// comparison itself is stripe-go's (hmac.Equal over every v1 signature); this
// package adds what stripe-go leaves out: several secrets at once for
// rotation, a bound on timestamps in the future, and an injectable clock.
//
// Diagnose is the operator's side of the same check (inboxctl verify): given
// a captured delivery it says exactly why it fails, including bodies changed
// on their way by proxies and frameworks, which it detects by undoing the
// usual changes until the signature verifies.
package signature

import (
	"errors"
	"fmt"
	"strconv"
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
	// Tolerance is how old a signed timestamp may be (replay protection).
	Tolerance time.Duration
	// FutureSkew is how far ahead of our clock a timestamp may be.
	FutureSkew time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Verifier checks Stripe-Signature headers against a set of secrets.
// It is safe for concurrent use.
type Verifier struct {
	secrets   []string
	tolerance time.Duration
	skew      time.Duration
	now       func() time.Time
}

// New returns a Verifier that accepts a delivery signed with any of secrets:
// during a rotation both the current and the previous secret are configured.
func New(secrets []string, opts Options) (*Verifier, error) {
	var clean []string
	for _, s := range secrets {
		if s = strings.TrimSpace(s); s != "" {
			clean = append(clean, s)
		}
	}
	if len(clean) == 0 {
		return nil, errors.New("signature: no signing secret configured")
	}
	v := &Verifier{secrets: clean, tolerance: opts.Tolerance, skew: opts.FutureSkew, now: opts.Now}
	if v.tolerance <= 0 {
		v.tolerance = DefaultTolerance
	}
	if v.skew <= 0 {
		v.skew = DefaultFutureSkew
	}
	if v.now == nil {
		v.now = time.Now
	}
	return v, nil
}

// Verify returns nil when header carries a v1 signature of payload made with
// one of the secrets, at a timestamp within the tolerance. payload must be
// the raw body exactly as received.
func (v *Verifier) Verify(payload []byte, header string) error {
	if header == "" {
		return ErrMissingHeader
	}
	ts, err := Timestamp(header)
	if err != nil {
		return err
	}
	matched := false
	for _, secret := range v.secrets {
		// The signature check first, so that a forged header cannot use the
		// timestamp checks to learn anything.
		err := webhook.ValidatePayloadIgnoringTolerance(payload, header, secret)
		if err == nil {
			matched = true
			break
		}
		if !errors.Is(err, webhook.ErrNoValidSignature) {
			return ErrMalformedHeader
		}
	}
	if !matched {
		return ErrNoMatch
	}
	age := v.now().Sub(ts)
	if age > v.tolerance {
		return fmt.Errorf("%w: signed %s ago", ErrTooOld, age.Round(time.Second))
	}
	if -age > v.skew {
		return fmt.Errorf("%w: signed %s ahead", ErrTooNew, (-age).Round(time.Second))
	}
	return nil
}

// Timestamp returns the t= timestamp of a Stripe-Signature header.
func Timestamp(header string) (time.Time, error) {
	rest := header
	for rest != "" {
		var pair string
		pair, rest, _ = strings.Cut(rest, ",")
		k, val, ok := strings.Cut(pair, "=")
		if !ok {
			return time.Time{}, ErrMalformedHeader
		}
		if k == "t" {
			sec, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return time.Time{}, ErrMalformedHeader
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, ErrMalformedHeader
}

// Sign returns a Stripe-Signature header for payload signed with secret at t,
// as Stripe would send it. The CLI and tests use it to make deliveries.
func Sign(payload []byte, secret string, t time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
		Payload: payload, Secret: secret, Timestamp: t,
	}).Header
}

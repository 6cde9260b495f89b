package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v81/webhook"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripesign"
)

// Stripe is Stripe's webhooks (snapshot and thin events, Connect too); its
// name is event.ProviderStripe.
const Stripe = event.ProviderStripe

// headerStripeSignature carries Stripe's signatures (StripeHeader).
const headerStripeSignature = "stripe-signature"

var stripeSpec = Spec{Name: Stripe, Check: checkStripe, New: newStripe, Sign: signStripe}

// stripe verifies Stripe's webhooks. Stripe signs "<timestamp>.<raw body>"
// with HMAC-SHA256, and the body holds the event's id, so no ReplayKey: a
// replay is its id's duplicate, or older than the tolerance. The
// comparison itself is stripe-go's (hmac.Equal over every v1 signature);
// this file adds what stripe-go leaves out: several secrets at once for
// rotation, one strict parse of the header (StripeHeader), a bound on
// timestamps in the future, and an injectable clock. After the signature,
// the envelope (event.DecodeAnyEnvelope: a snapshot event, or an event
// destination's thin event, signed the same way) and its mode: a live event at a test
// deployment, or the reverse, is ErrWrongMode.
type stripe struct {
	secrets  []string
	window   window
	livemode bool
}

func newStripe(secrets []string, opts Options) (Verifier, error) {
	return &stripe{secrets: secrets, window: opts.window(), livemode: opts.Livemode}, nil
}

func checkStripe(r Request) error {
	h, err := ParseStripeHeader(r.Header(headerStripeSignature))
	if err == nil && h.Signatures == 0 {
		return ErrNoMatch
	}
	return err
}

// Verify checks the Stripe-Signature header, then the signed timestamp
// against the window, then reads the envelope and checks its mode.
func (s *stripe) Verify(_ context.Context, r Request) (Verified, error) {
	if err := s.signature(r.Body, r.Header(headerStripeSignature)); err != nil {
		return Verified{}, err
	}
	env, err := event.DecodeAnyEnvelope(r.Body)
	if err != nil {
		return Verified{}, err
	}
	if env.Livemode != s.livemode {
		return Verified{Envelope: env}, fmt.Errorf("%w: livemode is %v", ErrWrongMode, env.Livemode)
	}
	return Verified{Envelope: env}, nil
}

// signature returns nil when header carries a v1 signature of payload
// made with one of the secrets, at a timestamp within the window:
// Stripe's signature alone, which DiagnoseStripe explains.
func (s *stripe) signature(payload []byte, header string) error {
	h, err := ParseStripeHeader(header)
	if err != nil {
		return err
	}
	// The signature check first, so that a forged header cannot use the
	// timestamp checks to learn anything.
	i, err := h.match(payload, s.secrets)
	if err != nil {
		return err
	}
	if i < 0 {
		return ErrNoMatch
	}
	return s.window.check(h.Timestamp)
}

// match returns the index of the first secret for which one of h's v1
// signatures is valid over payload, or -1. stripe-go computes and compares
// (hmac.Equal over every v1); ParseStripeHeader has made sure it reads the
// same single t= as h.Timestamp.
func (h StripeHeader) match(payload []byte, secrets []string) (int, error) {
	if h.Signatures == 0 {
		return -1, nil
	}
	for i, secret := range secrets {
		err := webhook.ValidatePayloadIgnoringTolerance(payload, h.value, secret)
		if err == nil {
			return i, nil
		}
		if !errors.Is(err, webhook.ErrNoValidSignature) {
			// Cannot happen for a header ParseStripeHeader accepted; if
			// stripe-go ever reads headers differently, refuse rather
			// than guess.
			return -1, &StripeHeaderError{Reason: "stripe-go rejects it: " + err.Error()}
		}
	}
	return -1, nil
}

// SignStripe returns a Stripe-Signature header for payload signed with
// secret at t, as Stripe would send it (stripe-go's
// GenerateTestSignedPayload). The CLI, the forward effect and tests use it
// to make deliveries.
func SignStripe(payload []byte, secret string, t time.Time) string {
	return stripesign.Header(payload, secret, t)
}

func signStripe(secret string, d Delivery) (map[string]string, error) {
	return map[string]string{headerStripeSignature: SignStripe(d.Body, secret, d.Now)}, nil
}

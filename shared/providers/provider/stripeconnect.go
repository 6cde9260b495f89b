package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrWrongEndpoint: a Stripe event signed with the secret of the other
// kind of endpoint: a connected account's event (it names an account)
// verified only by a platform endpoint's secret, or a platform event (no
// account) verified only by a Connect endpoint's secret. A Connect
// endpoint receives connected accounts' events only and a platform
// endpoint the platform's own, so either is an event the endpoint whose
// secret signed it cannot have sent: answered 400, stored nowhere.
var ErrWrongEndpoint = errors.New("provider: the event's account does not match the endpoint whose secret signed it")

// StripeEndpoints verifies Stripe deliveries against two sets of secrets
// on one path (POST /webhooks/stripe): the platform endpoint's
// (STRIPE_WEBHOOK_SECRET) and, for a Connect platform, the Connect
// endpoint's (STRIPE_CONNECT_WEBHOOK_SECRET). Each is a Verifier of its
// own (a Keyring: read on first use, rotated as any), so a rotation of
// one never touches the other.
//
// An event that names a connected account (a snapshot event's "account",
// a thin event's "context") must verify with a Connect secret, any other
// with a platform secret; one that verifies only with the other kind's is
// ErrWrongEndpoint. The mode check (Options.Livemode) is each verifier's:
// a Connect endpoint receives both live and test events of its accounts,
// and the deployment's mode still decides.
//
// The account is read from the body before the signature is checked only
// to choose which secrets to try first, so that a Connect platform's
// events do not each fail the platform's secrets (and make their Keyring
// read its parameter again); what decides is the account of the envelope
// the signature covers.
type StripeEndpoints struct {
	// Platform verifies with the platform endpoint's secrets; required.
	Platform Verifier
	// Connect verifies with the Connect endpoint's secrets; nil when the
	// deployment has none (then every event naming an account is
	// refused).
	Connect Verifier
}

// Verify verifies r with the secrets of the endpoint its account names,
// then, when none matches, with the other endpoint's, to tell a forged
// signature (ErrNoMatch) from an event sent to the wrong endpoint
// (ErrWrongEndpoint).
func (e StripeEndpoints) Verify(ctx context.Context, r Request) (Verified, error) {
	connectFirst := e.Connect != nil && peekStripeAccount(r.Body) != ""
	first, second := e.Platform, e.Connect
	if connectFirst {
		first, second = e.Connect, e.Platform
	}
	v, err := first.Verify(ctx, r)
	byConnect := connectFirst
	if errors.Is(err, ErrNoMatch) && second != nil {
		v2, err2 := second.Verify(ctx, r)
		if !errors.Is(err2, ErrNoMatch) {
			// It verified with the other secrets, or they could not be had
			// (ErrNoSecrets: it may well be theirs, so the sender retries),
			// or it failed a check past the signature (mode, envelope).
			v, err, byConnect = v2, err2, !connectFirst
		}
	}
	if err != nil {
		return v, err
	}
	switch account := v.Envelope.Account; {
	case account != "" && !byConnect:
		return v, fmt.Errorf("%w: an event of account %s signed with a platform endpoint's secret", ErrWrongEndpoint, account)
	case account == "" && byConnect:
		return v, fmt.Errorf("%w: a platform event (no account) signed with a Connect endpoint's secret", ErrWrongEndpoint)
	}
	return v, nil
}

// peekStripeAccount reads the connected account a Stripe event names, not
// yet verified: a snapshot event's "account", a thin event's "context".
// Empty when there is none, or the body does not decode (the verifier then
// says why).
func peekStripeAccount(body []byte) string {
	var p struct {
		Account string `json:"account"`
		Context string `json:"context"`
	}
	if json.Unmarshal(body, &p) != nil {
		return ""
	}
	if p.Account != "" {
		return p.Account
	}
	return p.Context
}

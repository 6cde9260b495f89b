package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"time"
)

// Delivery is what Sign needs to sign a delivery as its provider would.
type Delivery struct {
	// ID is the delivery's event id: GitHub's delivery guid, Shopify's
	// event id, the Standard Webhooks message id. Stripe's is in the body.
	ID string
	// Type is the event type as the receiver names it. For GitHub, the
	// part before the first "." is the X-GitHub-Event header (the action
	// is the payload's); for Shopify it is the topic.
	Type string
	// Shop is Shopify's shop domain.
	Shop string
	// URL is the URL the delivery is posted to, for the providers that
	// sign it (Square's notification URL: its SettingURL).
	URL  string
	Body []byte
	// Now is when it is signed.
	Now time.Time
}

// Sign returns the headers the named provider sends with d, signed with
// secret: for inboxctl send and for tests, never for checking.
func Sign(name, secret string, d Delivery) (map[string]string, error) {
	spec, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return spec.Sign(secret, d)
}

// hmacSHA256 is the HMAC-SHA256 of parts, concatenated, under secret: what
// every signer of a body-HMAC scheme writes, in its own encoding.
func hmacSHA256(secret string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Delivery is what Sign needs to sign a delivery as its provider would.
type Delivery struct {
	// ID is the delivery's event id: GitHub's delivery guid, Shopify's
	// event id, the Standard Webhooks message id.
	ID string
	// Type is the event type as the receiver names it. For GitHub, the
	// part before the first "." is the X-GitHub-Event header (the action
	// is the payload's); for Shopify it is the topic.
	Type string
	// Shop is Shopify's shop domain.
	Shop string
	Body []byte
	Now  time.Time
}

// Sign returns the headers the named provider sends with d, signed with
// secret: for inboxctl send and for tests, never for checking.
func Sign(name, secret string, d Delivery) (map[string]string, error) {
	mac := func(key []byte, parts ...string) []byte {
		h := hmac.New(sha256.New, key)
		for _, p := range parts {
			h.Write([]byte(p))
		}
		return h.Sum(nil)
	}
	switch name {
	case GitHub:
		ev, _, _ := strings.Cut(d.Type, ".")
		return map[string]string{
			"x-github-delivery":   d.ID,
			"x-github-event":      ev,
			"x-hub-signature-256": "sha256=" + hex.EncodeToString(mac([]byte(secret), string(d.Body))),
		}, nil
	case Shopify:
		return map[string]string{
			"x-shopify-topic":        d.Type,
			"x-shopify-event-id":     d.ID,
			"x-shopify-webhook-id":   d.ID,
			"x-shopify-shop-domain":  d.Shop,
			"x-shopify-triggered-at": d.Now.UTC().Format(time.RFC3339Nano),
			"x-shopify-api-version":  "2025-10",
			"x-shopify-hmac-sha256":  base64.StdEncoding.EncodeToString(mac([]byte(secret), string(d.Body))),
		}, nil
	case Standard:
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil || !strings.HasPrefix(secret, "whsec_") {
			return nil, fmt.Errorf("provider standard: the secret is not a whsec_ value")
		}
		sig, err := wh.Sign(d.ID, d.Now, d.Body)
		if err != nil {
			return nil, fmt.Errorf("provider standard: sign: %w", err)
		}
		return map[string]string{
			"webhook-id":        d.ID,
			"webhook-timestamp": strconv.FormatInt(d.Now.Unix(), 10),
			"webhook-signature": sig,
		}, nil
	}
	return nil, fmt.Errorf("provider: unknown provider %q (want one of %s)", name, strings.Join(Names, ", "))
}

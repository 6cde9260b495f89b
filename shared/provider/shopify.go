package provider

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
)

// Shopify's delivery headers.
const (
	headerShopifyHMAC        = "x-shopify-hmac-sha256"
	headerShopifyEventID     = "x-shopify-event-id"
	headerShopifyWebhookID   = "x-shopify-webhook-id"
	headerShopifyTopic       = "x-shopify-topic"
	headerShopifyShopDomain  = "x-shopify-shop-domain"
	headerShopifyTriggeredAt = "x-shopify-triggered-at"
)

// shopify verifies Shopify's webhooks: X-Shopify-Hmac-Sha256 is the base64
// HMAC-SHA256 of the raw body under the app's client secret. Shopify signs
// no timestamp either: a replay is caught by the event id.
type shopify struct{ keys macs }

func newShopify(secrets []string) *shopify { return &shopify{keys: newMACs(secrets)} }

// Verify checks the signature, then reads the id (X-Shopify-Event-Id, the
// same across retries and subscriptions, else X-Shopify-Webhook-Id), the
// type (X-Shopify-Topic), the shop (X-Shopify-Shop-Domain, kept as the
// record's account), the time Shopify triggered the event
// (X-Shopify-Triggered-At, kept as its created time) and the object: the
// payload's id, of the topic's resource ("orders/create" is about an
// order).
func (s *shopify) Verify(body []byte, headers map[string]string) (event.Envelope, error) {
	sig := Header(headers, headerShopifyHMAC)
	if sig == "" {
		return event.Envelope{}, ErrMissingSignature
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(got) != 32 {
		return event.Envelope{}, fmt.Errorf("%w: not the base64 of 32 bytes", ErrMalformedSignature)
	}
	if !s.keys.match(body, got) {
		return event.Envelope{}, ErrNoMatch
	}
	p, err := decodeObject[struct {
		ID json.RawMessage `json:"id"`
	}](body)
	if err != nil {
		return event.Envelope{}, err
	}
	id := Header(headers, headerShopifyEventID)
	if id == "" {
		id = Header(headers, headerShopifyWebhookID)
	}
	topic := Header(headers, headerShopifyTopic)
	if id == "" || topic == "" {
		return event.Envelope{}, event.ErrMissingID
	}
	env := event.Envelope{ID: id, Type: topic, Account: Header(headers, headerShopifyShopDomain)}
	if t, err := time.Parse(time.RFC3339Nano, Header(headers, headerShopifyTriggeredAt)); err == nil {
		env.Created = t.Unix()
	}
	if oid := objectID(p.ID); oid != "" {
		env.ObjectID = oid
		env.ObjectType, _, _ = strings.Cut(topic, "/")
	}
	return env, nil
}

// objectID renders a payload's id, a JSON number or string, as text; ""
// for anything else.
func objectID(raw json.RawMessage) string {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String()
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return ""
}

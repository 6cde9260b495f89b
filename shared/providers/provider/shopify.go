package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Shopify is Shopify's webhooks (an app's subscriptions).
const Shopify = "shopify"

// Shopify's delivery headers.
const (
	headerShopifyHMAC        = "x-shopify-hmac-sha256"
	headerShopifyEventID     = "x-shopify-event-id"
	headerShopifyWebhookID   = "x-shopify-webhook-id"
	headerShopifyTopic       = "x-shopify-topic"
	headerShopifyShopDomain  = "x-shopify-shop-domain"
	headerShopifyTriggeredAt = "x-shopify-triggered-at"
	headerShopifyAPIVersion  = "x-shopify-api-version"
)

var shopifySpec = Spec{Name: Shopify, Check: checkShopify, New: newShopify, Sign: signShopify}

// shopify verifies Shopify's webhooks: X-Shopify-Hmac-Sha256 is the base64
// HMAC-SHA256 of the raw body under the app's client secret. Nothing else
// is signed (not the event id, the topic, the shop or the time) and no
// timestamp either. Shopify sends one order's body under two topics at
// once (orders/create and orders/paid), so the topic and the body name the
// event: Verified.ReplayKey is their hash. The topic is unsigned: whoever
// captured a body can name it under another topic once (docs/providers.md).
type shopify struct{ keys macs }

func newShopify(secrets []string, _ Options) (Verifier, error) {
	return &shopify{keys: newMACs(secrets)}, nil
}

// shopifySignature reads X-Shopify-Hmac-Sha256: the MAC it carries.
func shopifySignature(r Request) ([]byte, error) {
	sig := r.Header(headerShopifyHMAC)
	if sig == "" {
		return nil, ErrMissingSignature
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return nil, fmt.Errorf("%w: not the base64 of 32 bytes", ErrMalformedSignature)
	}
	return got, nil
}

func checkShopify(r Request) error {
	_, err := shopifySignature(r)
	return err
}

// Verify checks the signature, then reads the id (X-Shopify-Event-Id, the
// same across retries and subscriptions, else X-Shopify-Webhook-Id), the
// type (X-Shopify-Topic), the shop (X-Shopify-Shop-Domain, kept as the
// record's account), the time Shopify triggered the event
// (X-Shopify-Triggered-At, kept as its created time) and the object: the
// payload's id, of the topic's resource ("orders/create" is about an
// order).
func (s *shopify) Verify(_ context.Context, r Request) (Verified, error) {
	got, err := shopifySignature(r)
	if err != nil {
		return Verified{}, err
	}
	if !s.keys.match(r.Body, got) {
		return Verified{}, ErrNoMatch
	}
	p, err := decodeObject[struct {
		ID json.RawMessage `json:"id"`
	}](r.Body)
	if err != nil {
		return Verified{}, err
	}
	id := r.Header(headerShopifyEventID)
	if id == "" {
		id = r.Header(headerShopifyWebhookID)
	}
	topic := r.Header(headerShopifyTopic)
	if id == "" || topic == "" {
		return Verified{}, event.ErrMissingID
	}
	env := event.Envelope{ID: id, Type: topic, Account: r.Header(headerShopifyShopDomain)}
	if t, err := time.Parse(time.RFC3339Nano, r.Header(headerShopifyTriggeredAt)); err == nil {
		env.Created = t.Unix()
	}
	if oid := objectID(p.ID); oid != "" {
		env.ObjectID = oid
		env.ObjectType, _, _ = strings.Cut(topic, "/")
	}
	return Verified{Envelope: env, ReplayKey: replayKey([]byte(topic), r.Body)}, nil
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

// signShopify signs d as Shopify does: d.Type is the topic, d.Shop the
// shop's domain.
func signShopify(secret string, d Delivery) (map[string]string, error) {
	sum := hmacSHA256(secret, d.Body)
	return map[string]string{
		headerShopifyTopic:       d.Type,
		headerShopifyEventID:     d.ID,
		headerShopifyWebhookID:   d.ID,
		headerShopifyShopDomain:  d.Shop,
		headerShopifyTriggeredAt: d.Now.UTC().Format(time.RFC3339Nano),
		headerShopifyAPIVersion:  "2025-10",
		headerShopifyHMAC:        base64.StdEncoding.EncodeToString(sum),
	}, nil
}

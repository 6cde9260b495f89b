package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/url"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Square is Square's webhooks (a Square application's webhook
// subscriptions).
const Square = "square"

// headerSquareSignature is Square's signature header.
const headerSquareSignature = "x-square-hmacsha256-signature"

// SettingURL is the setting holding the URL a provider signs with the
// body: the notification URL as registered with the sender, exactly
// (SQUARE_WEBHOOK_URL).
const SettingURL = "url"

var squareSpec = Spec{Name: Square, Check: checkSquare, New: newSquare, Sign: signSquare, Stamp: stampField("event_id"), Settings: []string{SettingURL}}

// square verifies Square's webhooks: x-square-hmacsha256-signature is the
// base64 HMAC-SHA256 of the notification URL followed by the raw body,
// under the subscription's signature key (as a UTF-8 string), as the
// Square SDK's WebhooksHelper computes it (which compares with ===: here
// hmac.Equal). The URL is the subscription's as registered, exactly (a
// trailing slash differs): it is configured (SQUARE_WEBHOOK_URL), not
// read from the request, whose host behind API Gateway or a proxy is not
// the one Square called. The body holds the event_id, so a captured
// delivery sent again is its id's duplicate; but no timestamp is signed,
// so it verifies for good, after the event's record has expired too:
// Verified.ReplayKey is the hash of what is signed, whose claim is kept
// for good, so it stays a replay.
//
// Hand-written: Square's Go SDK is a large generated API client, and the
// scheme is one HMAC-SHA256.
type square struct {
	keys macs
	url  string
}

func newSquare(secrets []string, opts Options) (Verifier, error) {
	u := opts.Settings[SettingURL]
	if u == "" {
		return nil, fmt.Errorf(
			"provider square: no notification URL: set %s to the subscription's URL, exactly as registered",
			SettingVariable(Square, SettingURL),
		)
	}
	if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" {
		return nil, fmt.Errorf("provider square: %s is not an https URL", SettingVariable(Square, SettingURL))
	}
	return &square{keys: newMACs(secrets), url: u}, nil
}

func squareSignature(r Request) ([]byte, error) {
	sig := r.Header(headerSquareSignature)
	if sig == "" {
		return nil, ErrMissingSignature
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return nil, fmt.Errorf("%w: not the base64 of 32 bytes", ErrMalformedSignature)
	}
	return got, nil
}

func checkSquare(r Request) error {
	_, err := squareSignature(r)
	return err
}

// Verify checks the signature over the configured URL and the body, then
// reads the envelope from the body: the id event_id, the type type
// ("payment.updated"), the created time created_at, the account
// merchant_id and the object data.id typed data.type ("payment").
func (s *square) Verify(_ context.Context, r Request) (Verified, error) {
	got, err := squareSignature(r)
	if err != nil {
		return Verified{}, err
	}
	signed := make([]byte, 0, len(s.url)+len(r.Body))
	signed = append(append(signed, s.url...), r.Body...)
	if !s.keys.match(signed, got) {
		return Verified{}, ErrNoMatch
	}
	b, err := decodeObject[struct {
		EventID    string `json:"event_id"`
		Type       string `json:"type"`
		MerchantID string `json:"merchant_id"`
		CreatedAt  string `json:"created_at"`
		Data       struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"data"`
	}](r.Body)
	if err != nil {
		return Verified{}, err
	}
	if b.EventID == "" || b.Type == "" {
		return Verified{}, event.ErrMissingID
	}
	env := event.Envelope{ID: b.EventID, Type: b.Type, Account: b.MerchantID}
	if b.Data.ID != "" {
		env.ObjectID, env.ObjectType = b.Data.ID, b.Data.Type
	}
	if t, err := time.Parse(time.RFC3339Nano, b.CreatedAt); err == nil {
		env.Created = t.Unix()
	}
	return Verified{Envelope: env, ReplayKey: replayKey(signed)}, nil
}

// signSquare signs d as Square does, for d.URL: the id and type are the
// body's.
func signSquare(secret string, d Delivery) (map[string]string, error) {
	if d.URL == "" {
		return nil, fmt.Errorf("provider square: sign: no notification URL")
	}
	sum := hmacSHA256(secret, []byte(d.URL), d.Body)
	return map[string]string{headerSquareSignature: base64.StdEncoding.EncodeToString(sum)}, nil
}

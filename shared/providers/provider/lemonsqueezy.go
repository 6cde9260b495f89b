package provider

import (
	"context"
	"encoding/hex"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// LemonSqueezy is Lemon Squeezy's webhooks.
const LemonSqueezy = "lemonsqueezy"

// Lemon Squeezy's delivery headers.
const (
	headerLemonSqueezySignature = "x-signature"
	headerLemonSqueezyEvent     = "x-event-name"
)

var lemonSqueezySpec = Spec{Name: LemonSqueezy, Check: checkLemonSqueezy, New: newLemonSqueezy, Sign: signLemonSqueezy, Stamp: stampLemonSqueezy}

// lemonSqueezy verifies Lemon Squeezy's webhooks: X-Signature is the hex
// HMAC-SHA256 of the raw body under the webhook's signing secret (Lemon
// Squeezy's docs and its Laravel package; its JavaScript SDK verifies
// nothing, so the test vector is computed, not one an SDK accepted). No
// timestamp is signed, and Lemon Squeezy sends no event id, in a header
// or in the body (meta holds the event name and the checkout's
// custom_data only).
//
// So the id is made from what is signed: "body-" and the first 32 hex
// digits of the body's SHA-256. A retry sends the same body, so it is a
// duplicate; a captured body sent again is the same event. No time being
// signed, that capture verifies for good, after the event's record has
// expired too: Verified.ReplayKey is the body's hash, whose claim is kept
// for good, so it stays a replay. Two distinct events with byte-identical
// bodies would be one: every body carries its object's updated_at, so
// the inbox takes them to be the same facts sent twice. The type is the
// body's meta.event_name (signed), not the unsigned X-Event-Name.
//
// Hand-written: no Lemon Squeezy SDK in Go, and the scheme is one
// HMAC-SHA256 over the body.
type lemonSqueezy struct{ keys macs }

func newLemonSqueezy(secrets []string, _ Options) (Verifier, error) {
	return &lemonSqueezy{keys: newMACs(secrets)}, nil
}

func checkLemonSqueezy(r Request) error {
	_, err := hexSHA256MAC(r, headerLemonSqueezySignature)
	return err
}

// lemonSqueezyID is the id of a delivery of body.
func lemonSqueezyID(body []byte) string { return "body-" + replayKey(body)[:32] }

// Verify checks the signature, then reads the envelope: the id made from
// the body, the type meta.event_name, the object data.id typed data.type
// ("orders") and the created time, data.attributes.updated_at.
func (l *lemonSqueezy) Verify(_ context.Context, r Request) (Verified, error) {
	got, err := hexSHA256MAC(r, headerLemonSqueezySignature)
	if err != nil {
		return Verified{}, err
	}
	if !l.keys.match(r.Body, got) {
		return Verified{}, ErrNoMatch
	}
	b, err := decodeObject[struct {
		Meta struct {
			EventName string `json:"event_name"`
		} `json:"meta"`
		Data struct {
			Type       string `json:"type"`
			ID         string `json:"id"`
			Attributes struct {
				UpdatedAt string `json:"updated_at"`
			} `json:"attributes"`
		} `json:"data"`
	}](r.Body)
	if err != nil {
		return Verified{}, err
	}
	if b.Meta.EventName == "" {
		return Verified{}, event.ErrMissingID
	}
	key := replayKey(r.Body)
	env := event.Envelope{ID: "body-" + key[:32], Type: b.Meta.EventName}
	if b.Data.ID != "" {
		env.ObjectID, env.ObjectType = b.Data.ID, b.Data.Type
	}
	if t, err := time.Parse(time.RFC3339Nano, b.Data.Attributes.UpdatedAt); err == nil {
		env.Created = t.Unix()
	}
	return Verified{Envelope: env, ReplayKey: key}, nil
}

// signLemonSqueezy signs d as Lemon Squeezy does: the event name header
// is the body's (d.Type when the body has none).
func signLemonSqueezy(secret string, d Delivery) (map[string]string, error) {
	sum := hmacSHA256(secret, d.Body)
	name := d.Type
	if b, err := decodeObject[struct {
		Meta struct {
			EventName string `json:"event_name"`
		} `json:"meta"`
	}](d.Body); err == nil && b.Meta.EventName != "" {
		name = b.Meta.EventName
	}
	return map[string]string{
		headerLemonSqueezyEvent:     strings.TrimSpace(name),
		headerLemonSqueezySignature: hex.EncodeToString(sum),
	}, nil
}

// stampLemonSqueezy makes body a fresh event by putting id in the
// checkout's custom data (meta.custom_data.inbox_sample), as a merchant's
// own data would differ between two orders; the inbox records it under
// the id made from that body.
func stampLemonSqueezy(body []byte, id string) ([]byte, string, error) {
	b, err := setField(body, id, "meta", "custom_data", "inbox_sample")
	if err != nil {
		return nil, "", err
	}
	return b, lemonSqueezyID(b), nil
}

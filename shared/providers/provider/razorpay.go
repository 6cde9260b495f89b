package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Razorpay is Razorpay's webhooks.
const Razorpay = "razorpay"

// Razorpay's delivery headers.
const (
	headerRazorpaySignature = "x-razorpay-signature"
	headerRazorpayEventID   = "x-razorpay-event-id"
)

var razorpaySpec = Spec{Name: Razorpay, Check: checkRazorpay, New: newRazorpay, Sign: signRazorpay}

// razorpay verifies Razorpay's webhooks: X-Razorpay-Signature is the hex
// HMAC-SHA256 of the raw body under the webhook's secret, as the Node
// SDK's validateWebhookSignature computes it (which compares with ===:
// here hmac.Equal). Razorpay signs no timestamp and not the event id,
// which is the unsigned X-Razorpay-Event-Id header (Razorpay's docs; the
// same across retries): so the body names the event, Verified.ReplayKey
// is its hash, and a captured body sent again under a fresh event id is a
// replay, as for GitHub. A delivery without the header takes an id made
// from the body's hash, so its retries are one event all the same.
// Razorpay's secret has no rotation of its own: two secrets configured
// (current, previous) cover changing it.
//
// Hand-written: Razorpay's Go SDK has no webhook verification, and the
// scheme is one HMAC-SHA256 over the body.
type razorpay struct{ keys macs }

func newRazorpay(secrets []string, _ Options) (Verifier, error) {
	return &razorpay{keys: newMACs(secrets)}, nil
}

// hexSHA256MAC reads a header holding a hex HMAC-SHA256 (Razorpay's,
// Lemon Squeezy's): the MAC it carries.
func hexSHA256MAC(r Request, header string) ([]byte, error) {
	sig := r.Header(header)
	if sig == "" {
		return nil, ErrMissingSignature
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return nil, fmt.Errorf("%w: not 64 hex digits", ErrMalformedSignature)
	}
	return got, nil
}

func checkRazorpay(r Request) error {
	_, err := hexSHA256MAC(r, headerRazorpaySignature)
	return err
}

// Verify checks the signature, then reads the envelope: the id
// X-Razorpay-Event-Id (else "body-" and the body's hash), and from the
// signed body the type (event: "payment.captured"), the created time
// (created_at), the account (account_id) and the object: the entity of
// the first of contains ("payment": payload.payment.entity.id).
func (z *razorpay) Verify(_ context.Context, r Request) (Verified, error) {
	got, err := hexSHA256MAC(r, headerRazorpaySignature)
	if err != nil {
		return Verified{}, err
	}
	if !z.keys.match(r.Body, got) {
		return Verified{}, ErrNoMatch
	}
	b, err := decodeObject[struct {
		Event     string   `json:"event"`
		AccountID string   `json:"account_id"`
		Contains  []string `json:"contains"`
		CreatedAt int64    `json:"created_at"`
		Payload   map[string]struct {
			Entity struct {
				ID string `json:"id"`
			} `json:"entity"`
		} `json:"payload"`
	}](r.Body)
	if err != nil {
		return Verified{}, err
	}
	if b.Event == "" {
		return Verified{}, event.ErrMissingID
	}
	key := replayKey(r.Body)
	id := r.Header(headerRazorpayEventID)
	if id == "" {
		id = "body-" + key[:32]
	}
	env := event.Envelope{ID: id, Type: b.Event, Created: b.CreatedAt, Account: b.AccountID}
	if len(b.Contains) > 0 {
		if e, ok := b.Payload[b.Contains[0]]; ok && e.Entity.ID != "" {
			env.ObjectID, env.ObjectType = e.Entity.ID, b.Contains[0]
		}
	}
	return Verified{Envelope: env, ReplayKey: key}, nil
}

// signRazorpay signs d as Razorpay does: d.ID is X-Razorpay-Event-Id,
// the type is the body's.
func signRazorpay(secret string, d Delivery) (map[string]string, error) {
	sum := hmacSHA256(secret, d.Body)
	return map[string]string{
		headerRazorpayEventID:   d.ID,
		headerRazorpaySignature: hex.EncodeToString(sum),
	}, nil
}

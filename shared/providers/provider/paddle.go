package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Paddle is Paddle Billing's notifications (notification destinations of
// type webhook).
const Paddle = "paddle"

// headerPaddleSignature is Paddle Billing's signature header.
const headerPaddleSignature = "paddle-signature"

var paddleSpec = Spec{Name: Paddle, Check: checkPaddle, New: newPaddle, Sign: signPaddle, Stamp: stampField("event_id")}

// paddle verifies Paddle Billing's notifications: Paddle-Signature is
// "ts=<unix seconds>;h1=<hex>", h1 the lowercase hex HMAC-SHA256 of
// "ts:body" under the destination's secret key, the whole string
// (pdl_ntfset_...) as the key. During a secret rotation Paddle sends one
// h1 per secret: any match accepts (Paddle's Node SDK keeps only the
// last h1, which would refuse a rotation's old-secret signature; this
// tries every one, each in constant time). The timestamp is signed, and
// the body holds the event's id, type and time, so no ReplayKey: a
// replay is its id's duplicate, or outside the window.
//
// The window is the receiver's, as for Stripe and Standard Webhooks
// (SIGNATURE_TOLERANCE behind, SIGNATURE_FUTURE_SKEW ahead), not the
// SDK's five seconds with no future bound: Paddle signs each attempt
// afresh, so a retry is never older than its own send, and five seconds
// would refuse a delivery delayed by a slow network or a cold start.
//
// Hand-written: Paddle publishes no Go SDK, and the scheme is one
// HMAC-SHA256 over a header field and the body.
type paddle struct {
	keys   macs
	window window
}

func newPaddle(secrets []string, opts Options) (Verifier, error) {
	return &paddle{keys: newMACs(secrets), window: opts.window()}, nil
}

// paddleSignature reads Paddle-Signature: its ts, as given and as Unix
// seconds, and the MACs of its h1 entries. Fields are ";"-separated
// key=value pairs; fields it does not know are ignored, as Paddle's SDK
// does, and a second ts is refused.
func paddleSignature(r Request) (ts string, signedAt int64, sigs [][]byte, err error) {
	h := r.Header(headerPaddleSignature)
	if h == "" {
		return "", 0, nil, ErrMissingSignature
	}
	seenTS := false
	for _, f := range strings.Split(h, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			return "", 0, nil, fmt.Errorf("%w: a field without =", ErrMalformedSignature)
		}
		switch k {
		case "ts":
			if seenTS {
				return "", 0, nil, fmt.Errorf("%w: a second ts", ErrMalformedSignature)
			}
			seenTS = true
			n, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil || v == "" || v[0] == '+' || v[0] == '-' {
				return "", 0, nil, fmt.Errorf("%w: ts is not Unix seconds", ErrMalformedSignature)
			}
			ts, signedAt = v, n
		case "h1":
			mac, derr := hex.DecodeString(v)
			if derr != nil || len(mac) != sha256.Size {
				return "", 0, nil, fmt.Errorf("%w: an h1 that is not 64 hex digits", ErrMalformedSignature)
			}
			sigs = append(sigs, mac)
		}
	}
	if !seenTS || len(sigs) == 0 {
		return "", 0, nil, fmt.Errorf("%w: want ts= and h1=", ErrMalformedSignature)
	}
	return ts, signedAt, sigs, nil
}

func checkPaddle(r Request) error {
	_, _, _, err := paddleSignature(r)
	return err
}

// Verify checks every h1 against every secret, then the signed timestamp
// against the window, then reads the envelope from the (signed) body: the
// id event_id, the type event_type, the created time occurred_at, and the
// object data.id, typed by event_type's first part ("transaction").
func (p *paddle) Verify(_ context.Context, r Request) (Verified, error) {
	ts, signedAt, sigs, err := paddleSignature(r)
	if err != nil {
		return Verified{}, err
	}
	signed := make([]byte, 0, len(ts)+1+len(r.Body))
	signed = append(append(append(signed, ts...), ':'), r.Body...)
	matched := false
	for _, sig := range sigs {
		if p.keys.match(signed, sig) {
			matched = true
		}
	}
	if !matched {
		return Verified{}, ErrNoMatch
	}
	if err := p.window.check(signedAt); err != nil {
		return Verified{}, err
	}
	b, err := decodeObject[struct {
		EventID    string `json:"event_id"`
		EventType  string `json:"event_type"`
		OccurredAt string `json:"occurred_at"`
		Data       struct {
			ID string `json:"id"`
		} `json:"data"`
	}](r.Body)
	if err != nil {
		return Verified{}, err
	}
	if b.EventID == "" || b.EventType == "" {
		return Verified{}, event.ErrMissingID
	}
	env := event.Envelope{ID: b.EventID, Type: b.EventType, ObjectID: b.Data.ID}
	if t, err := time.Parse(time.RFC3339Nano, b.OccurredAt); err == nil {
		env.Created = t.Unix()
	}
	if env.ObjectID != "" {
		env.ObjectType, _, _ = strings.Cut(b.EventType, ".")
	}
	return Verified{Envelope: env}, nil
}

// signPaddle signs d as Paddle does: the id and type are the body's.
func signPaddle(secret string, d Delivery) (map[string]string, error) {
	ts := strconv.FormatInt(d.Now.Unix(), 10)
	sum := hmacSHA256(secret, []byte(ts+":"), d.Body)
	return map[string]string{headerPaddleSignature: "ts=" + ts + ";h1=" + hex.EncodeToString(sum)}, nil
}

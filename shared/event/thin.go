package event

import (
	"encoding/json"
	"fmt"
	"time"
)

// ObjectThinEvent is the "object" of a Stripe thin event (an event
// destination's lighter payload): it names the object it is about
// (related_object) instead of carrying a snapshot of it, and its "created"
// is an RFC 3339 date-time rather than Unix seconds. A snapshot event's
// "object" is "event".
const ObjectThinEvent = "v2.core.event"

// thinWire is a thin event as encoding/json reads it (the package doc's
// rule for repeated keys holds here too).
type thinWire struct {
	ID            string `json:"id"`
	Object        string `json:"object"`
	Type          string `json:"type"`
	Created       string `json:"created"`
	Livemode      bool   `json:"livemode"`
	Context       string `json:"context"`
	RelatedObject struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	} `json:"related_object"`
}

// DecodeThinEnvelope reads the envelope of one Stripe thin event: its id,
// type, livemode, "created" (RFC 3339, kept as Unix seconds, as a snapshot
// event's), "context" (the connected account, for Connect, kept as
// Account) and related_object (kept as ObjectID and ObjectType). A thin
// event carries no API version. It fails with ErrMalformed when payload is
// not one JSON object, when its "object" is not ObjectThinEvent, or when a
// field has the wrong type or "created" is not an RFC 3339 date-time; and
// with ErrMissingID when it has no id or type.
func DecodeThinEnvelope(payload []byte) (Envelope, error) {
	var w *thinWire
	if err := json.Unmarshal(payload, &w); err != nil {
		return Envelope{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if w == nil {
		return Envelope{}, fmt.Errorf("%w: top level is null", ErrMalformed)
	}
	if w.Object != ObjectThinEvent {
		return Envelope{}, fmt.Errorf("%w: object is %q, not %q", ErrMalformed, short(w.Object), ObjectThinEvent)
	}
	if w.ID == "" || w.Type == "" {
		return Envelope{}, ErrMissingID
	}
	created, err := time.Parse(time.RFC3339Nano, w.Created)
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: created %q is not an RFC 3339 date-time", ErrMalformed, short(w.Created))
	}
	return Envelope{
		ID: w.ID, Type: w.Type, Created: created.Unix(), Livemode: w.Livemode,
		Account: w.Context, ObjectID: w.RelatedObject.ID, ObjectType: w.RelatedObject.Type,
	}, nil
}

// DecodeAnyEnvelope reads a Stripe event of either kind: a thin event (its
// "object" is ObjectThinEvent) with DecodeThinEnvelope, anything else with
// DecodeEnvelope, whose errors it returns. It is for a way in that may
// carry both kinds (an event destination); the webhook endpoint reads
// snapshot events only.
func DecodeAnyEnvelope(payload []byte) (Envelope, error) {
	var kind struct {
		Object string `json:"object"`
	}
	// A payload that is no JSON object fails in DecodeEnvelope, which says
	// so.
	if json.Unmarshal(payload, &kind) == nil && kind.Object == ObjectThinEvent {
		return DecodeThinEnvelope(payload)
	}
	return DecodeEnvelope(payload)
}

// short quotes at most a short prefix of a value read from a payload, so
// that an error never carries a payload into a log.
func short(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

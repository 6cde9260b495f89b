package event

import (
	"encoding/json"
	"fmt"
	"strings"
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
		ID: w.ID, Type: w.Type, Created: CreatedSecond(created), Livemode: w.Livemode,
		Account: w.Context, ObjectID: w.RelatedObject.ID, ObjectType: w.RelatedObject.Type,
	}, nil
}

// DecodeAnyEnvelope reads a Stripe event of either kind: a thin event (its
// "object" is ObjectThinEvent) with DecodeThinEnvelope, anything else with
// DecodeEnvelope, whose errors it returns. Every way in that Stripe's
// events take (the webhook endpoint, the EventBridge bridge) may carry
// both kinds: an event destination sends either.
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

// Thin event types and names.
const (
	// ThinV1Prefix starts the type of a thin event about an API v1
	// resource: "v1.customer.subscription.updated" is the thin form of
	// "customer.subscription.updated".
	ThinV1Prefix = "v1."
	// TypeEventGenerationFailureResolved is the thin event Stripe sends
	// when it failed to generate events for an object (they are absent
	// from the Events API too): the inbox reads the object it names from
	// the API and repairs the mirror.
	TypeEventGenerationFailureResolved = "v2.core.health.event_generation_failure.resolved"
)

// SnapshotType returns the snapshot event type a thin event type is the
// thin form of ("v1.invoice.paid" → "invoice.paid"), and false for a type
// without the v1. prefix (an API v2 event's own, such as
// TypeEventGenerationFailureResolved).
func SnapshotType(thinType string) (string, bool) {
	t, ok := strings.CutPrefix(thinType, ThinV1Prefix)
	return t, ok && t != ""
}

// IsThinType reports whether a Stripe event type is a thin event's: an
// API v1 resource's thin form (ThinV1Prefix) or an API v2 event's own
// ("v2."). No snapshot event's type starts with either, so a record's
// type says which kind it is without its payload.
func IsThinType(t string) bool {
	return strings.HasPrefix(t, ThinV1Prefix) || strings.HasPrefix(t, "v2.")
}

// IsThin reports whether payload is a thin event (its "object" is
// ObjectThinEvent). A payload that does not decode is not.
func IsThin(payload []byte) bool {
	var kind struct {
		Object string `json:"object"`
	}
	return json.Unmarshal(payload, &kind) == nil && kind.Object == ObjectThinEvent
}

// Thin is what the processor reads of a thin event, as delivered or as
// GET /v2/core/events/{id} serves it.
type Thin struct {
	ID       string
	Type     string
	Created  time.Time
	Livemode bool
	// Context is the connected account (Stripe Connect), "" for the
	// platform's own.
	Context string
	// Related is the object the event is about: its id, its type (the
	// API v1 object type, "subscription") and the API path to read it
	// from ("/v1/subscriptions/sub_...").
	Related RelatedObject
	// SnapshotEvent is the id of the snapshot event Stripe sends for the
	// same change during a migration from snapshot to thin events (the
	// pair's twin); "" when there is none.
	SnapshotEvent string
}

// RelatedObject is a thin event's related_object.
type RelatedObject struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	URL  string `json:"url"`
}

// DecodeThin reads a thin event whole (the part the processor needs),
// with DecodeThinEnvelope's errors.
func DecodeThin(payload []byte) (Thin, error) {
	if _, err := DecodeThinEnvelope(payload); err != nil {
		return Thin{}, err
	}
	var w struct {
		ID            string        `json:"id"`
		Type          string        `json:"type"`
		Created       string        `json:"created"`
		Livemode      bool          `json:"livemode"`
		Context       string        `json:"context"`
		RelatedObject RelatedObject `json:"related_object"`
		SnapshotEvent string        `json:"snapshot_event"`
	}
	if err := json.Unmarshal(payload, &w); err != nil {
		return Thin{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	created, _ := time.Parse(time.RFC3339Nano, w.Created) // checked by DecodeThinEnvelope
	return Thin{
		ID: w.ID, Type: w.Type, Created: created, Livemode: w.Livemode, Context: w.Context,
		Related: w.RelatedObject, SnapshotEvent: w.SnapshotEvent,
	}, nil
}

// CreatedSecond is a thin event's created time at the resolution of a
// snapshot event's (Unix seconds, truncated): the ordering guard compares
// every event at that resolution, so a thin event at 12:00:00.500 is of
// the same second as a snapshot event created at 12:00:00, and neither is
// later than the other (the guard's rule for one second applies).
func CreatedSecond(t time.Time) int64 { return t.Unix() }

// Snapshot returns the snapshot event a thin event stands for, with obj
// (the related object as the API served it) as its data.object: id, type
// (SnapshotType), created (CreatedSecond), livemode and account as a
// snapshot event carries them. id is the id it is given: the thin
// event's own, or its twin's (SnapshotEvent), whose business effect it
// is. A team's effect reads it as it reads the snapshot twin.
func (t Thin) Snapshot(id string, obj json.RawMessage) ([]byte, error) {
	typ, ok := SnapshotType(t.Type)
	if !ok {
		return nil, fmt.Errorf("event: thin event %s: type %q names no API v1 event", t.ID, short(t.Type))
	}
	type data struct {
		Object json.RawMessage `json:"object"`
	}
	out := struct {
		ID       string `json:"id"`
		Object   string `json:"object"`
		Type     string `json:"type"`
		Created  int64  `json:"created"`
		Livemode bool   `json:"livemode"`
		Account  string `json:"account,omitempty"`
		Data     data   `json:"data"`
	}{id, "event", typ, CreatedSecond(t.Created), t.Livemode, t.Context, data{obj}}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("event: thin event %s: %w", t.ID, err)
	}
	return b, nil
}

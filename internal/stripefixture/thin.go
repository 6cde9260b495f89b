package stripefixture

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// ThinOptions shape a built thin event beside Options (whose ID, Created,
// Livemode and Account are the thin event's own; Account goes in
// "context").
type ThinOptions struct {
	// SnapshotEvent is the snapshot twin the thin event names
	// (snapshot_event); none when empty.
	SnapshotEvent string
}

// Collections maps the sample objects' types to their API v1 paths, as a
// related_object's url names them and the Stripe stand-in serves them.
func Collections() map[string]string { return maps.Clone(collections) }

var collections = map[string]string{
	"subscription":     "/v1/subscriptions",
	"invoice":          "/v1/invoices",
	"customer":         "/v1/customers",
	"checkout.session": "/v1/checkout/sessions",
	"product":          "/v1/products",
	"price":            "/v1/prices",
}

// Thin returns a thin event of eventType's thin form ("v1." +
// eventType, eventType being a snapshot type Build knows) as an event
// destination delivers it and GET /v2/core/events/{id} serves it, and the
// object it names as that object's retrieve call serves it: the object
// Build's event would carry, shaped by o. Its created is o.Created's
// second as an RFC 3339 date-time.
func Thin(eventType string, o Options, t ThinOptions) (thin, object []byte, err error) {
	snapshot, err := Build(eventType, o)
	if err != nil {
		return nil, nil, err
	}
	var ev struct {
		ID      string `json:"id"`
		Created int64  `json:"created"`
	}
	if err := json.Unmarshal(snapshot, &ev); err != nil {
		return nil, nil, fmt.Errorf("stripefixture: thin %s: %w", eventType, err)
	}
	obj, err := objectOf(snapshot)
	if err != nil {
		return nil, nil, fmt.Errorf("stripefixture: thin %s: %w", eventType, err)
	}
	var head struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if err := json.Unmarshal(obj, &head); err != nil {
		return nil, nil, fmt.Errorf("stripefixture: thin %s: %w", eventType, err)
	}
	path, ok := collections[head.Object]
	if !ok {
		return nil, nil, fmt.Errorf("stripefixture: thin %s: no API path for a %s", eventType, head.Object)
	}
	m := map[string]any{
		"id": ev.ID, "object": "v2.core.event", "type": "v1." + eventType,
		"created":  time.Unix(ev.Created, 0).UTC().Format("2006-01-02T15:04:05.000Z"),
		"livemode": o.Livemode, "reason": map[string]any{"type": "request"},
		"related_object": map[string]string{"id": head.ID, "type": head.Object, "url": path + "/" + head.ID},
	}
	if o.Account != "" {
		m["context"] = o.Account
	}
	if t.SnapshotEvent != "" {
		m["snapshot_event"] = t.SnapshotEvent
	}
	thin, err = json.Marshal(m)
	return thin, obj, err
}

// Object returns the data.object of the event Build(eventType, o) makes:
// the object as its retrieve call serves it.
func Object(eventType string, o Options) ([]byte, error) {
	body, err := Build(eventType, o)
	if err != nil {
		return nil, err
	}
	return objectOf(body)
}

func objectOf(event []byte) ([]byte, error) {
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, err
	}
	if len(ev.Data.Object) == 0 {
		return nil, fmt.Errorf("stripefixture: an event without data.object")
	}
	return ev.Data.Object, nil
}

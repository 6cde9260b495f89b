package event

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Envelope is the part of a Stripe event the pipeline needs to route and order
// it. Decoding only these fields, rather than a whole stripe.Event, keeps the
// receiver tolerant of any API version: fields of data.object that another
// API version adds, renames or removes are never looked at.
type Envelope struct {
	ID         string
	Type       string
	Created    int64
	Livemode   bool
	APIVersion string
	Account    string
	ObjectID   string
	ObjectType string
	// Customer is the customer data.object concerns (CustomerOf): its
	// customer field, or its own id when it is a customer; empty for an
	// object of no customer and for providers without one.
	Customer string
}

// CustomerOf is the customer a Stripe object concerns: the object's own id
// when it is a customer (objectType "customer"), otherwise its customer
// field, an id string or an expanded object with an id; "" when there is
// none, or the field is of another shape. The mirror keys a customer's
// objects by it and the events table indexes a customer's events by it.
func CustomerOf(objectType, id string, customer json.RawMessage) string {
	if objectType == "customer" {
		return id
	}
	if len(customer) == 0 || string(customer) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(customer, &s) == nil {
		return s
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(customer, &obj) == nil {
		return obj.ID
	}
	return ""
}

// Errors returned by DecodeEnvelope.
var (
	ErrMalformed = errors.New("event: payload is not a JSON event object")
	ErrMissingID = errors.New("event: payload has no event id or type")
)

// wire is the envelope as encoding/json reads it. data.object is kept raw
// and decoded on its own, in a second step, exactly as the mirror reads it
// (shared/stripe/mirror's payloadShape, then its object): the two then resolve a
// repeated "data" or "object" key the same way, so the record's object is
// the object the processor writes.
type wire struct {
	ID         string `json:"id"`
	Object     string `json:"object"`
	Type       string `json:"type"`
	Created    int64  `json:"created"`
	Livemode   bool   `json:"livemode"`
	APIVersion string `json:"api_version"`
	Account    string `json:"account"`
	Data       struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// dataObject is what the envelope reads of data.object.
type dataObject struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	// Customer is kept raw: an id string, an expanded customer, or null
	// (CustomerOf); a shape of neither kind names no customer rather than
	// refusing the event.
	Customer json.RawMessage `json:"customer"`
}

// DecodeEnvelope reads the envelope of one JSON event with encoding/json. It
// fails with ErrMalformed when payload is not one JSON object, when a field
// the envelope reads has the wrong type, or when its "object" names something
// other than an event; and with ErrMissingID when the event has no id or type.
// A null field reads as its zero value.
//
// Keys are read as encoding/json reads them everywhere (see the package doc):
// a key given twice keeps its last value, and a key matches a field
// case-insensitively when no key matches exactly.
func DecodeEnvelope(payload []byte) (Envelope, error) {
	// A pointer, so a top-level null is told apart from an empty object.
	var w *wire
	if err := json.Unmarshal(payload, &w); err != nil {
		return Envelope{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if w == nil {
		return Envelope{}, fmt.Errorf("%w: top level is null", ErrMalformed)
	}
	var o dataObject
	if len(w.Data.Object) > 0 {
		if err := json.Unmarshal(w.Data.Object, &o); err != nil {
			return Envelope{}, fmt.Errorf("%w: data.object: %w", ErrMalformed, err)
		}
	}
	if w.Object != "" && w.Object != "event" {
		// The value comes from the payload: quote only a short prefix, so
		// an error never carries a payload into a log.
		object := w.Object
		if len(object) > 32 {
			object = object[:32] + "…"
		}
		return Envelope{}, fmt.Errorf("%w: object is %q", ErrMalformed, object)
	}
	if w.ID == "" || w.Type == "" {
		return Envelope{}, ErrMissingID
	}
	return Envelope{
		ID: w.ID, Type: w.Type, Created: w.Created, Livemode: w.Livemode,
		APIVersion: w.APIVersion, Account: w.Account,
		ObjectID: o.ID, ObjectType: o.Object, Customer: CustomerOf(o.Object, o.ID, o.Customer),
	}, nil
}

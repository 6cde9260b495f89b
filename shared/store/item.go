package store

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/outcome"
)

// Attribute names of an event record. They are part of the stored format:
// operators query them and the template's indexes name them.
const (
	attrPK           = "pk"
	attrProvider     = "provider"
	attrID           = "id"
	attrType         = "type"
	attrCreated      = "created"
	attrLivemode     = "livemode"
	attrAPIVersion   = "api_version"
	attrAccount      = "account"
	attrObjectID     = "object_id"
	attrObjectType   = "object_type"
	attrStatus       = "status"
	attrStatusAt     = "status_at"
	attrStatusDay    = "status_day"
	attrSource       = "source"
	attrOutcome      = "outcome"
	attrPayload      = "payload"
	attrPayloadGzip  = "payload_gzip"
	attrPayloadHash  = "payload_hash"
	attrPayloadOmit  = "payload_omitted"
	attrReceivedAt   = "received_at"
	attrClaimedAt    = "claimed_at"
	attrProcessedAt  = "processed_at"
	attrAttempts     = "attempts"
	attrLeaseOwner   = "lease_owner"
	attrLeaseUntil   = "lease_until"
	attrLastError    = "last_error"
	attrLastErrorAt  = "last_error_at"
	attrMirrorKey    = "mirror_key"
	attrExpiresAt    = "expires_at"
	attrPendingShard = "pending_shard"
)

// Index names, as the template defines them.
const (
	// indexPending is sparse: only records whose status is pending carry
	// pending_shard, so the reconciler reads unfinished work without a scan.
	indexPending = "pending"
	// indexStatus lists records by status and day of their last transition.
	indexStatus = "by_status"
	// indexObject lists the events about one object in the provider's
	// order (object_id, created).
	indexObject = "by_object"
)

// MaxPayloadBytes bounds a stored payload once decompressed: a value that
// inflates further was not written by this store, and fails its own event
// (a *PayloadError), not the function. The rule, for every large value the
// inbox stores, is package ddbattr's (ddbattr.MaxInflated).
const MaxPayloadBytes = ddbattr.MaxInflated

// PayloadError reports a record whose stored payload does not decode:
// damaged, or inflating past MaxPayloadBytes. Record holds every other
// attribute, so the caller can still act on its status. Retrying cannot
// help.
type PayloadError struct {
	Record event.Record
	Err    error
}

func (e *PayloadError) Error() string {
	return fmt.Sprintf("store: event %s: stored payload: %v", e.Record.ID, e.Err)
}

func (e *PayloadError) Unwrap() error { return e.Err }

// statusDay is the partition value of indexStatus for a transition to st at t.
func statusDay(st event.Status, t time.Time) string {
	return string(st) + "#" + t.UTC().Format(time.DateOnly)
}

// newItemAttrs is the most attributes a new record's item has; sizing the
// map once saves rehashing it on every delivery.
const newItemAttrs = 20

// marshalNew builds the item of a new record. It compresses or omits the
// payload as its size requires. It runs on every delivery, so it builds the
// item by hand (package ddbattr says why).
func (e *Events) marshalNew(r *event.Record) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, newItemAttrs)
	item[attrPK] = ddbattr.S(event.Key(r.Provider, r.ID))
	item[attrProvider] = ddbattr.S(r.Provider)
	item[attrID] = ddbattr.S(r.ID)
	item[attrType] = ddbattr.S(r.Type)
	item[attrCreated] = ddbattr.N(r.Created)
	item[attrLivemode] = ddbattr.Bool(r.Livemode)
	item[attrStatus] = ddbattr.S(string(r.Status))
	item[attrStatusAt] = ddbattr.Millis(r.StatusAt)
	item[attrStatusDay] = ddbattr.S(statusDay(r.Status, r.StatusAt))
	item[attrSource] = ddbattr.S(string(r.Source))
	item[attrPayloadHash] = ddbattr.S(r.PayloadHash)
	item[attrReceivedAt] = ddbattr.Millis(r.ReceivedAt)
	item[attrAttempts] = ddbattr.N(int64(r.Attempts))
	if e.Retention > 0 {
		item[attrExpiresAt] = ddbattr.N(r.ReceivedAt.Add(e.Retention).Unix())
	}
	if r.Status.Pending() {
		item[attrPendingShard] = ddbattr.S(r.Provider)
	}
	if r.Outcome != "" {
		item[attrOutcome] = ddbattr.S(string(r.Outcome))
	}
	optional(item, attrAPIVersion, r.APIVersion)
	optional(item, attrAccount, r.Account)
	optional(item, attrObjectID, r.ObjectID)
	optional(item, attrObjectType, r.ObjectType)
	payload, gz, err := ddbattr.Pack(r.Payload)
	if err != nil {
		return nil, fmt.Errorf("store: event %s: %w", r.ID, err)
	}
	switch {
	case r.PayloadOmitted || payload == nil:
		r.PayloadOmitted = true
		item[attrPayloadOmit] = ddbattr.Bool(true)
	default:
		item[attrPayload] = ddbattr.B(payload)
		if gz {
			item[attrPayloadGzip] = ddbattr.Bool(true)
		}
	}
	return item, nil
}

// optional sets a string attribute only when it has a value.
func optional(item map[string]types.AttributeValue, name, v string) {
	if v != "" {
		item[name] = ddbattr.S(v)
	}
}

// Unmarshal decodes an event record item. When its payload does not decode
// it returns the record without it and a *PayloadError.
func Unmarshal(item map[string]types.AttributeValue) (event.Record, error) {
	r := unmarshalFields(item)
	if v, ok := ddbattr.GetB(item, attrPayload); ok {
		r.Payload = v
		if ddbattr.GetBool(item, attrPayloadGzip) {
			p, err := ddbattr.Unpack(v)
			if err != nil {
				r.Payload = nil
				return r, &PayloadError{Record: r, Err: err}
			}
			r.Payload = p
		}
	}
	return r, nil
}

// unmarshalFields decodes every attribute of a record item but the payload.
func unmarshalFields(item map[string]types.AttributeValue) event.Record {
	var r event.Record
	r.Provider = ddbattr.GetS(item, attrProvider)
	r.ID = ddbattr.GetS(item, attrID)
	r.Type = ddbattr.GetS(item, attrType)
	r.Created = ddbattr.GetN(item, attrCreated)
	r.Livemode = ddbattr.GetBool(item, attrLivemode)
	r.APIVersion = ddbattr.GetS(item, attrAPIVersion)
	r.Account = ddbattr.GetS(item, attrAccount)
	r.ObjectID = ddbattr.GetS(item, attrObjectID)
	r.ObjectType = ddbattr.GetS(item, attrObjectType)
	r.Status = event.Status(ddbattr.GetS(item, attrStatus))
	r.StatusAt = ddbattr.GetMillis(item, attrStatusAt)
	r.Source = event.Source(ddbattr.GetS(item, attrSource))
	r.Outcome = outcome.Outcome(ddbattr.GetS(item, attrOutcome))
	r.PayloadHash = ddbattr.GetS(item, attrPayloadHash)
	r.PayloadOmitted = ddbattr.GetBool(item, attrPayloadOmit)
	r.ReceivedAt = ddbattr.GetMillis(item, attrReceivedAt)
	r.ClaimedAt = ddbattr.GetMillis(item, attrClaimedAt)
	r.ProcessedAt = ddbattr.GetMillis(item, attrProcessedAt)
	r.Attempts = int(ddbattr.GetN(item, attrAttempts))
	r.LeaseOwner = ddbattr.GetS(item, attrLeaseOwner)
	r.LeaseUntil = ddbattr.GetMillis(item, attrLeaseUntil)
	r.LastError = ddbattr.GetS(item, attrLastError)
	r.LastErrorAt = ddbattr.GetMillis(item, attrLastErrorAt)
	r.MirrorKey = ddbattr.GetS(item, attrMirrorKey)
	return r
}

package store

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	// IndexPending is sparse: only records whose status is pending carry
	// pending_shard, so the reconciler reads unfinished work without a scan.
	IndexPending = "pending"
	// IndexStatus lists records by status and day of their last transition.
	IndexStatus = "by_status"
)

const (
	// compressAbove is the payload size from which payloads are stored
	// gzipped. Below it compression saves little and costs CPU on every
	// delivery.
	compressAbove = 8 << 10
	// maxStoredPayload keeps an item, with its other attributes, under
	// DynamoDB's 400 KB item limit.
	maxStoredPayload = 380 << 10
)

// MaxPayloadBytes bounds a stored payload once decompressed. A payload is a
// body the receiver accepted or an event the reconciler listed: the
// receiver takes at most MAX_BODY_BYTES (1 MB by default), and whatever
// that says, Lambda hands a function no request over its 6 MB invocation
// limit; Stripe's events are far smaller. The gzip that fits in an item
// (maxStoredPayload) could otherwise inflate about a thousandfold, to some
// 390 MB, past the processor's memory: a value that inflates beyond this
// bound was not written by this store, and fails its own event (a
// *PayloadError), not the function.
const MaxPayloadBytes = 6 << 20

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

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func b(v bool) types.AttributeValue       { return &types.AttributeValueMemberBOOL{Value: v} }
func ms(t time.Time) types.AttributeValue { return n(t.UnixMilli()) }

// StatusDay is the partition value of IndexStatus for a transition to st at t.
func StatusDay(st event.Status, t time.Time) string {
	return string(st) + "#" + t.UTC().Format(time.DateOnly)
}

// newItemAttrs is the most attributes a new record's item has; sizing the
// map once saves rehashing it on every delivery.
const newItemAttrs = 20

// marshalNew builds the item of a new record. It compresses or omits the
// payload as its size requires. It runs on every delivery, so it builds the
// item by hand rather than through attributevalue's reflection.
func (e *Events) marshalNew(r *event.Record) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, newItemAttrs)
	item[attrPK] = s(event.Key(r.Provider, r.ID))
	item[attrProvider] = s(r.Provider)
	item[attrID] = s(r.ID)
	item[attrType] = s(r.Type)
	item[attrCreated] = n(r.Created)
	item[attrLivemode] = b(r.Livemode)
	item[attrStatus] = s(string(r.Status))
	item[attrStatusAt] = ms(r.StatusAt)
	item[attrStatusDay] = s(StatusDay(r.Status, r.StatusAt))
	item[attrSource] = s(string(r.Source))
	item[attrPayloadHash] = s(r.PayloadHash)
	item[attrReceivedAt] = ms(r.ReceivedAt)
	item[attrAttempts] = n(int64(r.Attempts))
	if e.Retention > 0 {
		item[attrExpiresAt] = n(r.ReceivedAt.Add(e.Retention).Unix())
	}
	if r.Status.Pending() {
		item[attrPendingShard] = s(r.Provider)
	}
	if r.Outcome != "" {
		item[attrOutcome] = s(string(r.Outcome))
	}
	optional(item, attrAPIVersion, r.APIVersion)
	optional(item, attrAccount, r.Account)
	optional(item, attrObjectID, r.ObjectID)
	optional(item, attrObjectType, r.ObjectType)
	payload, gz, err := encodePayload(r.Payload)
	if err != nil {
		return nil, err
	}
	switch {
	case r.PayloadOmitted || payload == nil:
		r.PayloadOmitted = true
		item[attrPayloadOmit] = b(true)
	default:
		item[attrPayload] = &types.AttributeValueMemberB{Value: payload}
		if gz {
			item[attrPayloadGzip] = b(true)
		}
	}
	return item, nil
}

// optional sets a string attribute only when it has a value.
func optional(item map[string]types.AttributeValue, name, v string) {
	if v != "" {
		item[name] = s(v)
	}
}

// gzipWriters are reused across deliveries: a new flate compressor
// allocates and clears about a megabyte, which cost far more than
// compressing a typical large event.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a constant, valid level
	return zw
}}

// encodePayload returns the bytes to store for p, whether they are gzipped,
// or nil when even the compressed payload is too large for an item.
func encodePayload(p []byte) ([]byte, bool, error) {
	if len(p) <= compressAbove {
		return p, false, nil
	}
	// JSON events compress to well under half; start there.
	buf := bytes.NewBuffer(make([]byte, 0, len(p)/3))
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(buf)
	if _, err := zw.Write(p); err != nil {
		return nil, false, fmt.Errorf("store: gzip payload: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, false, fmt.Errorf("store: gzip payload: %w", err)
	}
	if buf.Len() > maxStoredPayload {
		return nil, false, nil
	}
	return buf.Bytes(), true, nil
}

// Unmarshal decodes an event record item. When its payload does not decode
// it returns the record without it and a *PayloadError.
func Unmarshal(item map[string]types.AttributeValue) (event.Record, error) {
	r := unmarshalFields(item)
	if v, ok := item[attrPayload].(*types.AttributeValueMemberB); ok {
		r.Payload = v.Value
		if getB(item, attrPayloadGzip) {
			p, err := gunzip(v.Value)
			if err != nil {
				r.Payload = nil
				return r, &PayloadError{Record: r, Err: err}
			}
			r.Payload = p
		}
	}
	return r, nil
}

// gunzip decompresses a stored payload, reading at most one byte more than
// MaxPayloadBytes.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, MaxPayloadBytes+1))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	if len(out) > MaxPayloadBytes {
		return nil, fmt.Errorf("gunzip: inflates past the %d-byte limit (store.MaxPayloadBytes)", MaxPayloadBytes)
	}
	return out, nil
}

// unmarshalFields decodes every attribute of a record item but the payload.
func unmarshalFields(item map[string]types.AttributeValue) event.Record {
	var r event.Record
	r.Provider = getS(item, attrProvider)
	r.ID = getS(item, attrID)
	r.Type = getS(item, attrType)
	r.Created = getN(item, attrCreated)
	r.Livemode = getB(item, attrLivemode)
	r.APIVersion = getS(item, attrAPIVersion)
	r.Account = getS(item, attrAccount)
	r.ObjectID = getS(item, attrObjectID)
	r.ObjectType = getS(item, attrObjectType)
	r.Status = event.Status(getS(item, attrStatus))
	r.StatusAt = getTime(item, attrStatusAt)
	r.Source = event.Source(getS(item, attrSource))
	r.Outcome = outcome.Outcome(getS(item, attrOutcome))
	r.PayloadHash = getS(item, attrPayloadHash)
	r.PayloadOmitted = getB(item, attrPayloadOmit)
	r.ReceivedAt = getTime(item, attrReceivedAt)
	r.ClaimedAt = getTime(item, attrClaimedAt)
	r.ProcessedAt = getTime(item, attrProcessedAt)
	r.Attempts = int(getN(item, attrAttempts))
	r.LeaseOwner = getS(item, attrLeaseOwner)
	r.LeaseUntil = getTime(item, attrLeaseUntil)
	r.LastError = getS(item, attrLastError)
	r.LastErrorAt = getTime(item, attrLastErrorAt)
	r.MirrorKey = getS(item, attrMirrorKey)
	return r
}

func getS(item map[string]types.AttributeValue, k string) string {
	if v, ok := item[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, k string) int64 {
	if v, ok := item[k].(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	return 0
}

func getB(item map[string]types.AttributeValue, k string) bool {
	if v, ok := item[k].(*types.AttributeValueMemberBOOL); ok {
		return v.Value
	}
	return false
}

func getTime(item map[string]types.AttributeValue, k string) time.Time {
	v := getN(item, k)
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

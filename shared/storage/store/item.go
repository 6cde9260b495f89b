package store

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// Attribute names of an event record and of its payload item. They are
// part of the stored format: operators query them and the template's
// indexes name them. docs/data-model.md describes each item.
const (
	attrPK         = "pk"
	attrProvider   = "provider"
	attrID         = "id"
	attrType       = "type"
	attrCreated    = "created"
	attrLivemode   = "livemode"
	attrAPIVersion = "api_version"
	attrAccount    = "account"
	attrObjectID   = "object_id"
	attrObjectType = "object_type"
	// attrCustomerID is the key of indexCustomer: the customer the event's
	// object concerns, written only when that object is another than the
	// customer itself (whose events by_object lists).
	attrCustomerID  = "customer_id"
	attrStatus      = "status"
	attrStatusAt    = "status_at"
	attrSource      = "source"
	attrOutcome     = "outcome"
	attrPayload     = "payload"
	attrPayloadHash = "payload_hash"
	attrPayloadOmit = "payload_omitted"
	attrReceivedAt  = "received_at"
	attrClaimedAt   = "claimed_at"
	attrProcessedAt = "processed_at"
	attrAttempts    = "attempts"
	attrLeaseOwner  = "lease_owner"
	attrLeaseUntil  = "lease_until"
	attrLastError   = "last_error"
	attrLastErrorAt = "last_error_at"
	attrRetryAt     = "retry_at"
	attrMirrorKey   = "mirror_key"
	attrExpiresAt   = "expires_at"
	// attrLane is the key of indexUnprocessed: the record's lane and
	// shard, while its status is anything but processed.
	attrLane = "lane"
	// attrDayKey is the key of indexDay: the day the record was received,
	// and its shard. It never changes.
	attrDayKey = "day_key"
)

// Index names, as the template defines them. Every index is keyed by
// attributes that never change once written, or that change only on rare
// paths (a lane's change), never at the claim; each projects keys only or
// attributes that never change, so a transition writes an index only when
// a record enters or leaves it. Each index key that all events share is
// split into Shards values: see docs/data-model.md.
const (
	// indexUnprocessed is sparse: it holds a record, by lane (Lane) and
	// shard, while its status is not processed. The reconciler's stuck
	// sweep reads the pending lane; operators list the other statuses
	// from it without reading every event.
	indexUnprocessed = "unprocessed"
	// indexDay holds every record by the day it was received and its
	// shard, newest first: operators' listing of recent events.
	indexDay = "by_day"
	// indexObject lists the events about one object in the provider's
	// order (object_id, created).
	indexObject = "by_object"
	// indexCustomer is sparse: it lists the events about a customer's
	// other objects (its subscriptions, invoices, checkout sessions), by
	// customer id and the provider's created time. A customer's own events
	// are by_object's (ByCustomer reads both).
	indexCustomer = "by_customer_id"
	// indexAccounts is sparse: the connected accounts seen, one item each
	// (Accounts), by provider then account.
	indexAccounts = "accounts_seen"
)

// Shards is how many values each index key that all events share is split
// into: an event's shard is a hash of its id. DynamoDB gives each
// partition-key value about 1,000 write units a second; the busiest, a
// lane of indexUnprocessed, receives 2 a new event (its entry's put and,
// at the commit, its delete), so 16 values take 3,000 events a second at
// 375 units a second each. Readers of a shared key read every shard.
const Shards = 16

// The lanes of indexUnprocessed.
const (
	// LanePending holds received, processing and failed records: the
	// pipeline's own work, which the stuck sweep reads. The claim moves a
	// record between these statuses without changing its lane.
	LanePending = "pending"
	// LaneFailedPermanent, LaneDeadLettered and LaneIgnored hold the
	// records in those statuses, for operators.
	LaneFailedPermanent = "failed_permanent"
	LaneDeadLettered    = "dead_lettered"
	LaneIgnored         = "ignored"
)

// Lane is the lane of indexUnprocessed that holds records in status st,
// and false for processed, which no lane holds.
func Lane(st event.Status) (string, bool) {
	switch {
	case st.Pending():
		return LanePending, true
	case st == event.StatusFailedPermanent:
		return LaneFailedPermanent, true
	case st == event.StatusDeadLettered:
		return LaneDeadLettered, true
	case st == event.StatusIgnored:
		return LaneIgnored, true
	}
	return "", false
}

// shard is the shard of event id: FNV-1a of the id, modulo Shards.
func shard(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % Shards)
}

// shardName renders a shard in keys: two digits.
func shardName(s int) string {
	if s < 10 {
		return "0" + strconv.Itoa(s)
	}
	return strconv.Itoa(s)
}

// laneKey is the value of attrLane for a record of provider in lane and
// shard s: "stripe#pending#07".
func laneKey(provider, lane string, s int) string {
	return provider + "#" + lane + "#" + shardName(s)
}

// dayKey is the value of attrDayKey for a record of provider received on
// day in shard s: "stripe#2026-11-30#07".
func dayKey(provider string, day time.Time, s int) string {
	return provider + "#" + day.UTC().Format(time.DateOnly) + "#" + shardName(s)
}

// prefixPayload starts the key of every payload item: "payload#" then the
// record's key. No event's key starts with it ("<provider>#<id>"), nor a
// checkpoint's.
const prefixPayload = "payload#"

// payloadKey is the partition key of the payload item of provider's
// event id.
func payloadKey(provider, id string) string { return prefixPayload + event.Key(provider, id) }

// maxLastError bounds the last error kept on a record: an error is logged
// whole where it happens, and the record stays under the 1 KB a write
// unit covers, so that recording a failure costs one.
const maxLastError = 256

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

// newItemAttrs is the most attributes a new record's item has; sizing the
// map once saves rehashing it on every delivery.
const newItemAttrs = 22

// marshalRecord builds the item of a new record: everything but the
// payload, which has an item of its own (marshalPayload). It runs on
// every delivery, so it builds the item by hand (package ddbattr says
// why).
func (e *Events) marshalRecord(r *event.Record) map[string]types.AttributeValue {
	item := make(map[string]types.AttributeValue, newItemAttrs)
	item[attrPK] = ddbattr.S(event.Key(r.Provider, r.ID))
	item[attrProvider] = ddbattr.S(r.Provider)
	item[attrID] = ddbattr.S(r.ID)
	item[attrType] = ddbattr.S(r.Type)
	item[attrCreated] = ddbattr.N(r.Created)
	item[attrLivemode] = ddbattr.Bool(r.Livemode)
	item[attrStatus] = ddbattr.S(string(r.Status))
	item[attrStatusAt] = ddbattr.Millis(r.StatusAt)
	item[attrSource] = ddbattr.S(string(r.Source))
	item[attrPayloadHash] = ddbattr.S(r.PayloadHash)
	item[attrReceivedAt] = ddbattr.Millis(r.ReceivedAt)
	item[attrAttempts] = ddbattr.N(int64(r.Attempts))
	s := shard(r.ID)
	item[attrDayKey] = ddbattr.S(dayKey(r.Provider, r.ReceivedAt, s))
	if lane, ok := Lane(r.Status); ok {
		item[attrLane] = ddbattr.S(laneKey(r.Provider, lane, s))
	}
	if e.Retention > 0 {
		item[attrExpiresAt] = ddbattr.N(r.ReceivedAt.Add(e.Retention).Unix())
	}
	if r.Outcome != "" {
		item[attrOutcome] = ddbattr.S(string(r.Outcome))
	}
	if r.PayloadOmitted {
		item[attrPayloadOmit] = ddbattr.Bool(true)
	}
	optional(item, attrAPIVersion, r.APIVersion)
	optional(item, attrAccount, r.Account)
	optional(item, attrObjectID, r.ObjectID)
	optional(item, attrObjectType, r.ObjectType)
	if r.Customer != r.ObjectID {
		optional(item, attrCustomerID, r.Customer)
	}
	return item
}

// packPayload compresses r's payload for its payload item, deflated
// against its provider's dictionary (payloadDict), or returns nil and
// marks r.PayloadOmitted when there is none or it is too large for an
// item even compressed.
func packPayload(r *event.Record) ([]byte, error) {
	if r.PayloadOmitted || len(r.Payload) == 0 {
		r.PayloadOmitted = true
		return nil, nil
	}
	var packed []byte
	var err error
	if d := payloadDict(r.Provider); d != nil {
		packed, err = ddbattr.PackWith(r.Payload, d)
	} else {
		packed, err = ddbattr.Pack(r.Payload)
	}
	if err != nil {
		return nil, fmt.Errorf("store: event %s: %w", r.ID, err)
	}
	if packed == nil {
		r.PayloadOmitted = true
	}
	return packed, nil
}

// marshalPayload builds the payload item of r: its key, the compressed
// payload and its own expiry, shorter than the record's.
func (e *Events) marshalPayload(r event.Record, packed []byte) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		attrPK:      ddbattr.S(payloadKey(r.Provider, r.ID)),
		attrPayload: ddbattr.B(packed),
	}
	if ret := e.payloadRetention(); ret > 0 {
		item[attrExpiresAt] = ddbattr.N(r.ReceivedAt.Add(ret).Unix())
	}
	return item
}

// optional sets a string attribute only when it has a value.
func optional(item map[string]types.AttributeValue, name, v string) {
	if v != "" {
		item[name] = ddbattr.S(v)
	}
}

// Unmarshal decodes an event record item. The payload is not part of it:
// Get and Payload read it from its own item.
func Unmarshal(item map[string]types.AttributeValue) event.Record {
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
	r.Customer = ddbattr.GetS(item, attrCustomerID)
	if r.Customer == "" && r.ObjectType == "customer" {
		r.Customer = r.ObjectID
	}
	r.Status = event.Status(ddbattr.GetS(item, attrStatus))
	r.StatusAt = ddbattr.GetMillis(item, attrStatusAt)
	r.Source = event.Source(ddbattr.GetS(item, attrSource))
	r.Outcome = outcome.Outcome(ddbattr.GetS(item, attrOutcome))
	r.PayloadHash = ddbattr.GetS(item, attrPayloadHash)
	r.PayloadOmitted = ddbattr.GetBool(item, attrPayloadOmit)
	r.PayloadErased = ddbattr.GetN(item, attrPayloadErased) != 0
	r.ReceivedAt = ddbattr.GetMillis(item, attrReceivedAt)
	r.ClaimedAt = ddbattr.GetMillis(item, attrClaimedAt)
	r.ProcessedAt = ddbattr.GetMillis(item, attrProcessedAt)
	r.Attempts = int(ddbattr.GetN(item, attrAttempts))
	r.LeaseOwner = ddbattr.GetS(item, attrLeaseOwner)
	r.LeaseUntil = ddbattr.GetMillis(item, attrLeaseUntil)
	r.LastError = ddbattr.GetS(item, attrLastError)
	r.LastErrorAt = ddbattr.GetMillis(item, attrLastErrorAt)
	r.RetryAt = ddbattr.GetMillis(item, attrRetryAt)
	r.MirrorKey = ddbattr.GetS(item, attrMirrorKey)
	r.DiscardedAt = ddbattr.GetMillis(item, attrDiscardedAt)
	r.DiscardReason = ddbattr.GetS(item, attrDiscardReason)
	return r
}

// unpackPayload decodes the payload of a payload item; false when the
// item holds none.
func unpackPayload(item map[string]types.AttributeValue) ([]byte, bool, error) {
	v, ok := ddbattr.GetB(item, attrPayload)
	if !ok {
		return nil, false, nil
	}
	p, err := ddbattr.Unpack(v, payloadDicts()...)
	return p, true, err
}

// recordKeyOf is the record key a payload item's key names, and false for
// any other key.
func recordKeyOf(pk string) (provider, id string, ok bool) {
	rest, ok := strings.CutPrefix(pk, prefixPayload)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "#")
}

func truncate(v string, max int) string {
	if len(v) <= max {
		return v
	}
	return v[:max] + "…"
}

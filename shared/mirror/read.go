package mirror

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/store"
)

// ErrNotFound: no such object or entitlement in the mirror.
var ErrNotFound = errors.New("mirror: not found")

// DB is the part of *dynamodb.Client a Reader uses.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Reader reads the mirror. It needs dynamodb:GetItem on the mirror table and
// dynamodb:Query on its by_customer index.
type Reader struct {
	DB    DB
	Table string
}

// Snapshot is the mirrored state of one object, and its JSON is what
// inboxctl object --json prints:
//
//	{
//	  "id": "sub_123",                 // the Stripe object's id
//	  "object": "subscription",        // its Stripe type
//	  "customer": "cus_123",           // omitted when the object has none
//	  "deleted": false,                // true: a tombstone left by a *.deleted event
//	  "last_event_id": "evt_123",      // the event the snapshot is from
//	  "last_event_created": 1700000000,// its created time, Unix seconds
//	  "last_event_type": "customer.subscription.updated",
//	  "livemode": false,
//	  "data": { ... }                  // data.object of that event, as Stripe sent it
//	}
//
// The snapshot is the newest event applied (by created, then event id), or
// the newest deletion once there is one.
type Snapshot struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	Customer         string          `json:"customer,omitempty"`
	Deleted          bool            `json:"deleted"`
	LastEventID      string          `json:"last_event_id"`
	LastEventCreated int64           `json:"last_event_created"`
	LastEventType    string          `json:"last_event_type"`
	Livemode         bool            `json:"livemode"`
	Data             json.RawMessage `json:"data"`
	// DataOmitted: data.object was too large for the mirror even gzipped
	// (over 350 KB); Data is null and the rest of the snapshot is kept.
	DataOmitted bool `json:"data_omitted,omitempty"`
}

// Object reads the snapshot of object id.
func (r *Reader) Object(ctx context.Context, id string) (Snapshot, error) {
	item, err := r.get(ctx, id)
	if err != nil {
		return Snapshot{}, err
	}
	return SnapshotFrom(item)
}

// maxDataBytes bounds a snapshot's data once decompressed: data is the
// data.object of one stored event, so it is never larger than the event's
// payload (store.MaxPayloadBytes). The gzip that fits in an item (maxData)
// could otherwise inflate about a thousandfold.
const maxDataBytes = store.MaxPayloadBytes

// SnapshotFrom decodes a mirror item. Data that does not decode (damaged,
// or inflating past maxDataBytes) is an error naming the object.
func SnapshotFrom(item map[string]types.AttributeValue) (Snapshot, error) {
	gs := func(k string) string {
		if v, ok := item[k].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	s := Snapshot{
		ID: gs(attrPK), Object: gs(attrObject), Customer: gs(attrCustomer),
		LastEventID: gs(attrLastEventID), LastEventType: gs(attrLastEventType),
		Data: json.RawMessage(gs(attrData)),
	}
	if v, ok := item[attrDeleted].(*types.AttributeValueMemberBOOL); ok {
		s.Deleted = v.Value
	}
	if v, ok := item[attrLivemode].(*types.AttributeValueMemberBOOL); ok {
		s.Livemode = v.Value
	}
	if v, ok := item[attrLastEventCreated].(*types.AttributeValueMemberN); ok {
		fmt.Sscan(v.Value, &s.LastEventCreated)
	}
	if v, ok := item[attrDataGzip].(*types.AttributeValueMemberB); ok {
		data, err := gunzip(v.Value)
		if err != nil {
			return Snapshot{}, fmt.Errorf("mirror: object %s: stored data: %w", s.ID, err)
		}
		s.Data = data
	}
	if v, ok := item[attrDataOmitted].(*types.AttributeValueMemberBOOL); ok {
		s.DataOmitted = v.Value
	}
	if len(s.Data) == 0 {
		s.Data = json.RawMessage("null")
	}
	return s, nil
}

// gunzip decodes stored data, reading at most one byte more than
// maxDataBytes.
func gunzip(b []byte) (json.RawMessage, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	if len(out) > maxDataBytes {
		return nil, fmt.Errorf("gunzip: inflates past the %d-byte limit (store.MaxPayloadBytes)", maxDataBytes)
	}
	if !json.Valid(out) {
		return nil, errors.New("gunzip: not JSON")
	}
	return out, nil
}

// CustomerObjects lists the snapshots of customer's objects (the customer
// itself, subscriptions, invoices, checkout sessions), ordered by id, with
// tombstones of deleted ones. objectType ("subscription", "invoice", ...)
// narrows the list; "" lists every type. It reads the by_customer index,
// which is eventually consistent: a write of a moment ago may not show yet.
// Objects without a customer (products, prices, guest checkout sessions)
// are only found by id, with Object.
func (r *Reader) CustomerObjects(ctx context.Context, customer, objectType string) ([]Snapshot, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(r.Table),
		IndexName:                 aws.String(IndexCustomer),
		KeyConditionExpression:    aws.String("customer = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": str(customer)},
	}
	// The entitlement item carries the customer attribute too, but no
	// object type: the filter leaves it out.
	if objectType == "" {
		in.FilterExpression = aws.String("attribute_exists(#o)")
	} else {
		in.FilterExpression = aws.String("#o = :t")
		in.ExpressionAttributeValues[":t"] = str(objectType)
	}
	in.ExpressionAttributeNames = map[string]string{"#o": attrObject}
	out := []Snapshot{}
	for {
		page, err := r.DB.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("mirror: list objects of customer %s: %w", customer, err)
		}
		for _, item := range page.Items {
			snap, err := SnapshotFrom(item)
			if err != nil {
				return nil, fmt.Errorf("mirror: list objects of customer %s: %w", customer, err)
			}
			out = append(out, snap)
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// Entitlement reads and derives a customer's entitlement. A customer the
// mirror has never seen a subscription for is not active, with reason
// "no_subscription".
func (r *Reader) Entitlement(ctx context.Context, customer string) (Entitlement, error) {
	item, err := r.get(ctx, EntitlementKey(customer))
	if errors.Is(err, ErrNotFound) {
		return DeriveEntitlement(customer, nil), nil
	}
	if err != nil {
		return Entitlement{}, err
	}
	return DeriveEntitlement(customer, item), nil
}

func (r *Reader) get(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	out, err := r.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.Table),
		Key:            map[string]types.AttributeValue{attrPK: str(key)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("mirror: get %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	return out.Item, nil
}

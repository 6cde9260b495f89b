package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// ErrNotFound: no such object or entitlement in the mirror.
var ErrNotFound = errors.New("mirror: not found")

// DB is the part of *dynamodb.Client a Reader uses.
type DB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Reader reads the mirror. It needs dynamodb:GetItem and
// dynamodb:BatchGetItem on the mirror table and dynamodb:Query on its
// by_customer index.
type Reader struct {
	DB    DB
	Table string
}

// Snapshot is the mirrored state of one object, and its JSON is what
// inboxctl object --json prints:
//
//	{
//	  "id": "sub_123",                 // the Stripe object's id
//	  "account": "acct_123",           // the connected account's (Connect); omitted for the platform's own
//	  "object": "subscription",        // its Stripe type
//	  "customer": "cus_123",           // omitted when the object has none
//	  "deleted": false,                // true: a tombstone left by a *.deleted event
//	  "last_event_id": "evt_123",      // the event the snapshot is from
//	  "last_event_created": 1700000000,// its created time, Unix seconds
//	  "last_event_type": "customer.subscription.updated",
//	  "livemode": false,
//	  "settled_by": "api",             // omitted unless the state is the API's: "api" (events of one second), "audit"
//	  "data": { ... }                  // the fields of that event's data.object the allowlist keeps (Fields); null on a tombstone
//	}
//
// The snapshot is the newest event applied (by created; a tie settled by
// the API's state, see Mirror.Settle, or by event id without one), or
// the newest deletion once there is one. An erased snapshot (Eraser) is a
// tombstone with "erased": true.
type Snapshot struct {
	ID               string `json:"id"`
	Account          string `json:"account,omitempty"`
	Object           string `json:"object"`
	Customer         string `json:"customer,omitempty"`
	Deleted          bool   `json:"deleted"`
	LastEventID      string `json:"last_event_id"`
	LastEventCreated int64  `json:"last_event_created"`
	LastEventType    string `json:"last_event_type"`
	Livemode         bool   `json:"livemode"`
	// SettledBy says the state is the provider's API's, read because
	// events of one second could not be ordered (SourceAPI) or by the
	// audit (SourceAudit); "" for an event's own data.object.
	SettledBy string `json:"settled_by,omitempty"`
	// Changes says what an audit's repair changed ("status: active →
	// canceled"), when SettledBy is SourceAudit; updated_at is when.
	Changes []string        `json:"settled_changes,omitempty"`
	Data    json.RawMessage `json:"data"`
	// DataOmitted: data.object was too large for the mirror even gzipped
	// (over ddbattr.MaxStored, 380 KB); Data is null and the rest of the
	// snapshot is kept.
	DataOmitted bool `json:"data_omitted,omitempty"`
	// Erased: the customer's data was erased (inboxctl erase); the
	// snapshot is a tombstone that keeps only ids and the ordering guard.
	Erased bool `json:"erased,omitempty"`
}

// Key is the snapshot's key in the mirror (Key): what Object reads it by.
func (s Snapshot) Key() string { return Key(s.Account, s.ID) }

// Object reads the snapshot of the object key names: its id, or a
// connected account's Key(account, id).
func (r *Reader) Object(ctx context.Context, key string) (Snapshot, error) {
	item, err := r.get(ctx, key)
	if err != nil {
		return Snapshot{}, err
	}
	return SnapshotFrom(item)
}

// SnapshotFrom decodes a mirror item. Data that does not decode (damaged,
// or inflating past ddbattr.MaxInflated: data is the data.object of one
// stored event, never larger than the event's payload) is an error naming
// the object.
func SnapshotFrom(item map[string]types.AttributeValue) (Snapshot, error) {
	_, id := SplitKey(ddbattr.GetS(item, attrPK))
	_, customer := SplitKey(ddbattr.GetS(item, attrCustomer))
	s := Snapshot{
		ID:               id,
		Account:          ddbattr.GetS(item, attrAccount),
		Object:           ddbattr.GetS(item, attrObject),
		Customer:         customer,
		Deleted:          ddbattr.GetBool(item, attrDeleted),
		LastEventID:      ddbattr.GetS(item, attrLastEventID),
		LastEventCreated: ddbattr.GetN(item, attrLastEventCreated),
		LastEventType:    ddbattr.GetS(item, attrLastEventType),
		Livemode:         ddbattr.GetBool(item, attrLivemode),
		SettledBy:        ddbattr.GetS(item, attrSettledBy),
		Changes:          changesOf(item),
		Data:             json.RawMessage(ddbattr.GetS(item, attrData)),
		DataOmitted:      ddbattr.GetBool(item, attrDataOmitted),
		Erased:           ddbattr.GetBool(item, attrErased),
	}
	if gz, ok := ddbattr.GetB(item, attrDataGzip); ok {
		data, err := ddbattr.Unpack(gz)
		if err == nil && !json.Valid(data) {
			err = errors.New("gunzip: not JSON")
		}
		if err != nil {
			return Snapshot{}, fmt.Errorf("mirror: object %s: stored data: %w", s.Key(), err)
		}
		s.Data = data
	}
	if len(s.Data) == 0 {
		s.Data = json.RawMessage("null")
	}
	return s, nil
}

// CustomerObjects lists the snapshots of customer's objects (the customer
// itself, subscriptions, invoices, checkout sessions), ordered by id, with
// tombstones of deleted ones. objectType ("subscription", "invoice", ...)
// narrows the list; "" lists every type. The by_customer index holds keys
// only (it would otherwise copy every snapshot, data included), so it
// lists the keys and BatchGetItem reads the snapshots, 100 at a time. The
// index is eventually consistent: a write of a moment ago may not show
// yet. Objects without a customer (products, prices, guest checkout
// sessions) are only found by id, with Object. customer is the customer's
// id, or a connected account's Key(account, id): each account's customer
// is its own.
func (r *Reader) CustomerObjects(ctx context.Context, customer, objectType string) ([]Snapshot, error) {
	keys, err := r.CustomerKeys(ctx, customer)
	if err != nil {
		return nil, err
	}
	items, err := r.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("mirror: read objects of customer %s: %w", customer, err)
	}
	out := []Snapshot{}
	for _, item := range items {
		s, err := SnapshotFrom(item)
		if err != nil {
			return nil, fmt.Errorf("mirror: read objects of customer %s: %w", customer, err)
		}
		if objectType == "" || s.Object == objectType {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// CustomerKeys lists the keys (Key: object ids, account-qualified for a
// connected account's) of customer's snapshots from the
// by_customer index, in key order. An entitlement item is not in the index
// (it is found by its key, EntitlementKey); one written before it left the
// index is left out here.
func (r *Reader) CustomerKeys(ctx context.Context, customer string) ([]string, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(r.Table),
		IndexName:                 aws.String(indexCustomer),
		KeyConditionExpression:    aws.String("customer = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": ddbattr.S(customer)},
	}
	var keys []string
	for {
		page, err := r.DB.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("mirror: list objects of customer %s: %w", customer, err)
		}
		for _, item := range page.Items {
			if k := ddbattr.GetS(item, attrPK); k != "" && k != EntitlementKey(customer) {
				keys = append(keys, k)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return keys, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// batchGetMax is the most keys one BatchGetItem takes.
const batchGetMax = 100

// batchGet reads the items of keys with strongly consistent reads. Keys
// whose item no longer exists (deleted since the index listed them) are
// left out. Unprocessed keys (throttling) are asked for again, after a
// pause that doubles each time.
func (r *Reader) batchGet(ctx context.Context, keys []string) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	for len(keys) > 0 {
		n := min(len(keys), batchGetMax)
		chunk := keys[:n]
		keys = keys[n:]
		req := make([]map[string]types.AttributeValue, 0, n)
		for _, k := range chunk {
			req = append(req, map[string]types.AttributeValue{attrPK: ddbattr.S(k)})
		}
		pending := map[string]types.KeysAndAttributes{r.Table: {Keys: req, ConsistentRead: aws.Bool(true)}}
		for wait := 50 * time.Millisecond; len(pending) > 0; wait *= 2 {
			res, err := r.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, err
			}
			out = append(out, res.Responses[r.Table]...)
			pending = res.UnprocessedKeys
			if len(pending[r.Table].Keys) == 0 {
				break
			}
			if err := pause.For(ctx, min(wait, 2*time.Second)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Entitlement reads and derives a customer's entitlement (customer: its
// id, or a connected account's Key(account, id)). A customer the
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
		Key:            map[string]types.AttributeValue{attrPK: ddbattr.S(key)},
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

// changesOf reads a snapshot's settled_changes.
func changesOf(item map[string]types.AttributeValue) []string {
	l, ok := item[attrSettledChanges].(*types.AttributeValueMemberL)
	if !ok {
		return nil
	}
	var out []string
	for _, v := range l.Value {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			out = append(out, s.Value)
		}
	}
	return out
}

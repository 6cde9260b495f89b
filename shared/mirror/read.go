package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrNotFound: no such object or entitlement in the mirror.
var ErrNotFound = errors.New("mirror: not found")

// Getter is the part of *dynamodb.Client a Reader uses.
type Getter interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Reader reads the mirror.
type Reader struct {
	DB    Getter
	Table string
}

// Snapshot is the mirrored state of one object.
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
}

// Object reads the snapshot of object id.
func (r *Reader) Object(ctx context.Context, id string) (Snapshot, error) {
	item, err := r.get(ctx, id)
	if err != nil {
		return Snapshot{}, err
	}
	return SnapshotFrom(item), nil
}

// SnapshotFrom decodes a mirror item.
func SnapshotFrom(item map[string]types.AttributeValue) Snapshot {
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
	if len(s.Data) == 0 {
		s.Data = json.RawMessage("null")
	}
	return s
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

package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// WriteDB is the part of *dynamodb.Client an Eraser uses.
type WriteDB interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Eraser erases a customer's data from the mirror (inboxctl erase). It
// needs dynamodb:UpdateItem and dynamodb:DeleteItem on the mirror table;
// Reader.CustomerObjects finds what to erase.
//
// An erased snapshot is not deleted but turned into a tombstone that keeps
// the object's id, type and customer id and the ordering guard (the created
// time and id of its last event), marked erased: true, without data. A
// deleted item would let an older delivery still on its way (Stripe retries
// for three days; the reconciler re-ingests up to 30 days back) write the
// snapshot again, personal data included; the tombstone makes every later
// event but a deletion lose the guard, and a deletion's tombstone carries no
// data either. The customer id stays so that the by_customer index still
// finds the tombstones and erasing again is a no-op.
type Eraser struct {
	DB    WriteDB
	Table string
	Now   func() time.Time
}

// EraseObject turns the snapshot key names (Key: its id, account-qualified
// for a connected account's) into an erased tombstone. It reports false
// when there is no such snapshot. It is conditioned on the item existing
// only, so it wins against any concurrent write: one applied before it is
// erased, one applied after it finds a tombstone.
func (e *Eraser) EraseObject(ctx context.Context, key string) (bool, error) {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	_, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table),
		Key:       map[string]types.AttributeValue{attrPK: ddbattr.S(key)},
		UpdateExpression: aws.String("SET #deleted = :t, #erased = :t, #updated = :now " +
			"REMOVE #data, #data_gz, #data_omitted"),
		ConditionExpression: aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#deleted": attrDeleted, "#erased": attrErased, "#updated": attrUpdatedAt,
			"#data": attrData, "#data_gz": attrDataGzip, "#data_omitted": attrDataOmitted,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t":   ddbattr.Bool(true),
			":now": ddbattr.N(now().UnixMilli()),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mirror: erase %s: %w", key, err)
	}
	return true, nil
}

// EraseEntitlement deletes customer's entitlement item. It reports false
// when there was none. The erased subscription snapshots keep a later
// subscription event from writing it again: the entitlement's update is in
// the same transaction as the snapshot's put, and the tombstone cancels it.
func (e *Eraser) EraseEntitlement(ctx context.Context, customer string) (bool, error) {
	out, err := e.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(e.Table),
		Key:          map[string]types.AttributeValue{attrPK: ddbattr.S(EntitlementKey(customer))},
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return false, fmt.Errorf("mirror: erase the entitlement of %s: %w", customer, err)
	}
	return len(out.Attributes) > 0, nil
}

// HasEntitlement reports whether the mirror holds an entitlement item for
// customer.
func (r *Reader) HasEntitlement(ctx context.Context, customer string) (bool, error) {
	_, err := r.get(ctx, EntitlementKey(customer))
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

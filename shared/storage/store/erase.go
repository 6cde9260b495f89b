package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// attrPayloadErased marks a record whose payload was erased (inboxctl
// erase).
const attrPayloadErased = "payload_erased"

// UnsettledError reports a record whose payload cannot be erased yet:
// Current.Status is still pending (received, processing, failed,
// dead_lettered), so the processor still needs the payload to apply the
// event and run its effects.
type UnsettledError struct {
	Current event.Record
}

func (e *UnsettledError) Error() string {
	return fmt.Sprintf("store: event %s is %s: its payload is erased once it is settled", e.Current.ID, e.Current.Status)
}

// ErasePayload removes the stored payload of a settled record (processed,
// ignored or failed_permanent) and marks the record payload_erased (the
// time of the first erasure, Unix milliseconds). The record itself stays,
// with its id, type, times, status and payload hash, so a duplicate
// delivery of the event is still recognised and never applied twice. It
// reports whether the payload had already been erased. A record still
// pending gives an *UnsettledError (nothing is changed); no record,
// ErrNotFound.
//
// The record is marked first, conditioned on its status, then the payload
// item deleted: an erasure cut short between the two is finished by the
// next (the mark stays, the delete is retried), and reported as an
// erasure then, not as one done before. Nothing writes a settled record's
// payload again: a duplicate delivery stores a payload only for a record
// still received.
//
// A settled record is never claimed again (replay enqueues a processed one
// only to be acknowledged as a duplicate), except a failed_permanent one
// that an operator reopens: with no payload, it fails permanently again.
func (e *Events) ErasePayload(ctx context.Context, provider, id string, now time.Time) (alreadyErased bool, err error) {
	out, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(e.Table),
		Key:                 e.key(provider, id),
		UpdateExpression:    aws.String("SET #erased = if_not_exists(#erased, :erased_at)"),
		ConditionExpression: aws.String("#st IN (:processed, :ignored, :permanent)"),
		ExpressionAttributeNames: map[string]string{
			"#erased": attrPayloadErased, "#st": attrStatus,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":erased_at": ddbattr.Millis(now),
			":processed": ddbattr.S(string(event.StatusProcessed)),
			":ignored":   ddbattr.S(string(event.StatusIgnored)),
			":permanent": ddbattr.S(string(event.StatusFailedPermanent)),
		},
		// ALL_OLD rather than UPDATED_OLD: the first erasure's time is
		// kept, and an emulator may leave an unchanged attribute out of
		// UPDATED_OLD.
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			return false, ErrNotFound
		}
		return false, &UnsettledError{Current: Unmarshal(ccf.Item)}
	}
	if err != nil {
		return false, fmt.Errorf("store: erase the payload of event %s: %w", id, err)
	}
	_, marked := out.Attributes[attrPayloadErased]
	del, err := e.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(e.Table),
		Key:          e.payloadKey(provider, id),
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return false, fmt.Errorf("store: erase the payload of event %s: %w", id, err)
	}
	return marked && len(del.Attributes) == 0, nil
}

// Mentioning returns the records whose stored payload contains needle (a
// customer id in quotes, say), without their payloads, oldest first. It
// scans the whole table, because no index knows which customer an event
// is about: every item is read once, eventually consistent, so it costs
// about one read unit per 8 KB of table; the payload items are decoded and
// searched, and the records they belong to read by key. It is meant for
// erasure, which is rare; it needs dynamodb:Scan and dynamodb:BatchGetItem
// on the table.
func (e *Events) Mentioning(ctx context.Context, needle []byte) ([]event.Record, error) {
	in := &dynamodb.ScanInput{
		TableName: aws.String(e.Table),
		// Only payload items hold a payload; records and checkpoints have
		// nothing to search.
		FilterExpression:         aws.String("attribute_exists(#payload)"),
		ExpressionAttributeNames: map[string]string{"#payload": attrPayload},
	}
	var keys []map[string]types.AttributeValue
	for {
		page, err := e.DB.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("store: scan for payloads that mention %s: %w", needle, err)
		}
		for _, item := range page.Items {
			provider, id, ok := recordKeyOf(ddbattr.GetS(item, attrPK))
			if !ok {
				continue
			}
			p, _, err := unpackPayload(item)
			if err != nil {
				return nil, &PayloadError{Record: event.Record{Provider: provider, ID: id}, Err: err}
			}
			if bytes.Contains(p, needle) {
				keys = append(keys, e.key(provider, id))
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	recs, err := e.records(ctx, keys, true)
	if err != nil {
		return nil, err
	}
	out := make([]event.Record, 0, len(recs))
	for _, r := range recs {
		out = append(out, r)
	}
	sortByCreated(out)
	return out, nil
}

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

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
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
// ignored or failed_permanent) and marks it payload_erased (the time of the
// first erasure, Unix milliseconds). The record
// itself stays, with its id, type, times, status and payload hash, so a
// duplicate delivery of the event is still recognised and never applied
// twice. It reports whether the payload had already been erased. A record
// still pending gives an *UnsettledError (nothing is changed); no record,
// ErrNotFound.
//
// A settled record is never claimed again (replay enqueues a processed one
// only to be acknowledged as a duplicate), except a failed_permanent one
// that an operator reopens: with no payload, it fails permanently again.
func (e *Events) ErasePayload(ctx context.Context, provider, id string, now time.Time) (alreadyErased bool, err error) {
	out, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(e.Table),
		Key:                 e.key(provider, id),
		UpdateExpression:    aws.String("SET #erased = if_not_exists(#erased, :erased_at) REMOVE #payload, #gzip"),
		ConditionExpression: aws.String("#st IN (:processed, :ignored, :permanent)"),
		ExpressionAttributeNames: map[string]string{
			"#erased": attrPayloadErased, "#payload": attrPayload, "#gzip": attrPayloadGzip, "#st": attrStatus,
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
		return false, &UnsettledError{Current: unmarshalFields(ccf.Item)}
	}
	if err != nil {
		return false, fmt.Errorf("store: erase the payload of event %s: %w", id, err)
	}
	_, had := out.Attributes[attrPayloadErased]
	return had, nil
}

// Mentioning returns the records whose stored payload contains needle (a
// customer id in quotes, say), without their payloads, oldest first. It
// scans the whole table, because no index knows which customer an event
// is about: every item is read once, eventually consistent, so it costs
// about one read unit per 8 KB of table. It is meant for erasure, which is
// rare; it needs dynamodb:Scan on the table.
func (e *Events) Mentioning(ctx context.Context, needle []byte) ([]event.Record, error) {
	in := &dynamodb.ScanInput{
		TableName: aws.String(e.Table),
		// Records without a payload (omitted, erased) and checkpoints have
		// nothing to search.
		FilterExpression:         aws.String("attribute_exists(#payload)"),
		ExpressionAttributeNames: map[string]string{"#payload": attrPayload},
	}
	var out []event.Record
	for {
		page, err := e.DB.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("store: scan for payloads that mention %s: %w", needle, err)
		}
		for _, item := range page.Items {
			r, err := Unmarshal(item)
			if err != nil {
				return nil, err
			}
			if bytes.Contains(r.Payload, needle) {
				r.Payload = nil
				out = append(out, r)
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
	sortByCreated(out)
	return out, nil
}

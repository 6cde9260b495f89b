package store

import (
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

// Attributes of an operator's discard (inboxctl dlq discard): when the
// event's dead-letter message was dropped, and why.
const (
	attrDiscardedAt   = "discarded_at"
	attrDiscardReason = "discard_reason"
)

// maxDiscardReason bounds the reason kept on a record, as maxLastError
// bounds an error: the record stays under the 1 KB one write unit covers.
const maxDiscardReason = 256

// discardTries bounds Discard's tries on a record that keeps changing
// under it: each try is two conditional writes at most.
const discardTries = 3

// Discard records on an event's record that an operator dropped its
// dead-letter message, and why: discarded_at (Unix milliseconds) and
// discard_reason, replaced by a later discard. It returns the record as
// it stands afterwards, or ErrNotFound.
//
// A record still pending with no worker on it (received, failed, or
// processing under a lease that expired) becomes dead_lettered as well:
// the message dropped may be the only one that pointed to it, and the
// reconciler's stuck sweep would otherwise send a pending record through
// again, undoing the operator's decision without a word. Any other status
// is kept: a processed or ignored record's dead-letter copy was stale, a
// dead_lettered one stays so, and a record a worker holds now is being
// processed from another message. A dead_lettered record stays claimable:
// an explicit replay still processes it.
//
// Each write is conditioned on the status it expects, so a record that
// changes meanwhile (a worker claims it) is read again and decided anew.
func (e *Events) Discard(ctx context.Context, provider, id, reason string, now time.Time) (event.Record, error) {
	reason = truncate(reason, maxDiscardReason)
	var seen *event.Record
	for range 2 * discardTries {
		rec, err := e.discard(ctx, provider, id, reason, now, seen)
		var nc *NotClaimableError
		if !errors.As(err, &nc) {
			return rec, err
		}
		// The record is not as the write expected: with seen nil, not
		// pending without a worker, so record the decision only, as long
		// as it stays as just read; otherwise it changed meanwhile, so
		// decide anew.
		if seen == nil {
			seen = &nc.Current
		} else {
			seen = nil
		}
	}
	return event.Record{}, fmt.Errorf("store: discard event %s: it kept changing under the write: try again", id)
}

// discard makes one conditional write: with seen nil, the move of a
// pending record with no worker to dead_lettered; otherwise the note
// alone, conditioned on the record still being as seen.
func (e *Events) discard(ctx context.Context, provider, id, reason string, now time.Time, seen *event.Record) (event.Record, error) {
	values := map[string]types.AttributeValue{
		":now":        ddbattr.Millis(now),
		":reason":     ddbattr.S(reason),
		":received":   ddbattr.S(string(event.StatusReceived)),
		":failed":     ddbattr.S(string(event.StatusFailed)),
		":processing": ddbattr.S(string(event.StatusProcessing)),
	}
	// pendingIdle is Claim's condition without dead_lettered: a record
	// no live worker holds, which the stuck sweep would pick up.
	const pendingIdle = "(#st IN (:received, :failed) OR (#st = :processing AND lease_until < :now))"
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table),
		Key:       e.key(provider, id),
		ExpressionAttributeNames: map[string]string{
			"#st": attrStatus, "#at": attrDiscardedAt, "#why": attrDiscardReason,
		},
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if seen == nil {
		values[":dead"] = ddbattr.S(string(event.StatusDeadLettered))
		values[":lane"] = ddbattr.S(laneKey(provider, LaneDeadLettered, shard(id)))
		in.UpdateExpression = aws.String("SET #st = :dead, status_at = :now, lane = :lane, #at = :now, #why = :reason " +
			"REMOVE lease_owner, lease_until")
		in.ConditionExpression = aws.String(pendingIdle)
	} else {
		values[":seen"] = ddbattr.S(string(seen.Status))
		in.UpdateExpression = aws.String("SET #at = :now, #why = :reason")
		in.ConditionExpression = aws.String("#st = :seen AND NOT " + pendingIdle)
	}
	out, err := e.DB.UpdateItem(ctx, in)
	return transitioned(out, err, "discard", id)
}

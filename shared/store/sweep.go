package store

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
)

// maxBatchGet is the most keys one BatchGetItem may ask for.
const maxBatchGet = 100

// batchGetAttempts bounds the requests for one batch of keys: DynamoDB
// returns unprocessed keys when it throttles part of a batch.
const batchGetAttempts = 8

// DefaultBatchBackoff is the first wait before asking again for keys a
// BatchGetItem left unprocessed, when Events.BatchBackoff is zero; it
// doubles with each attempt, up to 2 s.
const DefaultBatchBackoff = 50 * time.Millisecond

// Existing returns the ids among ids that provider's events have a record
// for: one BatchGetItem per 100 distinct ids, never one read per event. The
// reads are strongly consistent, so an event stored a moment ago is never
// reported missing (and counted as a lost webhook), and read keys only.
// Keys DynamoDB leaves unprocessed are asked for again after a pause that
// doubles, at most 8 requests per 100 ids; past that, Existing fails.
func (e *Events) Existing(ctx context.Context, provider string, ids []string) (map[string]bool, error) {
	var keys []map[string]types.AttributeValue
	seen := map[string]bool{}
	for _, id := range ids {
		// A key twice in one batch is a ValidationException.
		if seen[id] {
			continue
		}
		seen[id] = true
		keys = append(keys, e.key(provider, id))
	}
	found := map[string]bool{}
	for start := 0; start < len(keys); start += maxBatchGet {
		if err := e.batchExisting(ctx, keys[start:min(start+maxBatchGet, len(keys))], found); err != nil {
			return nil, fmt.Errorf("store: look up %d events: %w", len(ids), err)
		}
	}
	out := map[string]bool{}
	for _, id := range ids {
		if found[event.Key(provider, id)] {
			out[id] = true
		}
	}
	return out, nil
}

// batchExisting adds the keys among keys (at most maxBatchGet) that have an
// item to found.
func (e *Events) batchExisting(ctx context.Context, keys []map[string]types.AttributeValue, found map[string]bool) error {
	pending := map[string]types.KeysAndAttributes{e.Table: {
		Keys:                 keys,
		ConsistentRead:       aws.Bool(true),
		ProjectionExpression: aws.String(attrPK),
	}}
	backoff := e.BatchBackoff
	if backoff <= 0 {
		backoff = DefaultBatchBackoff
	}
	for attempt := 1; ; attempt++ {
		out, err := e.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
		if err != nil {
			return err
		}
		for _, item := range out.Responses[e.Table] {
			if pk := ddbattr.GetS(item, attrPK); pk != "" {
				found[pk] = true
			}
		}
		left := len(out.UnprocessedKeys[e.Table].Keys)
		if left == 0 {
			return nil
		}
		if attempt == batchGetAttempts {
			return fmt.Errorf("%d keys still unprocessed after %d attempts", left, attempt)
		}
		pending = out.UnprocessedKeys
		if err := sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// Stuck yields provider's unfinished records (received, processing or
// failed: event.Status.Pending) whose last transition is older than before, oldest first,
// at most limit of them, until the caller stops. It reads the sparse
// pending index, which holds only records that still need work, a page of
// at most 100 at a time, never the table. A record comes as the index
// projects it: provider, id, type, created, object_id, status and status_at.
// A read that fails yields its error, and ends the sequence.
func (e *Events) Stuck(ctx context.Context, provider string, before time.Time, limit int) iter.Seq2[event.Record, error] {
	return func(yield func(event.Record, error) bool) {
		var start map[string]types.AttributeValue
		n := 0
		for n < limit {
			out, err := e.DB.Query(ctx, &dynamodb.QueryInput{
				TableName:              aws.String(e.Table),
				IndexName:              aws.String(indexPending),
				KeyConditionExpression: aws.String("#shard = :provider AND #at < :before"),
				ExpressionAttributeNames: map[string]string{
					"#shard": attrPendingShard,
					"#at":    attrStatusAt,
				},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":provider": ddbattr.S(provider),
					":before":   ddbattr.Millis(before),
				},
				ExclusiveStartKey: start,
				Limit:             aws.Int32(int32(min(limit-n, 100))),
			})
			if err != nil {
				yield(event.Record{}, fmt.Errorf("store: query unfinished records: %w", err))
				return
			}
			for _, item := range out.Items {
				rec, err := Unmarshal(item)
				if err != nil {
					yield(event.Record{}, err)
					return
				}
				n++
				if !yield(rec, nil) || n >= limit {
					return
				}
			}
			if len(out.LastEvaluatedKey) == 0 {
				return
			}
			start = out.LastEvaluatedKey
		}
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

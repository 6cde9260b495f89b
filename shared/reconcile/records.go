package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
)

// Attributes of event records the reconciler reads (see package store).
const (
	attrPendingShard = "pending_shard"
	attrStatusAt     = "status_at"
)

// maxBatchGet is the most keys one BatchGetItem may ask for.
const maxBatchGet = 100

// batchGetAttempts bounds the retries of unprocessed keys, which DynamoDB
// returns when it throttles part of a batch.
const batchGetAttempts = 8

// existing returns the ids among ids that have a record: one BatchGetItem
// per 100 ids (a page is at most 100), retrying unprocessed keys with
// backoff, never one GetItem per event.
func (r *Reconciler) existing(ctx context.Context, ids []string) (map[string]bool, error) {
	found := map[string]bool{}
	seen := map[string]bool{}
	var keys []map[string]types.AttributeValue
	for _, id := range ids {
		// A key twice in one batch is a ValidationException.
		if seen[id] {
			continue
		}
		seen[id] = true
		keys = append(keys, map[string]types.AttributeValue{attrPK: sv(event.Key(r.cfg.Provider, id))})
	}
	for start := 0; start < len(keys); start += maxBatchGet {
		pending := map[string]types.KeysAndAttributes{r.cfg.Table: {
			Keys: keys[start:min(start+maxBatchGet, len(keys))],
			// Strongly consistent: an event stored a moment ago must not be
			// reported missing (and counted as a lost webhook).
			ConsistentRead:       aws.Bool(true),
			ProjectionExpression: aws.String(attrPK),
		}}
		backoff := r.cfg.BatchBackoff
		for attempt := 1; ; attempt++ {
			out, err := r.cfg.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, fmt.Errorf("reconcile: look up %d events: %w", len(ids), err)
			}
			for _, item := range out.Responses[r.cfg.Table] {
				if v, ok := item[attrPK].(*types.AttributeValueMemberS); ok {
					found[v.Value] = true
				}
			}
			if len(out.UnprocessedKeys) == 0 || len(out.UnprocessedKeys[r.cfg.Table].Keys) == 0 {
				break
			}
			if attempt == batchGetAttempts {
				return nil, fmt.Errorf("reconcile: look up %d events: %d keys still unprocessed after %d attempts", len(ids), len(out.UnprocessedKeys[r.cfg.Table].Keys), attempt)
			}
			pending = out.UnprocessedKeys
			if err := sleep(ctx, backoff); err != nil {
				return nil, fmt.Errorf("reconcile: look up %d events: %w", len(ids), err)
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}
	out := map[string]bool{}
	for _, id := range ids {
		if found[event.Key(r.cfg.Provider, id)] {
			out[id] = true
		}
	}
	return out, nil
}

// stuck calls fn for each unfinished record whose last transition is older
// than before, oldest first, at most limit of them, reading the sparse
// "pending" index (only records that still need work carry its key), never
// the table. fn returning false stops early.
func (r *Reconciler) stuck(ctx context.Context, before time.Time, limit int, fn func(event.Record) (bool, error)) error {
	var start map[string]types.AttributeValue
	n := 0
	for {
		out, err := r.cfg.DB.Query(ctx, &dynamodb.QueryInput{
			TableName:              aws.String(r.cfg.Table),
			IndexName:              aws.String(store.IndexPending),
			KeyConditionExpression: aws.String("#shard = :provider AND #at < :before"),
			ExpressionAttributeNames: map[string]string{
				"#shard": attrPendingShard,
				"#at":    attrStatusAt,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":provider": sv(r.cfg.Provider),
				":before":   nv(before.UnixMilli()),
			},
			ExclusiveStartKey: start,
			Limit:             aws.Int32(int32(min(limit-n, 100))),
		})
		if err != nil {
			return fmt.Errorf("reconcile: query unfinished records: %w", err)
		}
		for _, item := range out.Items {
			rec, err := store.Unmarshal(item)
			if err != nil {
				return err
			}
			n++
			more, err := fn(rec)
			if err != nil || !more {
				return err
			}
			if n >= limit {
				return nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		start = out.LastEvaluatedKey
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

package store

import (
	"context"
	"fmt"
	"iter"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/defaults"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
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
// for: one BatchGetItem per 100 distinct ids, never one read per event.
// The reads ask for keys only and are eventually consistent, half the
// price of a strongly consistent one (DynamoDB bills a read by the whole
// item either way): an event stored a moment ago may be reported missing,
// and then its ingestion is the receiver's conditional put, which loses to
// the stored record and changes nothing (outcome duplicate or requeued,
// counted as raced, never as a lost webhook). Keys DynamoDB leaves
// unprocessed are asked for again after a pause that doubles, at most 8
// requests per 100 ids; past that, Existing fails.
func (e *Events) Existing(ctx context.Context, provider string, ids []string) (map[string]bool, error) {
	return e.existing(ctx, provider, ids, false)
}

// ExistingConsistent is Existing with strongly consistent reads, at twice
// the price: an answer that decides whether an effect makes its outside
// call (a thin event's look for its snapshot twin) must see a record
// committed a moment before. Only that path pays it; the reconciler's
// pages keep Existing.
func (e *Events) ExistingConsistent(ctx context.Context, provider string, ids []string) (map[string]bool, error) {
	return e.existing(ctx, provider, ids, true)
}

func (e *Events) existing(ctx context.Context, provider string, ids []string, consistent bool) (map[string]bool, error) {
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
		ka := types.KeysAndAttributes{
			Keys:                 keys[start:min(start+maxBatchGet, len(keys))],
			ConsistentRead:       aws.Bool(consistent),
			ProjectionExpression: aws.String(attrPK),
		}
		err := e.batchGet(ctx, ka, func(item map[string]types.AttributeValue) {
			if pk := ddbattr.GetS(item, attrPK); pk != "" {
				found[pk] = true
			}
		})
		if err != nil {
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

// batchGet reads the items of ka (at most maxBatchGet keys) and hands each
// to each. Keys DynamoDB leaves unprocessed (throttling) are asked for
// again after a pause that doubles, up to 2 s, at most batchGetAttempts
// requests in all.
func (e *Events) batchGet(ctx context.Context, ka types.KeysAndAttributes, each func(map[string]types.AttributeValue)) error {
	pending := map[string]types.KeysAndAttributes{e.Table: ka}
	backoff := e.BatchBackoff
	defaults.Set(&backoff, DefaultBatchBackoff)
	for attempt := 1; ; attempt++ {
		out, err := e.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
		if err != nil {
			return err
		}
		for _, item := range out.Responses[e.Table] {
			each(item)
		}
		left := len(out.UnprocessedKeys[e.Table].Keys)
		if left == 0 {
			return nil
		}
		if attempt == batchGetAttempts {
			return fmt.Errorf("%d keys still unprocessed after %d attempts", left, attempt)
		}
		// The same read of the keys left, whatever the answer repeats of
		// the request.
		again := ka
		again.Keys = out.UnprocessedKeys[e.Table].Keys
		pending = map[string]types.KeysAndAttributes{e.Table: again}
		if err := pause.For(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// stuckScan bounds the entries of the pending lane one call of Stuck
// reads, as a multiple of its limit: entries are in the order records were
// received, and a record received long ago but still being retried (its
// last transition recent) is read and passed over.
const stuckScan = 10

// Stuck yields provider's unfinished records (received, processing or
// failed: event.Status.Pending) whose last transition is older than
// before, and, for a failed one, whose next attempt was due before it too
// (its retry_at: a message waiting out a backoff of hours is not lost),
// oldest transition first, at most limit of them, until the caller
// stops. It reads the pending lane of the sparse unprocessed index, which
// holds only unfinished records, in every shard, oldest received first
// (an entry received after before cannot be stuck), at most stuckScan ×
// limit entries, and the records themselves by key (BatchGetItem,
// eventually consistent) for their current status and its time: never the
// table. A record comes whole, without its payload. A read that fails
// yields its error, and ends the sequence.
func (e *Events) Stuck(ctx context.Context, provider string, before time.Time, limit int) iter.Seq2[event.Record, error] {
	return func(yield func(event.Record, error) bool) {
		if limit <= 0 {
			return
		}
		keys := make([]string, Shards)
		for s := range Shards {
			keys[s] = laneKey(provider, LanePending, s)
		}
		src := e.newShards(indexUnprocessed, attrLane, keys, nil, 0, before.UnixMilli()-1, false)
		src.limit = int32(min(limit*stuckScan, 100))
		var stuck []event.Record
		for read := 0; read < limit*stuckScan; {
			var batch []map[string]types.AttributeValue
			for len(batch) < maxBatchGet && read < limit*stuckScan {
				entry, _, ok, err := src.next(ctx)
				if err != nil {
					yield(event.Record{}, fmt.Errorf("store: query unfinished records: %w", err))
					return
				}
				if !ok {
					break
				}
				batch = append(batch, entry)
				read++
			}
			if len(batch) == 0 {
				break
			}
			recs, err := e.records(ctx, batch, false)
			if err != nil {
				yield(event.Record{}, fmt.Errorf("store: read unfinished records: %w", err))
				return
			}
			for _, entry := range batch {
				if r, ok := recs[ddbattr.GetS(entry, attrPK)]; ok && r.Status.Pending() && r.StatusAt.Before(before) && !r.RetryAt.After(before) {
					stuck = append(stuck, r)
				}
			}
		}
		sort.SliceStable(stuck, func(i, j int) bool { return stuck[i].StatusAt.Before(stuck[j].StatusAt) })
		for i, r := range stuck {
			if i == limit || !yield(r, nil) {
				return
			}
		}
	}
}

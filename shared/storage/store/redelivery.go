package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// Held is what the store holds of one event.
type Held struct {
	// Record: a record exists, in Status.
	Record bool
	Status event.Status
	// Payload: its payload item exists.
	Payload bool
	// Unstorable: its payload can never be stored (too large: omitted, or
	// erased by an operator).
	Unstorable bool
}

// Complete reports whether the store holds everything of the event it
// ever will: a record with its payload, or one settled, or one whose
// payload cannot be stored. A delivery of an event held so changes
// nothing.
func (h Held) Complete() bool {
	return h.Record && (h.Payload || h.Unstorable || !h.Status.NeedsPayload())
}

// heldBatch is how many events one BatchGetItem of Held reads: two keys
// each, the record and its payload.
const heldBatch = maxBatchGet / 2

// Held returns what the store holds of each of provider's events ids:
// its record (status, payload flags) and whether its payload item
// exists, in one BatchGetItem per 50 ids, eventually consistent, reading
// keys and those attributes only. An id absent from the map has no record
// and no payload.
func (e *Events) Held(ctx context.Context, provider string, ids []string) (map[string]Held, error) {
	var uniq []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	byKey := map[string]Held{}
	for start := 0; start < len(uniq); start += heldBatch {
		var keys []map[string]types.AttributeValue
		for _, id := range uniq[start:min(start+heldBatch, len(uniq))] {
			keys = append(keys, e.key(provider, id), e.payloadKey(provider, id))
		}
		ka := types.KeysAndAttributes{
			Keys:                     keys,
			ConsistentRead:           aws.Bool(false),
			ProjectionExpression:     aws.String("#pk, #st, #omit, #erased"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#st": attrStatus, "#omit": attrPayloadOmit, "#erased": attrPayloadErased},
		}
		err := e.batchGet(ctx, ka, func(item map[string]types.AttributeValue) {
			pk := ddbattr.GetS(item, attrPK)
			if p, id, ok := recordKeyOf(pk); ok {
				h := byKey[event.Key(p, id)]
				h.Payload = true
				byKey[event.Key(p, id)] = h
				return
			}
			h := byKey[pk]
			h.Record = true
			h.Status = event.Status(ddbattr.GetS(item, attrStatus))
			h.Unstorable = ddbattr.GetBool(item, attrPayloadOmit) || ddbattr.GetN(item, attrPayloadErased) != 0
			byKey[pk] = h
		})
		if err != nil {
			return nil, fmt.Errorf("store: look up %d events: %w", len(uniq), err)
		}
	}
	out := map[string]Held{}
	for _, id := range uniq {
		if h, ok := byKey[event.Key(provider, id)]; ok {
			out[id] = h
		}
	}
	return out, nil
}

// A Redelivery is a delivery that failed, which the reconciler asks its
// provider to send again (GitHub never retries by itself) until the store
// holds the event whole (Held.Complete), asking less and less often.
type Redelivery struct {
	Provider string
	// ID is the event's id (GitHub's delivery guid), Type its type.
	ID, Type string
	// Hook names where it was delivered (githubapi.Hook's String), and
	// Delivery the failed attempt to redeliver.
	Hook     string
	Delivery int64
	// FailedAt is when that attempt was made: the provider keeps it for a
	// while (GitHub, three days), and the redelivery's item no longer.
	FailedAt time.Time
	// Asked counts the redeliveries asked for so far; Due is when the next
	// is.
	Asked int
	Due   time.Time
}

// Redeliveries keeps the redeliveries the reconciler owes. Each is an
// item of the events table under a key no event has
// ("redelivery#<provider>#<id>"), in a lane of the unprocessed index of
// its own (one shard: there are few), keyed by when it is next due, so
// that a run reads those due, soonest first, without a scan. Its TTL is
// its failed attempt's time plus Keep. It needs dynamodb:PutItem,
// UpdateItem, Query (the index) and BatchGetItem.
type Redeliveries struct {
	DB    DynamoDB
	Table string
	// Keep is how long the provider keeps a delivery (GitHub: three
	// days): an item outlives its attempt that long, and no longer.
	Keep time.Duration
}

// prefixRedelivery starts the key of every redelivery item.
const prefixRedelivery = "redelivery#"

// LaneRedelivery is the lane of indexUnprocessed holding redeliveries,
// by when they are due (the index's range key).
const LaneRedelivery = "redelivery"

// Attribute names of a redelivery item.
const (
	attrHook     = "redelivery_hook"
	attrDelivery = "redelivery_attempt"
	attrFailedAt = "redelivery_failed_at" // Unix milliseconds
	attrAsked    = "redelivery_asks"
)

func (r *Redeliveries) key(provider, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(prefixRedelivery + event.Key(provider, id))}
}

// Schedule records d, first due at d.Due, unless a redelivery of its
// event is recorded already (it is under way: its own schedule goes on);
// it reports whether it recorded d.
func (r *Redeliveries) Schedule(ctx context.Context, d Redelivery) (bool, error) {
	item := map[string]types.AttributeValue{
		attrProvider: ddbattr.S(d.Provider),
		attrID:       ddbattr.S(d.ID),
		attrType:     ddbattr.S(d.Type),
		attrHook:     ddbattr.S(d.Hook),
		attrDelivery: ddbattr.N(d.Delivery),
		attrFailedAt: ddbattr.Millis(d.FailedAt),
		attrAsked:    ddbattr.N(int64(d.Asked)),
		// The index's range key: when it is due.
		attrReceivedAt: ddbattr.Millis(d.Due),
		attrLane:       ddbattr.S(laneKey(d.Provider, LaneRedelivery, 0)),
	}
	for k, v := range r.key(d.Provider, d.ID) {
		item[k] = v
	}
	if r.Keep > 0 {
		item[attrExpiresAt] = ddbattr.N(d.FailedAt.Add(r.Keep).Unix())
	}
	_, err := r.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(r.Table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: schedule the redelivery of %s: %w", d.ID, err)
	}
	return true, nil
}

// Due returns provider's redeliveries due by now, the soonest due first,
// at most limit: one query of their lane (keys only), and their items by
// key.
func (r *Redeliveries) Due(ctx context.Context, provider string, now time.Time, limit int) ([]Redelivery, error) {
	out, err := r.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(r.Table),
		IndexName:                aws.String(indexUnprocessed),
		KeyConditionExpression:   aws.String("#lane = :lane AND #due <= :now"),
		ExpressionAttributeNames: map[string]string{"#lane": attrLane, "#due": attrReceivedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":lane": ddbattr.S(laneKey(provider, LaneRedelivery, 0)),
			":now":  ddbattr.Millis(now),
		},
		Limit: aws.Int32(int32(min(max(limit, 1), 1000))),
	})
	if err != nil {
		return nil, fmt.Errorf("store: query the redeliveries due: %w", err)
	}
	var keys []map[string]types.AttributeValue
	for _, it := range out.Items {
		keys = append(keys, map[string]types.AttributeValue{attrPK: it[attrPK]})
	}
	ev := &Events{DB: r.DB, Table: r.Table}
	var due []Redelivery
	for start := 0; start < len(keys); start += maxBatchGet {
		err := ev.batchGet(ctx, types.KeysAndAttributes{Keys: keys[start:min(start+maxBatchGet, len(keys))], ConsistentRead: aws.Bool(true)},
			func(item map[string]types.AttributeValue) {
				d := Redelivery{
					Provider: ddbattr.GetS(item, attrProvider), ID: ddbattr.GetS(item, attrID), Type: ddbattr.GetS(item, attrType),
					Hook: ddbattr.GetS(item, attrHook), Delivery: ddbattr.GetN(item, attrDelivery),
					FailedAt: ddbattr.GetMillis(item, attrFailedAt), Asked: int(ddbattr.GetN(item, attrAsked)),
					Due: ddbattr.GetMillis(item, attrReceivedAt),
				}
				if !d.Due.After(now) {
					due = append(due, d)
				}
			})
		if err != nil {
			return nil, fmt.Errorf("store: read the redeliveries due: %w", err)
		}
	}
	sort.SliceStable(due, func(i, j int) bool { return due[i].Due.Before(due[j].Due) })
	if len(due) > limit {
		due = due[:limit]
	}
	return due, nil
}

// Asked records one more redelivery asked for d, the next due at next. It
// is conditioned on d being as read (its count of asks), so two runs
// cannot both count one ask: ErrRedeliveryMoved when another run did.
func (r *Redeliveries) Asked(ctx context.Context, d Redelivery, next time.Time) (Redelivery, error) {
	_, err := r.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(r.Table),
		Key:                      r.key(d.Provider, d.ID),
		UpdateExpression:         aws.String("SET #asked = :next, #due = :due"),
		ConditionExpression:      aws.String("#asked = :asked"),
		ExpressionAttributeNames: map[string]string{"#asked": attrAsked, "#due": attrReceivedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":asked": ddbattr.N(int64(d.Asked)),
			":next":  ddbattr.N(int64(d.Asked + 1)),
			":due":   ddbattr.Millis(next),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return d, ErrRedeliveryMoved
	}
	if err != nil {
		return d, fmt.Errorf("store: record the redelivery of %s: %w", d.ID, err)
	}
	d.Asked, d.Due = d.Asked+1, next
	return d, nil
}

// ErrRedeliveryMoved: another run recorded an ask of the redelivery since
// it was read.
var ErrRedeliveryMoved = errors.New("store: the redelivery was asked for by another run")

// Done ends d's schedule: the store holds its event whole, or the
// provider no longer keeps it, or the reconciler gave up on it. The item
// leaves the lane of those due and stays until its TTL, so that a later
// listing of the same failed attempt does not schedule it again.
func (r *Redeliveries) Done(ctx context.Context, d Redelivery) error {
	_, err := r.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(r.Table),
		Key:                      r.key(d.Provider, d.ID),
		UpdateExpression:         aws.String("REMOVE #lane"),
		ConditionExpression:      aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames: map[string]string{"#lane": attrLane},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("store: end the redelivery of %s: %w", d.ID, err)
	}
	return nil
}

package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// HealthSample is how many of a window's newest records Health reads by
// key for the figures only a record holds (its processed time): the
// processed-per-hour series and the received→processed percentiles.
const HealthSample = 1000

// Health is a window's picture of the events table: what Health reads.
type Health struct {
	Since, Until time.Time
	// Received counts the records received in the window (by_day).
	Received int
	// ByStatus counts them by their current status: every status of
	// event.Statuses has an entry. Processed is Received less the others,
	// which the sparse unprocessed index counts.
	ByStatus map[event.Status]int
	// Hours are the window's hours, oldest first, each with the records
	// received in it (every one) and those of the sample processed in it.
	Hours []Hour
	// Sampled is how many records the processed series and the
	// percentiles come from: the window's newest, at most HealthSample.
	Sampled int
	// P50 and P95 are the sample's time from received to processed, over
	// its processed records; zero when none is.
	P50, P95 time.Duration
}

// Hour is one hour of Health's series.
type Hour struct {
	Start               time.Time
	Received, Processed int
}

// Health counts the records of provider received between since and until
// without scanning the table or reading every record:
//
//   - the window's entries of the by_day index (keys and type only, one
//     Query per shard and day, projected to received_at), counted by hour;
//   - a Select=COUNT Query per shard of each lane of the sparse
//     unprocessed index but the pending one (failed_permanent,
//     dead_lettered, ignored), which reads only those records' entries;
//   - the pending lane's entries, and their records by key, to tell
//     received, processing and failed apart (the pipeline's own work,
//     short unless it is stuck);
//   - the records of the window's newest HealthSample entries by key, for
//     the processed series and the percentiles.
//
// An index entry is about 100 bytes, so a window of N events costs about
// N/80 read units for the counts (eventually consistent, 4 KB per half
// unit), plus half a unit per record read by key: at most HealthSample
// plus the pending ones.
func (e *Events) Health(ctx context.Context, provider string, since, until time.Time) (Health, error) {
	if provider == "" {
		provider = event.ProviderStripe
	}
	h := Health{Since: since, Until: until, ByStatus: map[event.Status]int{}}
	for _, st := range event.Statuses {
		h.ByStatus[st] = 0
	}
	for t := since.UTC().Truncate(time.Hour); !t.After(until); t = t.Add(time.Hour) {
		h.Hours = append(h.Hours, Hour{Start: t})
	}
	entries, err := e.healthEntries(ctx, provider, &h)
	if err != nil {
		return Health{}, err
	}
	h.Received = len(entries)
	if err := e.healthStatuses(ctx, provider, &h); err != nil {
		return Health{}, err
	}
	if err := e.healthSample(ctx, entries, &h); err != nil {
		return Health{}, err
	}
	return h, nil
}

// hour is the index in h.Hours of the hour at falls in; out of range when
// at is outside the window.
func (h *Health) hour(at time.Time) int {
	return int(at.UTC().Sub(h.Since.UTC().Truncate(time.Hour)) / time.Hour)
}

// healthEntries reads every by_day entry of h's window, newest day first,
// shard by shard, and counts each in its hour.
func (e *Events) healthEntries(ctx context.Context, provider string, h *Health) ([]map[string]types.AttributeValue, error) {
	lo, hi := h.Since.UnixMilli(), h.Until.UnixMilli()
	var entries []map[string]types.AttributeValue
	for d := h.Until.UTC().Truncate(24 * time.Hour); !d.Add(24 * time.Hour).Before(h.Since); d = d.AddDate(0, 0, -1) {
		for s := range Shards {
			err := e.queryEntries(ctx, indexDay, attrDayKey, dayKey(provider, d, s), lo, hi, func(it map[string]types.AttributeValue) {
				at := time.UnixMilli(ddbattr.GetN(it, attrReceivedAt))
				if i := h.hour(at); i >= 0 && i < len(h.Hours) {
					h.Hours[i].Received++
				}
				entries = append(entries, it)
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return entries, nil
}

// healthStatuses counts h.Received by status: the settled lanes of the
// unprocessed index by count, the pending lane's records by key (received,
// processing and failed told apart), and processed as what is left.
func (e *Events) healthStatuses(ctx context.Context, provider string, h *Health) error {
	lo, hi := h.Since.UnixMilli(), h.Until.UnixMilli()
	processed := h.Received
	for _, lane := range []string{LaneFailedPermanent, LaneDeadLettered, LaneIgnored} {
		n, err := e.countLane(ctx, provider, lane, lo, hi)
		if err != nil {
			return err
		}
		h.ByStatus[event.Status(lane)] = n
		processed -= n
	}
	var pending []map[string]types.AttributeValue
	for s := range Shards {
		if err := e.queryEntries(ctx, indexUnprocessed, attrLane, laneKey(provider, LanePending, s), lo, hi,
			func(it map[string]types.AttributeValue) { pending = append(pending, it) }); err != nil {
			return err
		}
	}
	recs, err := e.records(ctx, pending, false)
	if err != nil {
		return fmt.Errorf("store: health: %w", err)
	}
	for _, r := range recs {
		if r.Status.Pending() {
			h.ByStatus[r.Status]++
			processed--
		}
	}
	// A record that left a lane between two reads is counted once, not
	// below zero.
	h.ByStatus[event.StatusProcessed] = max(processed, 0)
	return nil
}

// healthSample reads the records of the window's newest HealthSample
// entries by key, for the processed series and the percentiles.
func (e *Events) healthSample(ctx context.Context, entries []map[string]types.AttributeValue, h *Health) error {
	slices.SortFunc(entries, func(a, b map[string]types.AttributeValue) int {
		return int(ddbattr.GetN(b, attrReceivedAt) - ddbattr.GetN(a, attrReceivedAt))
	})
	sample := entries[:min(len(entries), HealthSample)]
	recs, err := e.records(ctx, sample, false)
	if err != nil {
		return fmt.Errorf("store: health: %w", err)
	}
	h.Sampled = len(sample)
	var took []time.Duration
	for _, r := range recs {
		if r.ProcessedAt.IsZero() || r.Status != event.StatusProcessed {
			continue
		}
		if i := h.hour(r.ProcessedAt); i >= 0 && i < len(h.Hours) {
			h.Hours[i].Processed++
		}
		took = append(took, max(r.ProcessedAt.Sub(r.ReceivedAt), 0))
	}
	h.P50, h.P95 = percentile(took, 50), percentile(took, 95)
	return nil
}

// percentile is the nearest-rank p-th percentile of d; zero for none.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := (p*len(d)+99)/100 - 1
	return d[max(i, 0)]
}

// queryEntries reads every entry of one partition of a sharded index
// received between lo and hi (Unix ms), its keys only.
func (e *Events) queryEntries(ctx context.Context, index, hash, key string, lo, hi int64, each func(map[string]types.AttributeValue)) error {
	var from map[string]types.AttributeValue
	for {
		out, err := e.DB.Query(ctx, &dynamodb.QueryInput{
			TableName:                aws.String(e.Table),
			IndexName:                aws.String(index),
			KeyConditionExpression:   aws.String("#k = :k AND #at BETWEEN :lo AND :hi"),
			ProjectionExpression:     aws.String("#pk, #at"),
			ExpressionAttributeNames: map[string]string{"#k": hash, "#at": attrReceivedAt, "#pk": attrPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":k": ddbattr.S(key), ":lo": ddbattr.N(lo), ":hi": ddbattr.N(hi),
			},
			ExclusiveStartKey: from,
		})
		if err != nil {
			return fmt.Errorf("store: health: query %s %s: %w", index, key, err)
		}
		for _, it := range out.Items {
			each(it)
		}
		if from = out.LastEvaluatedKey; len(from) == 0 {
			return nil
		}
	}
}

// countLane counts a lane's entries received between lo and hi, every
// shard, with Select=COUNT: DynamoDB reads the entries and returns none.
func (e *Events) countLane(ctx context.Context, provider, lane string, lo, hi int64) (int, error) {
	n := 0
	for s := range Shards {
		key := laneKey(provider, lane, s)
		var from map[string]types.AttributeValue
		for {
			out, err := e.DB.Query(ctx, &dynamodb.QueryInput{
				TableName:                aws.String(e.Table),
				IndexName:                aws.String(indexUnprocessed),
				KeyConditionExpression:   aws.String("#k = :k AND #at BETWEEN :lo AND :hi"),
				ExpressionAttributeNames: map[string]string{"#k": attrLane, "#at": attrReceivedAt},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":k": ddbattr.S(key), ":lo": ddbattr.N(lo), ":hi": ddbattr.N(hi),
				},
				Select:            types.SelectCount,
				ExclusiveStartKey: from,
			})
			if err != nil {
				return 0, fmt.Errorf("store: health: count %s: %w", key, err)
			}
			n += int(out.Count)
			if from = out.LastEvaluatedKey; len(from) == 0 {
				break
			}
		}
	}
	return n, nil
}

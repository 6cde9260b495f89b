package store

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/defaults"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// DefaultPageSize is the page size of List when the query sets none.
const DefaultPageSize = 50

// MaxPageSize is the largest page List returns.
const MaxPageSize = 1000

// ErrBadCursor: a cursor that List did not make for this query.
var ErrBadCursor = errors.New("store: invalid or foreign page cursor")

// Query selects the records List returns: those of Provider received
// between Since and Until, in Status and of Type when they are set.
type Query struct {
	// Provider is event.ProviderStripe when empty.
	Provider string
	// Status, when set, keeps only records whose current status it is.
	Status event.Status
	// Failing, when set, keeps only records in a status that needs a
	// person (event.Failing): the lanes that hold them are read together,
	// merged newest first. Status must be empty.
	Failing bool
	// Type, when set, keeps only records of that event type.
	Type string
	// Account, when set, keeps only records of that connected account's
	// events (Stripe Connect: the event's account).
	Account string
	// Since and Until bound the time the records were received
	// (inclusive). A zero Until means now; a zero Since, Until less the
	// records' retention (90 days when the store sets none).
	Since, Until time.Time
	// Limit is the page size; DefaultPageSize when zero or less, at most
	// MaxPageSize.
	Limit int
	// Cursor continues a listing: the Next of the previous page, with the
	// same Provider, Status, Type, Account and Since (the first page's Until is
	// kept in it).
	Cursor string
}

// Page is one page of List.
type Page struct {
	// Records are newest first by the time they were received, whole
	// (read from the table by key), without payloads.
	Records []event.Record
	// Next continues the listing; empty on the last page.
	Next string
}

// List returns the records q selects, newest first by the time they were
// received, one page at a time. It is the one way to list events, for
// inboxctl and any console: it never scans the table.
//
//   - Without a status, and for processed records (the common case), it
//     reads the by_day index: one partition per shard per day of the
//     window, newest day first, filtered on the type the index projects.
//   - For any other status, it reads that status's lane of the sparse
//     unprocessed index (received, processing and failed share the pending
//     lane), which holds only such records: listing failed_permanent or
//     dead_lettered events never reads the processed ones.
//
// Both indexes hold keys (and the type), so each page's records are read
// by key (BatchGetItem, eventually consistent) for their status and every
// other field, and those whose status or type does not match are passed
// over. The cursor holds, for each shard read, the key of the last entry
// passed, which is the LastEvaluatedKey DynamoDB would have returned had
// its Query stopped there, and the window's end. A page is full (q.Limit
// records) unless it is the last one, and a full page has a Next only when
// more records follow.
func (e *Events) List(ctx context.Context, q Query) (Page, error) {
	if q.Provider == "" {
		q.Provider = event.ProviderStripe
	}
	limit := q.Limit
	defaults.Set(&limit, DefaultPageSize)
	limit = min(limit, MaxPageSize)
	until := q.Until
	if until.IsZero() {
		until = time.Now()
	}
	if q.Since.IsZero() {
		// No record is older than its retention: the window starts there,
		// not in 1970 (the listing reads a partition per shard and day).
		q.Since = until.Add(-e.listRetention())
	}
	if q.Since.After(until) {
		return Page{}, fmt.Errorf("store: list events: since %s is after until %s", q.Since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	}
	l := &lister{e: e, q: q, limit: limit, lo: q.Since.UnixMilli(), hi: until.UnixMilli()}
	switch {
	case q.Failing && q.Status != "":
		return Page{}, fmt.Errorf("store: list events: both a status (%s) and failing", q.Status)
	case q.Failing:
		l.lanes, l.byLane = failingLanes(), true
	default:
		if lane, ok := Lane(q.Status); ok {
			l.lanes, l.byLane = []string{lane}, true
		}
	}
	if q.Cursor != "" {
		c, err := l.decode(q.Cursor)
		if err != nil {
			return Page{}, err
		}
		l.hi, l.day, l.start = c.Until, c.Day, c.positions
	}
	if !l.byLane && l.day == "" {
		l.day = time.UnixMilli(l.hi).UTC().Format(time.DateOnly)
	}
	return l.list(ctx)
}

// lister is one call of List.
type lister struct {
	e      *Events
	q      Query
	limit  int
	lo, hi int64
	// lanes are the lanes of indexUnprocessed read (byLane), merged.
	lanes  []string
	byLane bool
	// day is the by_day partition day being read; start the shards'
	// positions in it (or in the lane) to resume from.
	day   string
	start []string
}

// listCursor is a cursor's content.
type listCursor struct {
	// Query is a hash of what the listing selects, so that a cursor of
	// another listing is refused.
	Query string `json:"q"`
	// Until is the first page's end of the window, Unix ms.
	Until int64 `json:"u"`
	// Day is the by_day day being read; empty for a lane.
	Day string `json:"d,omitempty"`
	// Positions are each shard's position (encodePosition).
	Positions []string `json:"p"`

	positions []string
}

func (l *lister) fingerprint() string {
	// Not the window's start: a relative --since moves between pages, and
	// decode checks the cursor's day against it.
	what := string(l.q.Status)
	if l.q.Failing {
		what = "failing"
	}
	q := l.q.Provider + "\x00" + what + "\x00" + l.q.Type
	if l.q.Account != "" {
		// Only when set, so that cursors made before the filter stay good.
		q += "\x00account=" + l.q.Account
	}
	sum := sha256.Sum256([]byte(q))
	return hex.EncodeToString(sum[:6])
}

func (l *lister) encode(day string, positions []map[string]types.AttributeValue) string {
	c := listCursor{Query: l.fingerprint(), Until: l.hi, Day: day}
	for _, p := range positions {
		c.Positions = append(c.Positions, encodePosition(p))
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (l *lister) decode(v string) (listCursor, error) {
	var c listCursor
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Query != l.fingerprint() || len(c.Positions) != l.partitions() || c.Until < l.lo {
		return c, ErrBadCursor
	}
	if !l.byLane {
		d, err := time.Parse(time.DateOnly, c.Day)
		if err != nil || d.UnixMilli() > c.Until || d.AddDate(0, 0, 1).UnixMilli() <= l.lo {
			return c, ErrBadCursor
		}
	} else if c.Day != "" {
		return c, ErrBadCursor
	}
	c.positions = c.Positions
	return c, nil
}

// source is the sharded partitions of one stretch of the listing: a
// lane, or one day of by_day.
func (l *lister) source(day string) (*shards, error) {
	keys := make([]string, l.partitions())
	hash, index := attrLane, indexUnprocessed
	var d time.Time
	if !l.byLane {
		hash, index = attrDayKey, indexDay
		var err error
		if d, err = time.Parse(time.DateOnly, day); err != nil {
			return nil, ErrBadCursor
		}
	}
	var positions []map[string]types.AttributeValue
	for s := range keys {
		if l.byLane {
			keys[s] = laneKey(l.q.Provider, l.lanes[s/Shards], s%Shards)
		} else {
			keys[s] = dayKey(l.q.Provider, d, s)
		}
		if l.start != nil {
			p, err := decodePosition(l.start[s], l.q.Provider, hash, keys[s])
			if err != nil {
				return nil, err
			}
			positions = append(positions, p)
		}
	}
	m := l.e.newShards(index, hash, keys, positions, l.lo, l.hi, true)
	m.limit = int32(min(l.limit+1, 100))
	if !l.byLane {
		m.typ = l.q.Type
	}
	return m, nil
}

// matches reports whether a record read by key belongs in the listing.
func (l *lister) matches(r event.Record) bool {
	return (l.q.Status == "" || r.Status == l.q.Status) && (!l.q.Failing || r.Status.IsFailing()) && (l.q.Type == "" || r.Type == l.q.Type) &&
		(l.q.Account == "" || r.Account == l.q.Account)
}

// partitions is how many partitions a stretch of the listing reads: a
// shard each of every lane read, or of one day.
func (l *lister) partitions() int { return Shards * max(len(l.lanes), 1) }

// failingLanes are the lanes that hold the statuses of event.Failing.
func failingLanes() []string {
	var out []string
	for _, st := range event.Failing {
		if lane, ok := Lane(st); ok && !slices.Contains(out, lane) {
			out = append(out, lane)
		}
	}
	return out
}

func (l *lister) list(ctx context.Context) (Page, error) {
	page := Page{Records: []event.Record{}}
	day := l.day
	for {
		src, err := l.source(day)
		if err != nil {
			return Page{}, err
		}
		l.start = nil
		var full []map[string]types.AttributeValue // positions after the page's last record
		for {
			// Candidates in order, a batch at a time, then their records.
			// As many as the page still needs, and one to know whether
			// another page follows; more when records are passed over.
			want := min(maxBatchGet, l.limit+1-len(page.Records))
			var batch []map[string]types.AttributeValue
			var after [][]map[string]types.AttributeValue
			for len(batch) < want {
				entry, _, ok, err := src.next(ctx)
				if err != nil {
					return Page{}, err
				}
				if !ok {
					break
				}
				batch = append(batch, entry)
				after = append(after, src.positions())
			}
			if len(batch) == 0 {
				break
			}
			recs, err := l.e.records(ctx, batch, false)
			if err != nil {
				return Page{}, err
			}
			for i, entry := range batch {
				r, ok := recs[ddbattr.GetS(entry, attrPK)]
				if !ok || !l.matches(r) {
					continue
				}
				if full != nil {
					// One more record follows the full page.
					page.Next = l.encode(l.dayOf(day), full)
					return page, nil
				}
				page.Records = append(page.Records, r)
				if len(page.Records) == l.limit {
					full = after[i]
				}
			}
		}
		if l.byLane {
			return page, nil
		}
		d, _ := time.Parse(time.DateOnly, day)
		prev := d.AddDate(0, 0, -1)
		if prev.AddDate(0, 0, 1).UnixMilli() <= l.lo {
			return page, nil
		}
		if full != nil {
			// The page ended with this day; more may follow on earlier
			// days: find one before handing out a cursor.
			if more, err := l.anyFrom(ctx, prev); err != nil || !more {
				return page, err
			}
			page.Next = l.encode(l.dayOf(day), full)
			return page, nil
		}
		day = prev.Format(time.DateOnly)
	}
}

// listRetention is how far back records go, for a listing with no start.
func (e *Events) listRetention() time.Duration {
	if e.Retention > 0 {
		return e.Retention
	}
	return 90 * 24 * time.Hour
}

func (l *lister) dayOf(day string) string {
	if l.byLane {
		return ""
	}
	return day
}

// anyFrom reports whether a matching record was received on day or
// earlier within the window.
func (l *lister) anyFrom(ctx context.Context, day time.Time) (bool, error) {
	probe := *l
	probe.limit = 1
	probe.start = nil
	for d := day; d.AddDate(0, 0, 1).UnixMilli() > l.lo; d = d.AddDate(0, 0, -1) {
		src, err := probe.source(d.Format(time.DateOnly))
		if err != nil {
			return false, err
		}
		for {
			entry, _, ok, err := src.next(ctx)
			if err != nil || !ok {
				if err != nil {
					return false, err
				}
				break
			}
			recs, err := l.e.records(ctx, []map[string]types.AttributeValue{entry}, false)
			if err != nil {
				return false, err
			}
			if r, ok := recs[ddbattr.GetS(entry, attrPK)]; ok && l.matches(r) {
				return true, nil
			}
		}
	}
	return false, nil
}

// records reads the records of entries (index entries or keys: their pk)
// by key, at most maxBatchGet at a time, by their pk. Keys whose record is
// gone (expired) are left out.
func (e *Events) records(ctx context.Context, entries []map[string]types.AttributeValue, consistent bool) (map[string]event.Record, error) {
	out := map[string]event.Record{}
	seen := map[string]bool{}
	var keys []map[string]types.AttributeValue
	for _, it := range entries {
		pk := ddbattr.GetS(it, attrPK)
		if pk == "" || seen[pk] {
			continue
		}
		seen[pk] = true
		keys = append(keys, map[string]types.AttributeValue{attrPK: ddbattr.S(pk)})
	}
	for start := 0; start < len(keys); start += maxBatchGet {
		err := e.batchGet(ctx, types.KeysAndAttributes{Keys: keys[start:min(start+maxBatchGet, len(keys))], ConsistentRead: aws.Bool(consistent)},
			func(item map[string]types.AttributeValue) { out[ddbattr.GetS(item, attrPK)] = Unmarshal(item) })
		if err != nil {
			return nil, fmt.Errorf("store: read %d events: %w", len(keys), err)
		}
	}
	return out, nil
}

// ByObject returns the events about objectID, oldest first by the
// provider's created time, whole (without payloads). The by_object index
// holds their keys; the records are read by key. Every page of the index
// is read. Events created in the same second come in the order of their
// ids, the order in which the mirror's guard applies them (the index itself
// leaves equal sort keys in no particular order).
func (e *Events) ByObject(ctx context.Context, objectID string) ([]event.Record, error) {
	var entries []map[string]types.AttributeValue
	var start map[string]types.AttributeValue
	for {
		res, err := e.DB.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(e.Table),
			IndexName:                 aws.String(indexObject),
			KeyConditionExpression:    aws.String("object_id = :id"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": ddbattr.S(objectID)},
			ScanIndexForward:          aws.Bool(true),
			ExclusiveStartKey:         start,
		})
		if err != nil {
			return nil, fmt.Errorf("store: list events of object %s: %w", objectID, err)
		}
		entries = append(entries, res.Items...)
		if start = res.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	recs, err := e.records(ctx, entries, false)
	if err != nil {
		return nil, fmt.Errorf("store: list events of object %s: %w", objectID, err)
	}
	out := make([]event.Record, 0, len(recs))
	for _, r := range recs {
		out = append(out, r)
	}
	sortByCreated(out)
	return out, nil
}

// sortByCreated orders records by the provider's created time, then id:
// the order in which the mirror's guard applies them.
func sortByCreated(rs []event.Record) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Created != rs[j].Created {
			return rs[i].Created < rs[j].Created
		}
		return rs[i].ID < rs[j].ID
	})
}

// CustomerEvents is the answer of ByCustomer.
type CustomerEvents struct {
	// Records are newest first by the provider's created time (then id),
	// whole, without payloads.
	Records []event.Record
	// More: the customer has more events than the limit asked for.
	More bool
}

// ByCustomer returns the events that concern customer of account ("" for
// the platform's own), whatever their status (a dead-lettered or failed
// event, never applied to the mirror, included) and their object: the
// customer's own events (by_object, keyed by the customer's id) and those
// of its other objects (by_customer_id, written by the receiver from
// data.object.customer). At most limit records (every one when limit is
// zero or less), newest first by the provider's created time.
//
// It never scans: it reads both indexes' entries for the customer id
// (keys only: a few hundred entries per read unit) and sorts them by
// created, then reads the records by key, newest first, at most
// maxBatchGet at a time, until limit records of account are found. A
// customer id is unique only within its account, so records of another
// account are passed over (the indexes do not hold the account).
func (e *Events) ByCustomer(ctx context.Context, account, customer string, limit int) (CustomerEvents, error) {
	var entries []map[string]types.AttributeValue
	for _, ix := range []struct{ index, attr string }{{indexObject, attrObjectID}, {indexCustomer, attrCustomerID}} {
		var start map[string]types.AttributeValue
		for {
			res, err := e.DB.Query(ctx, &dynamodb.QueryInput{
				TableName:                 aws.String(e.Table),
				IndexName:                 aws.String(ix.index),
				KeyConditionExpression:    aws.String("#k = :id"),
				ExpressionAttributeNames:  map[string]string{"#k": ix.attr},
				ExpressionAttributeValues: map[string]types.AttributeValue{":id": ddbattr.S(customer)},
				ScanIndexForward:          aws.Bool(false),
				ExclusiveStartKey:         start,
			})
			if err != nil {
				return CustomerEvents{}, fmt.Errorf("store: list events of customer %s: %w", customer, err)
			}
			entries = append(entries, res.Items...)
			if start = res.LastEvaluatedKey; len(start) == 0 {
				break
			}
		}
	}
	// Newest first; equal times by key, so that a page is stable.
	sort.SliceStable(entries, func(i, j int) bool {
		ci, cj := ddbattr.GetN(entries[i], attrCreated), ddbattr.GetN(entries[j], attrCreated)
		if ci != cj {
			return ci > cj
		}
		return ddbattr.GetS(entries[i], attrPK) > ddbattr.GetS(entries[j], attrPK)
	})
	var out CustomerEvents
	for start := 0; start < len(entries); start += maxBatchGet {
		if limit > 0 && len(out.Records) >= limit {
			out.More = true
			break
		}
		chunk := entries[start:min(start+maxBatchGet, len(entries))]
		recs, err := e.records(ctx, chunk, false)
		if err != nil {
			return CustomerEvents{}, fmt.Errorf("store: list events of customer %s: %w", customer, err)
		}
		for _, it := range chunk {
			r, ok := recs[ddbattr.GetS(it, attrPK)]
			if !ok || r.Account != account {
				continue
			}
			delete(recs, ddbattr.GetS(it, attrPK)) // an event in both indexes counts once
			if limit > 0 && len(out.Records) == limit {
				out.More = true
				break
			}
			out.Records = append(out.Records, r)
		}
	}
	sort.SliceStable(out.Records, func(i, j int) bool {
		if out.Records[i].Created != out.Records[j].Created {
			return out.Records[i].Created > out.Records[j].Created
		}
		return out.Records[i].ID > out.Records[j].ID
	})
	return out, nil
}

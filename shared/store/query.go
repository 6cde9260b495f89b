package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
)

// DefaultPageSize is the page size of ListByStatus when the query sets none.
const DefaultPageSize = 50

// ErrBadCursor: a cursor that ListByStatus did not make for this query.
var ErrBadCursor = errors.New("store: invalid or foreign page cursor")

// StatusQuery selects the records ListByStatus returns.
type StatusQuery struct {
	Status event.Status
	// Since and Until bound the time of the records' last transition
	// (inclusive). A zero Until means now.
	Since, Until time.Time
	// Type, when set, keeps only records of that event type.
	Type string
	// Limit is the page size; DefaultPageSize when zero or less.
	Limit int
	// Cursor continues a listing: the Next of the previous page, with the
	// same Status, Since, Until and Type.
	Cursor string
}

// StatusPage is one page of ListByStatus.
type StatusPage struct {
	// Records are newest first (by the time of their last transition), as
	// the by_status index projects them: id, provider, type, created,
	// status, status_at, source, attempts, outcome, last_error,
	// received_at, object_id. Payloads and leases are not projected.
	Records []event.Record
	// Next continues the listing; empty on the last page.
	Next string
}

// cursor is where a page ended: the index key of its last record.
type cursor struct {
	Status   string `json:"s"`
	Day      string `json:"d"`
	PK       string `json:"k"`
	StatusAt int64  `json:"t"`
}

// ListByStatus returns the records whose current status is q.Status and
// whose last transition falls between q.Since and q.Until, newest first, one
// page at a time. The by_status index is partitioned by status and day, so it
// reads one partition per day of the window, from the newest day back, and
// never scans the table. A page is full (q.Limit records) unless it is the
// last one, and a full page has a Next only when more records follow.
func (e *Events) ListByStatus(ctx context.Context, q StatusQuery) (StatusPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultPageSize
	}
	until := q.Until
	if until.IsZero() {
		until = time.Now()
	}
	if q.Since.After(until) {
		return StatusPage{}, fmt.Errorf("store: list %s events: since %s is after until %s", q.Status, q.Since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	}
	day := startOfDay(until)
	var start map[string]types.AttributeValue
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil || c.Status != string(q.Status) {
			return StatusPage{}, ErrBadCursor
		}
		d, err := time.Parse(time.DateOnly, c.Day)
		if err != nil || d.After(day) || d.Before(startOfDay(q.Since)) {
			return StatusPage{}, ErrBadCursor
		}
		day = d
		start = map[string]types.AttributeValue{
			attrPK:        ddbattr.S(c.PK),
			attrStatusDay: ddbattr.S(statusDay(q.Status, d)),
			attrStatusAt:  ddbattr.N(c.StatusAt),
		}
	}

	// One record more than the page, to know whether a next page exists
	// without handing out a cursor to an empty page.
	want := limit + 1
	var got []map[string]types.AttributeValue
	var gotDay []time.Time
	for ; !day.Before(startOfDay(q.Since)) && len(got) < want; day = day.AddDate(0, 0, -1) {
		for {
			in := &dynamodb.QueryInput{
				TableName:              aws.String(e.Table),
				IndexName:              aws.String(indexStatus),
				KeyConditionExpression: aws.String("status_day = :day AND status_at BETWEEN :since AND :until"),
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":day":   ddbattr.S(statusDay(q.Status, day)),
					":since": ddbattr.Millis(q.Since),
					":until": ddbattr.Millis(until),
				},
				ScanIndexForward:  aws.Bool(false),
				ExclusiveStartKey: start,
				Limit:             aws.Int32(int32(want - len(got))),
			}
			if q.Type != "" {
				in.FilterExpression = aws.String("#type = :type")
				in.ExpressionAttributeNames = map[string]string{"#type": attrType}
				in.ExpressionAttributeValues[":type"] = ddbattr.S(q.Type)
			}
			out, err := e.DB.Query(ctx, in)
			if err != nil {
				return StatusPage{}, fmt.Errorf("store: list %s events of %s: %w", q.Status, day.Format(time.DateOnly), err)
			}
			for _, item := range out.Items {
				got = append(got, item)
				gotDay = append(gotDay, day)
			}
			start = out.LastEvaluatedKey
			if len(start) == 0 || len(got) >= want {
				break
			}
		}
		start = nil
	}

	var page StatusPage
	if len(got) > limit {
		last := got[limit-1]
		page.Next = encodeCursor(cursor{
			Status:   string(q.Status),
			Day:      gotDay[limit-1].Format(time.DateOnly),
			PK:       ddbattr.GetS(last, attrPK),
			StatusAt: ddbattr.GetN(last, attrStatusAt),
		})
		got = got[:limit]
	}
	page.Records = make([]event.Record, 0, len(got))
	for _, item := range got {
		r, err := Unmarshal(item)
		if err != nil {
			return StatusPage{}, err
		}
		page.Records = append(page.Records, r)
	}
	return page, nil
}

func startOfDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(v string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, err
	}
	if c.PK == "" || c.Day == "" {
		return c, ErrBadCursor
	}
	return c, nil
}

// ByObject returns the events about objectID, oldest first by the
// provider's created time, as the by_object index projects them: provider,
// id, type, created, object_id, status and outcome. Every page of the index
// is read. Events created in the same second come in the order of their
// ids, the order in which the mirror's guard applies them (the index itself
// leaves equal sort keys in no particular order).
func (e *Events) ByObject(ctx context.Context, objectID string) ([]event.Record, error) {
	var out []event.Record
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
		for _, item := range res.Items {
			r, err := Unmarshal(item)
			if err != nil {
				return nil, err
			}
			if r.Provider == "" {
				// The index does not project provider; the key carries it.
				r.Provider, _, _ = strings.Cut(ddbattr.GetS(item, attrPK), "#")
			}
			out = append(out, r)
		}
		if start = res.LastEvaluatedKey; len(start) == 0 {
			sortByCreated(out)
			return out, nil
		}
	}
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

// Reopen moves a failed_permanent record back to failed, so that the
// processor claims it on the next message that points to it. It is an
// operator's decision, made after fixing what made the event fail (inboxctl
// replay --force), and the only way out of failed_permanent. It is
// conditioned on the record still being failed_permanent: otherwise it
// returns a *NotClaimableError holding the record as it stands, or
// ErrNotFound. The last error is kept for the record's history.
func (e *Events) Reopen(ctx context.Context, provider, id string, now time.Time) (event.Record, error) {
	out, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table),
		Key:       e.key(provider, id),
		UpdateExpression: aws.String("SET #st = :failed, status_at = :now, status_day = :day, " +
			"pending_shard = provider"),
		ConditionExpression:      aws.String("#st = :permanent"),
		ExpressionAttributeNames: map[string]string{"#st": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":failed":    ddbattr.S(string(event.StatusFailed)),
			":permanent": ddbattr.S(string(event.StatusFailedPermanent)),
			":now":       ddbattr.Millis(now),
			":day":       ddbattr.S(statusDay(event.StatusFailed, now)),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return transitioned(out, err, "reopen", id)
}

package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// A sharded index key is read as Shards partitions, one Query each, and
// their entries merged by received_at (the sort key of both sharded
// indexes): shards is that merge. Each shard remembers the key of the
// last entry handed out (pos), which is exactly the ExclusiveStartKey a
// Query that had stopped there would have returned as its
// LastEvaluatedKey, so a listing resumes from a cursor holding one such
// key per shard, and DynamoDB's own pagination does the rest.
type shards struct {
	e      *Events
	index  string
	hash   string // the index's partition-key attribute
	parts  []*part
	lo, hi int64 // received_at bounds, Unix ms, inclusive
	desc   bool  // newest first
	// typ, when set, filters on the type projected into the index.
	typ string
	// limit is each Query's page size.
	limit int32
}

// part is one shard's partition of the index.
type part struct {
	key  string                          // its partition-key value
	pos  map[string]types.AttributeValue // last entry handed out; nil: none yet
	from map[string]types.AttributeValue // ExclusiveStartKey of the next Query
	buf  []map[string]types.AttributeValue
	// fetched: a Query was made; with from nil, the partition is read to
	// its end.
	fetched bool
}

func (p *part) exhausted() bool { return p.fetched && p.from == nil && len(p.buf) == 0 }

// newShards reads the partitions keys of index; positions, when not nil,
// resume each from a cursor's position (nil: from its start).
func (e *Events) newShards(index, hash string, keys []string, positions []map[string]types.AttributeValue, lo, hi int64, desc bool) *shards {
	m := &shards{e: e, index: index, hash: hash, lo: lo, hi: hi, desc: desc, limit: 100}
	for i, k := range keys {
		p := &part{key: k}
		if i < len(positions) && positions[i] != nil {
			p.pos, p.from = positions[i], positions[i]
		}
		m.parts = append(m.parts, p)
	}
	return m
}

// next returns the next entry in received_at order and the index of its
// shard; ok is false when every partition is read to its end.
func (m *shards) next(ctx context.Context) (entry map[string]types.AttributeValue, shard int, ok bool, err error) {
	best := -1
	var bestAt int64
	for i, p := range m.parts {
		for len(p.buf) == 0 && !p.exhausted() {
			if err := m.fetch(ctx, p); err != nil {
				return nil, 0, false, err
			}
		}
		if len(p.buf) == 0 {
			continue
		}
		at := ddbattr.GetN(p.buf[0], attrReceivedAt)
		if best < 0 || (m.desc && at > bestAt) || (!m.desc && at < bestAt) {
			best, bestAt = i, at
		}
	}
	if best < 0 {
		return nil, 0, false, nil
	}
	p := m.parts[best]
	entry, p.buf = p.buf[0], p.buf[1:]
	p.pos = m.keyOf(entry)
	return entry, best, true, nil
}

// keyOf is an entry's key in the index: the table's key and the index's.
func (m *shards) keyOf(entry map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: entry[attrPK], m.hash: entry[m.hash], attrReceivedAt: entry[attrReceivedAt]}
}

func (m *shards) fetch(ctx context.Context, p *part) error {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(m.e.Table),
		IndexName:                aws.String(m.index),
		KeyConditionExpression:   aws.String("#k = :k AND #at BETWEEN :lo AND :hi"),
		ExpressionAttributeNames: map[string]string{"#k": m.hash, "#at": attrReceivedAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":k": ddbattr.S(p.key), ":lo": ddbattr.N(m.lo), ":hi": ddbattr.N(m.hi),
		},
		ScanIndexForward:  aws.Bool(!m.desc),
		ExclusiveStartKey: p.from,
		Limit:             aws.Int32(m.limit),
	}
	if m.typ != "" {
		in.FilterExpression = aws.String("#type = :type")
		in.ExpressionAttributeNames["#type"] = attrType
		in.ExpressionAttributeValues[":type"] = ddbattr.S(m.typ)
	}
	out, err := m.e.DB.Query(ctx, in)
	if err != nil {
		return fmt.Errorf("store: query %s %s: %w", m.index, p.key, err)
	}
	p.fetched = true
	p.buf = append(p.buf, out.Items...)
	p.from = out.LastEvaluatedKey
	if len(p.from) == 0 {
		p.from = nil
	}
	return nil
}

// positions are the shards' positions, for a cursor.
func (m *shards) positions() []map[string]types.AttributeValue {
	out := make([]map[string]types.AttributeValue, len(m.parts))
	for i, p := range m.parts {
		out[i] = p.pos
	}
	return out
}

// encodePosition writes a shard's position in a cursor: its received_at
// in base 36, a dot and the event's id; "" for none. The provider and the
// partition key are the query's.
func encodePosition(pos map[string]types.AttributeValue) string {
	if pos == nil {
		return ""
	}
	_, id, _ := strings.Cut(ddbattr.GetS(pos, attrPK), "#")
	return strconv.FormatInt(ddbattr.GetN(pos, attrReceivedAt), 36) + "." + id
}

// decodePosition reads what encodePosition wrote, for provider's events
// and the partition key value key of hash.
func decodePosition(v, provider, hash, key string) (map[string]types.AttributeValue, error) {
	if v == "" {
		return nil, nil
	}
	at, id, ok := strings.Cut(v, ".")
	t, err := strconv.ParseInt(at, 36, 64)
	if !ok || err != nil || id == "" {
		return nil, ErrBadCursor
	}
	return map[string]types.AttributeValue{attrPK: ddbattr.S(event.Key(provider, id)), hash: ddbattr.S(key), attrReceivedAt: ddbattr.N(t)}, nil
}

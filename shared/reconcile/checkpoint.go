package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/stripeapi"
)

// ErrCheckpointMoved means another run wrote the checkpoint since this run
// read it. The run stops: the other one is ahead, or at the same place.
var ErrCheckpointMoved = errors.New("reconcile: checkpoint moved by another run")

// Group is a set of event types listed together: at most stripeapi.MaxTypes.
type Group struct {
	Types []string
	// Key is the checkpoint's partition key: "checkpoint#<provider>#" and a
	// hash of the sorted types, so a change to the set of handled types
	// starts a fresh checkpoint instead of trusting one that never covered
	// the new types.
	Key string
}

// Groups splits types into groups of at most stripeapi.MaxTypes, sorted and
// without duplicates, so the same set always makes the same groups.
func Groups(provider string, types []string) []Group {
	sorted := slices.Clone(types)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	sorted = slices.DeleteFunc(sorted, func(t string) bool { return strings.TrimSpace(t) == "" })
	var out []Group
	for chunk := range slices.Chunk(sorted, stripeapi.MaxTypes) {
		sum := sha256.Sum256([]byte(strings.Join(chunk, ",")))
		out = append(out, Group{Types: chunk, Key: "checkpoint#" + provider + "#" + hex.EncodeToString(sum[:8])})
	}
	return out
}

// Checkpoint is how far a group's reconciliation has come. It lives in the
// events table under a key that can never be an event's ("checkpoint#..."
// where events are "<provider>#<id>"), carries none of the indexes'
// attributes and no TTL, so it stays out of every index and is kept.
type Checkpoint struct {
	Key   string
	Types []string
	// DoneThrough: every event of these types created at or before this
	// time (Unix seconds) has been compared with the store. Zero: never.
	DoneThrough int64
	// The window in progress, [WindowFrom, WindowTo] (Unix seconds), listed
	// newest first; WindowTo is zero when none is. Cursor is the oldest
	// event of the window handled so far, where the listing resumes, and
	// CursorCreated its creation time; both empty before the first page.
	WindowFrom, WindowTo int64
	Cursor               string
	CursorCreated        int64
	// Seq counts the writes; each write is conditioned on the Seq it read.
	Seq       int64
	UpdatedAt time.Time
	RunID     string
}

// inProgress reports whether a window is being worked on.
func (c Checkpoint) inProgress() bool { return c.WindowTo != 0 }

// Attribute names of a checkpoint item.
const (
	attrPK            = "pk"
	attrKind          = "kind"
	attrTypes         = "types"
	attrDoneThrough   = "done_through"
	attrWindowFrom    = "window_from"
	attrWindowTo      = "window_to"
	attrCursor        = "cursor"
	attrCursorCreated = "cursor_created"
	attrSeq           = "seq"
	attrUpdatedAt     = "updated_at"
	attrRunID         = "run_id"

	kindCheckpoint = "reconcile_checkpoint"
)

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func nv(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// LoadCheckpoint reads a group's checkpoint with a strongly consistent read;
// a group never reconciled has the zero Checkpoint (with its Key and Types).
func (r *Reconciler) LoadCheckpoint(ctx context.Context, g Group) (Checkpoint, error) {
	out, err := r.cfg.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.cfg.Table),
		Key:            map[string]types.AttributeValue{attrPK: sv(g.Key)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("reconcile: read checkpoint %s: %w", g.Key, err)
	}
	c := Checkpoint{Key: g.Key, Types: g.Types}
	if len(out.Item) == 0 {
		return c, nil
	}
	num := func(k string) int64 {
		if v, ok := out.Item[k].(*types.AttributeValueMemberN); ok {
			n, _ := strconv.ParseInt(v.Value, 10, 64)
			return n
		}
		return 0
	}
	str := func(k string) string {
		if v, ok := out.Item[k].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	c.DoneThrough = num(attrDoneThrough)
	c.WindowFrom = num(attrWindowFrom)
	c.WindowTo = num(attrWindowTo)
	c.Cursor = str(attrCursor)
	c.CursorCreated = num(attrCursorCreated)
	c.Seq = num(attrSeq)
	c.UpdatedAt = time.UnixMilli(num(attrUpdatedAt))
	c.RunID = str(attrRunID)
	return c, nil
}

// saveCheckpoint writes next in place of the checkpoint whose Seq was
// prev.Seq, and returns next as written. It fails with ErrCheckpointMoved
// when another write came first.
func (r *Reconciler) saveCheckpoint(ctx context.Context, prev, next Checkpoint, now time.Time, runID string) (Checkpoint, error) {
	// Progress only goes forward; a state computed from prev can never do
	// otherwise, and this says so should that ever change.
	if next.DoneThrough < prev.DoneThrough {
		return prev, fmt.Errorf("reconcile: checkpoint %s: done_through would go back from %d to %d", prev.Key, prev.DoneThrough, next.DoneThrough)
	}
	next.Seq = prev.Seq + 1
	next.UpdatedAt = now
	next.RunID = runID
	typeList := make([]types.AttributeValue, len(next.Types))
	for i, t := range next.Types {
		typeList[i] = sv(t)
	}
	item := map[string]types.AttributeValue{
		attrPK:          sv(next.Key),
		attrKind:        sv(kindCheckpoint),
		attrTypes:       &types.AttributeValueMemberL{Value: typeList},
		attrDoneThrough: nv(next.DoneThrough),
		attrSeq:         nv(next.Seq),
		attrUpdatedAt:   nv(now.UnixMilli()),
		attrRunID:       sv(runID),
	}
	if next.inProgress() {
		item[attrWindowFrom] = nv(next.WindowFrom)
		item[attrWindowTo] = nv(next.WindowTo)
		if next.Cursor != "" {
			item[attrCursor] = sv(next.Cursor)
			item[attrCursorCreated] = nv(next.CursorCreated)
		}
	}
	in := &dynamodb.PutItemInput{
		TableName: aws.String(r.cfg.Table),
		Item:      item,
	}
	if prev.Seq == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		in.ConditionExpression = aws.String("seq = :seq")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":seq": nv(prev.Seq)}
	}
	_, err := r.cfg.DB.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return prev, ErrCheckpointMoved
	}
	if err != nil {
		return prev, fmt.Errorf("reconcile: write checkpoint %s: %w", next.Key, err)
	}
	return next, nil
}

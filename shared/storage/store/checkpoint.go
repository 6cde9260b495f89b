package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// ErrCheckpointMoved means another write replaced the checkpoint since the
// caller read it.
var ErrCheckpointMoved = errors.New("store: checkpoint moved by another run")

// Checkpoint is how far the reconciliation of one group of event types has
// come (package reconcile says what each field means to it).
type Checkpoint struct {
	// Name identifies the checkpoint; package reconcile names it after its
	// provider and group of types.
	Name  string
	Types []string
	// DoneThrough: every event of these types created at or before this
	// time (Unix seconds) has been compared with the store. Zero: never.
	DoneThrough int64
	// HistoryBefore is when this group's reconciliation started (Unix
	// seconds), set once by its first run and never changed: events
	// created before it are history, which only an explicit backfill
	// lists. Zero for a checkpoint written before it was kept: no history.
	HistoryBefore int64
	// The window in progress, [WindowFrom, WindowTo] (Unix seconds), listed
	// newest first; WindowTo is zero when none is. Cursor is the oldest
	// event of the window handled so far, where the listing resumes, and
	// CursorCreated its creation time; both empty before the first page.
	WindowFrom, WindowTo int64
	Cursor               string
	CursorCreated        int64
	// Seq counts the writes; each write is conditioned on the Seq it read.
	Seq int64
	// UpdatedAt and RunID say when and by which run it was written.
	UpdatedAt time.Time
	RunID     string
}

// InProgress reports whether a window is being worked on.
func (c Checkpoint) InProgress() bool { return c.WindowTo != 0 }

// Checkpoints keeps the reconciler's checkpoints. They live in the events
// table, one item each under a key that can never be an event's
// ("checkpoint#<name>" where events are "<provider>#<id>"), carrying none of
// the indexes' attributes and no TTL, so they stay out of every index and
// are kept. It needs dynamodb:GetItem and dynamodb:PutItem on the table.
type Checkpoints struct {
	DB    DynamoDB
	Table string
}

// prefixCheckpoint starts the key of every checkpoint item.
const prefixCheckpoint = "checkpoint#"

// kindCheckpoint marks a checkpoint item (attrKind), for an operator
// reading the table.
const kindCheckpoint = "reconcile_checkpoint"

// Attribute names of a checkpoint item.
const (
	attrKind          = "kind"
	attrTypes         = "types"
	attrDoneThrough   = "done_through"
	attrHistory       = "history_before"
	attrWindowFrom    = "window_from"
	attrWindowTo      = "window_to"
	attrCursor        = "cursor"
	attrCursorCreated = "cursor_created"
	attrSeq           = "seq"
	attrUpdatedAt     = "updated_at" // Unix milliseconds
	attrRunID         = "run_id"
)

func (c *Checkpoints) key(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(prefixCheckpoint + name)}
}

// Load reads checkpoint name with a strongly consistent read. One never
// written is the zero Checkpoint, with its Name.
func (c *Checkpoints) Load(ctx context.Context, name string) (Checkpoint, error) {
	out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(c.Table),
		Key:            c.key(name),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("store: read checkpoint %s: %w", name, err)
	}
	cp := Checkpoint{Name: name}
	if len(out.Item) == 0 {
		return cp, nil
	}
	it := out.Item
	cp.Types = ddbattr.GetStrings(it, attrTypes)
	cp.DoneThrough = ddbattr.GetN(it, attrDoneThrough)
	cp.HistoryBefore = ddbattr.GetN(it, attrHistory)
	cp.WindowFrom, cp.WindowTo = ddbattr.GetN(it, attrWindowFrom), ddbattr.GetN(it, attrWindowTo)
	cp.Cursor, cp.CursorCreated = ddbattr.GetS(it, attrCursor), ddbattr.GetN(it, attrCursorCreated)
	cp.Seq = ddbattr.GetN(it, attrSeq)
	cp.UpdatedAt = time.UnixMilli(ddbattr.GetN(it, attrUpdatedAt))
	cp.RunID = ddbattr.GetS(it, attrRunID)
	return cp, nil
}

// Save writes next in place of prev, the checkpoint as the caller read it,
// and returns next as written: with Seq one more than prev's. The write is
// conditioned on prev's Seq (on there being no checkpoint when prev.Seq is
// zero), so two runs can never both replace the state they read: the one
// that comes second gets ErrCheckpointMoved and nothing is written.
// Progress only goes forward: a next.DoneThrough before prev's is an error,
// and so is a HistoryBefore other than prev's, once set.
func (c *Checkpoints) Save(ctx context.Context, prev, next Checkpoint) (Checkpoint, error) {
	if next.DoneThrough < prev.DoneThrough {
		return prev, fmt.Errorf("store: checkpoint %s: done_through would go back from %d to %d", prev.Name, prev.DoneThrough, next.DoneThrough)
	}
	if prev.HistoryBefore != 0 && next.HistoryBefore != prev.HistoryBefore {
		return prev, fmt.Errorf("store: checkpoint %s: history_before would change from %d to %d", prev.Name, prev.HistoryBefore, next.HistoryBefore)
	}
	next.Seq = prev.Seq + 1
	item := map[string]types.AttributeValue{
		attrPK:          ddbattr.S(prefixCheckpoint + next.Name),
		attrKind:        ddbattr.S(kindCheckpoint),
		attrTypes:       ddbattr.Strings(next.Types),
		attrDoneThrough: ddbattr.N(next.DoneThrough),
		attrSeq:         ddbattr.N(next.Seq),
		attrUpdatedAt:   ddbattr.Millis(next.UpdatedAt),
		attrRunID:       ddbattr.S(next.RunID),
	}
	if next.HistoryBefore != 0 {
		item[attrHistory] = ddbattr.N(next.HistoryBefore)
	}
	// The window only while one is in progress; the cursor only once a
	// page of it is handled.
	if next.InProgress() {
		item[attrWindowFrom] = ddbattr.N(next.WindowFrom)
		item[attrWindowTo] = ddbattr.N(next.WindowTo)
		if next.Cursor != "" {
			item[attrCursor] = ddbattr.S(next.Cursor)
			item[attrCursorCreated] = ddbattr.N(next.CursorCreated)
		}
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(c.Table), Item: item}
	if prev.Seq == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(" + attrPK + ")")
	} else {
		in.ConditionExpression = aws.String(attrSeq + " = :seq")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":seq": ddbattr.N(prev.Seq)}
	}
	_, err := c.DB.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return prev, ErrCheckpointMoved
	}
	if err != nil {
		return prev, fmt.Errorf("store: write checkpoint %s: %w", next.Name, err)
	}
	return next, nil
}

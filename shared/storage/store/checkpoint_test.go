package store_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// putDB records PutItem requests and answers them with err.
type putDB struct {
	store.DynamoDB
	puts []*dynamodb.PutItemInput
	err  error
}

func (db *putDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	db.puts = append(db.puts, in)
	return &dynamodb.PutItemOutput{}, db.err
}

// TestCheckpointItem: the item a checkpoint is written as, attribute by
// attribute (its size is billed on every page), and the condition on the
// state it replaces.
func TestCheckpointItem(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_123)
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	base := map[string]types.AttributeValue{
		"pk": s("checkpoint#stripe#0123"), "kind": s("reconcile_checkpoint"),
		"types":        &types.AttributeValueMemberL{Value: []types.AttributeValue{s("invoice.paid"), s("invoice.voided")}},
		"done_through": n("1700000000"), "updated_at": n("1800000000123"), "run_id": s("run_1"),
	}
	with := func(seq string, kv ...any) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{"seq": n(seq)}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(types.AttributeValue)
		}
		return m
	}
	next := store.Checkpoint{Name: "stripe#0123", Types: []string{"invoice.paid", "invoice.voided"}, DoneThrough: 1700000000, UpdatedAt: at, RunID: "run_1"}
	window := next
	window.WindowFrom, window.WindowTo = 1600000000, 1700000100
	paged := window
	paged.Cursor, paged.CursorCreated = "evt_9", 1650000000
	tests := []struct {
		name       string
		prev, next store.Checkpoint
		wantItem   map[string]types.AttributeValue
		wantCond   string
		wantSeq    string // :seq, "" for none
	}{
		{name: "first write", next: next, wantItem: with("1"), wantCond: "attribute_not_exists(pk)"},
		{name: "after seq 4", prev: store.Checkpoint{Seq: 4}, next: next, wantItem: with("5"), wantCond: "seq = :seq", wantSeq: "4"},
		{name: "a window before its first page", prev: store.Checkpoint{Seq: 1}, next: window,
			wantItem: with("2", "window_from", n("1600000000"), "window_to", n("1700000100")), wantCond: "seq = :seq", wantSeq: "1"},
		{name: "a window with a cursor", prev: store.Checkpoint{Seq: 2}, next: paged,
			wantItem: with(
				"3",
				"window_from",
				n("1600000000"),
				"window_to",
				n("1700000100"),
				"cursor",
				s("evt_9"),
				"cursor_created",
				n("1650000000"),
			), wantCond: "seq = :seq", wantSeq: "2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := &putDB{}
			got, err := (&store.Checkpoints{DB: db, Table: "events"}).Save(context.Background(), tc.prev, tc.next)
			if err != nil {
				t.Fatal(err)
			}
			if got.Seq != tc.prev.Seq+1 {
				t.Errorf("seq: got %d, want %d", got.Seq, tc.prev.Seq+1)
			}
			in := db.puts[0]
			if !reflect.DeepEqual(in.Item, tc.wantItem) {
				t.Errorf("item: got %v\nwant %v", names(in.Item), names(tc.wantItem))
				for k, v := range tc.wantItem {
					if !reflect.DeepEqual(in.Item[k], v) {
						t.Errorf("%s: got %#v, want %#v", k, in.Item[k], v)
					}
				}
			}
			seq, _ := in.ExpressionAttributeValues[":seq"].(*types.AttributeValueMemberN)
			if aws.ToString(in.ConditionExpression) != tc.wantCond || (seq == nil) != (tc.wantSeq == "") || seq != nil && seq.Value != tc.wantSeq {
				t.Errorf("condition: got %q %v, want %q :seq=%s", aws.ToString(in.ConditionExpression), in.ExpressionAttributeValues, tc.wantCond, tc.wantSeq)
			}
		})
	}
}

func names(item map[string]types.AttributeValue) []string {
	var out []string
	for k := range item {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCheckpointNeverGoesBack(t *testing.T) {
	db := &putDB{}
	_, err := (&store.Checkpoints{DB: db, Table: "events"}).Save(context.Background(),
		store.Checkpoint{Name: "c", Seq: 3, DoneThrough: 100}, store.Checkpoint{Name: "c", DoneThrough: 99})
	if err == nil || len(db.puts) != 0 {
		t.Errorf("got %v after %d writes, want an error and no write", err, len(db.puts))
	}
}

// TestCheckpointKeepsItsStart: the group's start, once written, is never
// moved: history stays history.
func TestCheckpointKeepsItsStart(t *testing.T) {
	db := &putDB{}
	_, err := (&store.Checkpoints{DB: db, Table: "events"}).Save(context.Background(),
		store.Checkpoint{Name: "c", Seq: 3, DoneThrough: 100, HistoryBefore: 50}, store.Checkpoint{Name: "c", DoneThrough: 120, HistoryBefore: 10})
	if err == nil || len(db.puts) != 0 {
		t.Errorf("got %v after %d writes, want an error and no write", err, len(db.puts))
	}
}

func TestCheckpointsAgainstTheTable(t *testing.T) {
	ev, s := newEvents(t)
	cps := &store.Checkpoints{DB: s.DynamoDB, Table: ev.Table}
	ctx := context.Background()

	// A name that is an event's key: the checkpoint lives beside the
	// event's record and touches nothing of it.
	r := record("evt_beside", time.Now())
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	name := event.Key(event.ProviderStripe, "evt_beside")
	zero, err := cps.Load(ctx, name)
	if err != nil || !reflect.DeepEqual(zero, store.Checkpoint{Name: name}) {
		t.Fatalf("never written: got %+v (%v), want the zero checkpoint", zero, err)
	}
	next := store.Checkpoint{
		Name:          name,
		Types:         []string{"invoice.paid"},
		DoneThrough:   1700000000,
		HistoryBefore: 1590000000,
		WindowFrom:    1600000000,
		WindowTo:      1700000100,
		Cursor:        "evt_9",
		CursorCreated: 1650000000,
		UpdatedAt:     time.UnixMilli(1_800_000_000_123),
		RunID:         "run_1",
	}
	saved, err := cps.Save(ctx, zero, next)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := cps.Load(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(loaded, saved) || saved.Seq != 1 {
		t.Errorf("read back: got %+v, want %+v", loaded, saved)
	}
	if got, err := ev.Get(ctx, event.ProviderStripe, "evt_beside"); err != nil || got.PayloadHash != r.PayloadHash {
		t.Errorf("the event beside it: got %+v (%v)", got, err)
	}

	// Two runs read seq 1; the second to write loses and writes nothing.
	first := next
	first.RunID = "run_a"
	if _, err := cps.Save(ctx, loaded, first); err != nil {
		t.Fatal(err)
	}
	second := next
	second.RunID = "run_b"
	if _, err := cps.Save(ctx, loaded, second); !errors.Is(err, store.ErrCheckpointMoved) {
		t.Errorf("a second write from the same state: got %v, want ErrCheckpointMoved", err)
	}
	// A run that read nothing cannot replace what is there.
	if _, err := cps.Save(ctx, zero, second); !errors.Is(err, store.ErrCheckpointMoved) {
		t.Errorf("a first write over an existing checkpoint: got %v, want ErrCheckpointMoved", err)
	}
	if got, _ := cps.Load(ctx, name); got.RunID != "run_a" || got.Seq != 2 {
		t.Errorf("after the race: got %s at seq %d, want run_a at 2", got.RunID, got.Seq)
	}
	// Checkpoints are in no index: no listing ever shows one.
	for _, st := range []event.Status{event.StatusReceived, ""} {
		page, err := ev.List(ctx, store.Query{Status: st, Since: time.Now().Add(-time.Hour)})
		if err != nil || len(page.Records) != 1 || page.Records[0].ID != "evt_beside" {
			t.Errorf("records (status %q): got %+v (%v), want evt_beside alone", st, page.Records, err)
		}
	}
}

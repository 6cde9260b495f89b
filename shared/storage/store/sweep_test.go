package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// batchGetDB answers BatchGetItem with fn; every other method panics
// through the nil embedded interface.
type batchGetDB struct {
	store.DynamoDB
	fn func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error)
}

func (db *batchGetDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return db.fn(in)
}

func TestExistingRetriesUnprocessedKeys(t *testing.T) {
	calls := 0
	var asked [][]string
	db := &batchGetDB{fn: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		calls++
		ka := in.RequestItems["events"]
		// Keys only, eventually consistent: half a strongly consistent
		// read's price; a stale miss costs a conditional put that loses
		// (TestAStaleMissIngestsNothingTwice in package reconcile).
		if aws.ToBool(ka.ConsistentRead) || aws.ToString(ka.ProjectionExpression) != "pk" {
			t.Errorf(
				"BatchGetItem: consistent %v, projection %q; want an eventually consistent read of the keys only",
				aws.ToBool(ka.ConsistentRead),
				aws.ToString(ka.ProjectionExpression),
			)
		}
		var pks []string
		for _, k := range ka.Keys {
			for _, v := range k {
				pks = append(pks, v.(*types.AttributeValueMemberS).Value)
			}
		}
		asked = append(asked, pks)
		out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
		// First call: one found, the last key unprocessed. Second: found.
		out.Responses["events"] = []map[string]types.AttributeValue{ka.Keys[0]}
		if calls == 1 {
			out.UnprocessedKeys = map[string]types.KeysAndAttributes{"events": {Keys: ka.Keys[len(ka.Keys)-1:], ConsistentRead: ka.ConsistentRead}}
		}
		return out, nil
	}}
	ev := &store.Events{DB: db, Table: "events", BatchBackoff: time.Millisecond}
	got, err := ev.Existing(context.Background(), event.ProviderStripe, []string{"evt_a", "evt_b", "evt_a", "evt_c"})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || fmt.Sprint(asked) != "[[stripe#evt_a stripe#evt_b stripe#evt_c] [stripe#evt_c]]" {
		t.Errorf("calls: got %d %v, want the batch (each key once) then its unprocessed key", calls, asked)
	}
	if !got["evt_a"] || got["evt_b"] || !got["evt_c"] {
		t.Errorf("found: got %v, want evt_a and evt_c", got)
	}
}

func TestExistingGivesUpOnKeysThatStayUnprocessed(t *testing.T) {
	calls := 0
	db := &batchGetDB{fn: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		calls++
		return &dynamodb.BatchGetItemOutput{UnprocessedKeys: in.RequestItems}, nil
	}}
	ev := &store.Events{DB: db, Table: "events", BatchBackoff: time.Millisecond}
	_, err := ev.Existing(context.Background(), event.ProviderStripe, []string{"evt_a"})
	if err == nil || !strings.Contains(err.Error(), "unprocessed") || calls != 8 {
		t.Fatalf("got %v after %d requests, want an error about unprocessed keys after 8", err, calls)
	}
}

// TestExistingAgainstTheTable: ids with a record, none without, whatever
// their number (more than one BatchGetItem's 100 keys) and repetitions.
func TestExistingAgainstTheTable(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	var ids []string
	for i := range 130 {
		id := fmt.Sprintf("evt_exists_%03d", i)
		ids = append(ids, id)
		if i%3 == 0 {
			continue
		}
		r := record(id, now)
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ev.Existing(ctx, event.ProviderStripe, append(ids, ids[:5]...))
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if got[id] != (i%3 != 0) {
			t.Errorf("%s: got %v, want %v", id, got[id], i%3 != 0)
		}
	}
	if other, err := ev.Existing(ctx, "other", ids); err != nil || len(other) != 0 {
		t.Errorf("another provider's ids: got %v, %v; want none", other, err)
	}
}

func TestStuckReadsUnfinishedRecordsOldestFirst(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	records := []event.Record{
		at("evt_stuck_recv", "invoice.paid", event.StatusReceived, now.Add(-3*time.Hour)),
		at("evt_stuck_fail", "invoice.paid", event.StatusFailed, now.Add(-2*time.Hour)),
		at("evt_stuck_dead", "invoice.paid", event.StatusDeadLettered, now.Add(-90*time.Minute)),
		at("evt_stuck_young", "invoice.paid", event.StatusReceived, now.Add(-time.Minute)),
		at("evt_done", "invoice.paid", event.StatusProcessed, now.Add(-4*time.Hour)),
	}
	for _, r := range records {
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	// A record claimed (processing) an hour ago and never finished.
	claimable := at("evt_stuck_claimed", "invoice.paid", event.StatusReceived, now.Add(-5*time.Hour))
	if _, err := ev.Create(ctx, &claimable); err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Claim(ctx, event.ProviderStripe, claimable.ID, "w", now.Add(-time.Hour), now.Add(-50*time.Minute)); err != nil {
		t.Fatal(err)
	}
	before := now.Add(-15 * time.Minute)
	stuck := func(limit int, stopAfter int) ([]string, error) {
		var got []string
		for r, err := range ev.Stuck(ctx, event.ProviderStripe, before, limit) {
			if err != nil {
				return got, err
			}
			if r.Provider != event.ProviderStripe || r.Type != "invoice.paid" || !r.Status.Pending() {
				t.Errorf("record %s: got provider %q type %q status %q; want the index's fields", r.ID, r.Provider, r.Type, r.Status)
			}
			got = append(got, r.ID)
			if len(got) == stopAfter {
				break
			}
		}
		return got, nil
	}
	got, err := stuck(100, 0)
	// Not the dead-lettered one: it waits in the DLQ for an operator.
	if want := "[evt_stuck_recv evt_stuck_fail evt_stuck_claimed]"; err != nil || fmt.Sprint(got) != want {
		t.Errorf("stuck: got %v (%v), want %s", got, err, want)
	}
	if got, err := stuck(2, 0); err != nil || fmt.Sprint(got) != "[evt_stuck_recv evt_stuck_fail]" {
		t.Errorf("at most 2: got %v (%v)", got, err)
	}
	if got, err := stuck(100, 1); err != nil || fmt.Sprint(got) != "[evt_stuck_recv]" {
		t.Errorf("stopped after 1: got %v (%v)", got, err)
	}
	for r, err := range ev.Stuck(ctx, "other", before, 100) {
		t.Errorf("another provider: got %s %v", r.ID, err)
	}
}

// TestStuckLeavesAFailedRecordAloneUntilItsRetryIsDue: a failed record
// whose message waits out a long backoff (hours, at the end of the retry
// budget) is not stuck, so the reconciler sends no second pointer that
// would start a second series of retries; once its retry is overdue, it
// is.
func TestStuckLeavesAFailedRecordAloneUntilItsRetryIsDue(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	fail := func(id string, retryAt time.Time) {
		t.Helper()
		r := at(id, "invoice.paid", event.StatusReceived, now.Add(-3*time.Hour))
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
		claimedAt := now.Add(-time.Hour)
		if _, err := ev.Claim(ctx, event.ProviderStripe, id, "w", claimedAt, claimedAt.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := ev.Fail(ctx, r, "w", event.StatusFailed, "downstream 503", claimedAt, retryAt); err != nil {
			t.Fatal(err)
		}
	}
	fail("evt_backing_off", now.Add(time.Hour))         // failed an hour ago, retried in an hour
	fail("evt_retry_overdue", now.Add(-30*time.Minute)) // its message should have come back by now
	before := now.Add(-15 * time.Minute)
	var got []string
	for r, err := range ev.Stuck(ctx, event.ProviderStripe, before, 100) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.ID)
	}
	if fmt.Sprint(got) != "[evt_retry_overdue]" {
		t.Errorf("stuck: got %v, want only the record whose retry is overdue", got)
	}
	r, err := ev.Get(ctx, event.ProviderStripe, "evt_backing_off")
	if err != nil || !r.RetryAt.Equal(now.Add(time.Hour)) {
		t.Errorf("retry_at read back: got %v (%v), want %v", r.RetryAt, err, now.Add(time.Hour))
	}
}

package processor_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefake"
)

// readRecorder records the reads the processor makes of the events table
// and forwards them: whether each asked for a strongly consistent answer.
type readRecorder struct {
	store.DynamoDB
	mu    sync.Mutex
	reads []string // "BatchGetItem consistent=true", "GetItem consistent=false", ...
	table string
}

func (r *readRecorder) note(op string, consistent *bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, op+" consistent="+map[bool]string{true: "true", false: "false"}[aws.ToBool(consistent)])
}

func (r *readRecorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for table, ka := range in.RequestItems {
		if table == r.table {
			r.note("BatchGetItem", ka.ConsistentRead)
		}
	}
	return r.DynamoDB.BatchGetItem(ctx, in, optFns...)
}

func (r *readRecorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if aws.ToString(in.TableName) == r.table {
		r.note("GetItem", in.ConsistentRead)
	}
	return r.DynamoDB.GetItem(ctx, in, optFns...)
}

// TestAThinEventLooksForItsTwinWithAStronglyConsistentRead: the look for
// a thin event's snapshot twin decides whether its effects make their
// outside calls. An eventually consistent read can miss a twin committed
// a moment before, and the effect's call would be made a second time
// before the commit's condition drops it: every read the thin event makes
// of the events table is strongly consistent, and the twin processed
// first still leaves the thin event twinned, with no effect call.
func TestAThinEventLooksForItsTwinWithAStronglyConsistentRead(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	sub, cus := "sub_twin_consistent", "cus_twin_consistent"
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "active")); err != nil {
		t.Fatal(err)
	}
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	snap := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
		ID: "evt_consistent_snapshot", ObjectID: sub, Customer: cus, Created: 1796126400}))
	handleOne(t, p, snap, 1)
	r := e.storeThin(t, fake, thinEvent{ID: "evt_consistent_thin", Type: "v1.customer.subscription.updated", Created: "2026-12-01T12:00:00Z",
		Snapshot: "evt_consistent_snapshot", Related: subscriptionRef(sub)})

	rec := &readRecorder{DynamoDB: e.stack.DynamoDB, table: e.events.Table}
	handleOne(t, e.processorAt(t, rec, nil, withThin(t, fake)), r, 1)
	sawBatch := false
	for _, read := range rec.reads {
		if read == "BatchGetItem consistent=true" {
			sawBatch = true
		}
		if read != "BatchGetItem consistent=true" && read != "GetItem consistent=true" {
			t.Errorf("a read of the events table: %s; want every read strongly consistent", read)
		}
	}
	if !sawBatch {
		t.Errorf("reads %v; want the look for the twin among them", rec.reads)
	}
	if got := e.record(t, r.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Twinned {
		t.Errorf("the thin event: %s %s; want processed, twinned", got.Status, got.Outcome)
	}
	if calls, commits := len(e.effect.keys["evt_consistent_snapshot"]), e.commits(t, "evt_consistent_snapshot"); calls != 1 || commits != 1 {
		t.Errorf("the pair's effect: %d calls, %d commits; want 1 and 1", calls, commits)
	}
}

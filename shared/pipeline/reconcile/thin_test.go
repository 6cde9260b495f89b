package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
)

// TestAMissedThinEventIsFoundAsItsTwin: the reconciler lists API v1
// events only, which hold each thin v1. event's snapshot twin. A thin
// event processed left its twin's record (store.Events.TwinWrite, in its
// commit): the listed twin is held, not ingested. A thin event that never
// arrived left none: its twin is a lost webhook, ingested and enqueued.
func TestAMissedThinEventIsFoundAsItsTwin(t *testing.T) {
	h := newHarness(t, oneGroup)
	ctx := context.Background()
	envs := h.seed(2)
	thin := event.Record{
		Provider: event.ProviderStripe, ID: "evt_thin_of_" + envs[0].ID, Type: event.ThinV1Prefix + envs[0].Type,
		Created: envs[0].Created, ObjectID: envs[0].ObjectID, ObjectType: envs[0].ObjectType,
	}
	if _, err := h.stack.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{h.events.TwinWrite(thin, envs[0].ID, envs[0].Type, h.now)},
	}); err != nil {
		t.Fatal(err)
	}

	res, err := h.reconciler("sk_test_thin", nil).Run(ctx, reconcile.RunOptions{Since: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.Listed != 2 || res.Missing != 1 {
		t.Errorf("run: listed %d, missing %d; want 2 listed, 1 missing (the twin of the thin event that never came)", res.Listed, res.Missing)
	}
	recs := h.records([]string{envs[0].ID, envs[1].ID})
	if r := recs[envs[0].ID]; r == nil || r.Source != event.SourceTwin || r.Status != event.StatusProcessed {
		t.Errorf("the processed thin event's twin: %+v; want its twin record, processed, untouched", r)
	}
	if r := recs[envs[1].ID]; r == nil || r.Source != event.SourceReconciler {
		t.Errorf("the missed thin event's twin: %+v; want ingested by the reconciler", r)
	}
	if got := receiveAll(t, h); len(got) != 1 || got[0] != envs[1].ID {
		t.Errorf("enqueued %v; want only %s", got, envs[1].ID)
	}
}

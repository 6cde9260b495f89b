package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// conditionFailsDB fails every put as a duplicate, returning oldItem with
// the exception (nil: as an endpoint that ignores ALL_OLD), and answers
// GetItem with stored.
type conditionFailsDB struct {
	store.DynamoDB
	oldItem map[string]types.AttributeValue
	stored  map[string]types.AttributeValue
	gets    int
}

func (f *conditionFailsDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: f.oldItem}
}

func (f *conditionFailsDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.gets++
	return &dynamodb.GetItemOutput{Item: f.stored}, nil
}

func item(status event.Status, extra map[string]types.AttributeValue) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"pk":           &types.AttributeValueMemberS{Value: "stripe#evt_dup"},
		"provider":     &types.AttributeValueMemberS{Value: "stripe"},
		"id":           &types.AttributeValueMemberS{Value: "evt_dup"},
		"type":         &types.AttributeValueMemberS{Value: "invoice.paid"},
		"status":       &types.AttributeValueMemberS{Value: string(status)},
		"payload_hash": &types.AttributeValueMemberS{Value: "h"},
		"source":       &types.AttributeValueMemberS{Value: "webhook"},
	}
	for k, v := range extra {
		it[k] = v
	}
	return it
}

func TestCreateDuplicateWithoutTheOldItemReadsIt(t *testing.T) {
	// Without the fallback the duplicate would decode as a record with no
	// status, which is never enqueued again: a received record whose first
	// enqueue failed would be lost.
	db := &conditionFailsDB{stored: item(event.StatusReceived, nil)}
	ev := &store.Events{DB: db, Table: "events"}
	r := record("evt_dup", time.Now())
	existing, err := ev.Create(context.Background(), &r)
	if err != nil {
		t.Fatal(err)
	}
	if existing == nil || existing.Status != event.StatusReceived || db.gets != 1 {
		t.Fatalf("got %+v after %d reads; want the stored received record, read once", existing, db.gets)
	}
}

func TestCreateDuplicateDoesNotDecodeTheOldPayload(t *testing.T) {
	// A duplicate is decided by status and hash. Decoding (gunzipping) the
	// old payload would cost CPU on every duplicate, and a payload that does
	// not decode would turn every retry of the event into a 5xx.
	corrupt := map[string]types.AttributeValue{
		"payload":      &types.AttributeValueMemberB{Value: []byte("not gzip")},
		"payload_gzip": &types.AttributeValueMemberBOOL{Value: true},
	}
	db := &conditionFailsDB{oldItem: item(event.StatusProcessed, corrupt)}
	ev := &store.Events{DB: db, Table: "events"}
	r := record("evt_dup", time.Now())
	existing, err := ev.Create(context.Background(), &r)
	if err != nil {
		t.Fatalf("duplicate of a record with an undecodable payload: %v", err)
	}
	if existing.Status != event.StatusProcessed || existing.PayloadHash != "h" || existing.Payload != nil || db.gets != 0 {
		t.Errorf(
			"got status %s hash %q payload %d bytes after %d reads; want processed, h, none, 0",
			existing.Status,
			existing.PayloadHash,
			len(existing.Payload),
			db.gets,
		)
	}
}

// conflictingDB cancels the first n transactions for a conflict with
// another transaction, as DynamoDB does when two touch one item at once.
type conflictingDB struct {
	store.DynamoDB
	n, calls int
	tokens   map[string]bool
	reason   string
}

func (f *conflictingDB) TransactWriteItems(
	_ context.Context,
	in *dynamodb.TransactWriteItemsInput,
	_ ...func(*dynamodb.Options),
) (*dynamodb.TransactWriteItemsOutput, error) {
	f.calls++
	f.tokens[aws.ToString(in.ClientRequestToken)] = true
	if f.calls <= f.n {
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		reasons[0].Code = aws.String(f.reason)
		return nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

func TestCompleteRunsAgainAfterATransactionConflict(t *testing.T) {
	entitlement := types.TransactWriteItem{Update: &types.Update{TableName: aws.String("mirror"), UpdateExpression: aws.String("SET x = :x")}}
	complete := func(db store.DynamoDB) error {
		ev := &store.Events{DB: db, Table: "events"}
		return ev.Complete(context.Background(), record("evt_conflict", time.Now()), "w1", time.Now(),
			store.Completion{Outcome: outcome.Applied, Writes: []types.TransactWriteItem{entitlement}})
	}

	db := &conflictingDB{n: 2, reason: "TransactionConflict", tokens: map[string]bool{}}
	if err := complete(db); err != nil || db.calls != 3 {
		t.Errorf("two conflicts, then a commit: got %v after %d calls, want success after 3", err, db.calls)
	}
	// Each run is a new transaction, not a replay of the cancelled one:
	// the store leaves the token to the SDK, which gives each call its own.
	if len(db.tokens) != 1 || !db.tokens[""] {
		t.Errorf("the store set ClientRequestToken itself (%v)", db.tokens)
	}

	db = &conflictingDB{n: 100, reason: "TransactionConflict", tokens: map[string]bool{}}
	var tce *types.TransactionCanceledException
	if err := complete(db); !errors.As(err, &tce) || db.calls != 4 {
		t.Errorf("conflicts every time: got %v after %d calls, want the cancellation after 4", err, db.calls)
	}

	// A failed condition is an answer, not a conflict: never run again.
	db = &conflictingDB{n: 100, reason: "ConditionalCheckFailed", tokens: map[string]bool{}}
	var ce *store.ConflictError
	if err := complete(db); !errors.As(err, &ce) || db.calls != 1 {
		t.Errorf("failed condition: got %v after %d calls, want ConflictError after 1", err, db.calls)
	}
}

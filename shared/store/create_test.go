package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
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
		t.Errorf("got status %s hash %q payload %d bytes after %d reads; want processed, h, none, 0", existing.Status, existing.PayloadHash, len(existing.Payload), db.gets)
	}
}

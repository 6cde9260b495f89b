package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

func newEvents(t *testing.T) (*store.Events, *testenv.Stack) {
	t.Helper()
	s := testenv.Provision(t, nil)
	return &store.Events{DB: s.DynamoDB, Table: s.Table("EventsTable"), Retention: 90 * 24 * time.Hour}, s
}

func record(id string, now time.Time) event.Record {
	env := event.Envelope{ID: id, Type: "invoice.paid", Created: 1700000000, ObjectID: "in_1", ObjectType: "invoice", APIVersion: "2025-02-24.acacia"}
	return event.NewRecord(event.ProviderStripe, env, []byte(`{"id":"`+id+`"}`), "hash-"+id, event.SourceWebhook, event.StatusReceived, now)
}

func TestCreateIsConditionalAndReturnsTheExistingRecord(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	r := record("evt_create", now)
	existing, err := ev.Create(ctx, &r)
	if err != nil || existing != nil {
		t.Fatalf("first Create: got %v, %v; want nil, nil", existing, err)
	}
	dup := record("evt_create", now.Add(time.Second))
	dup.PayloadHash = "other"
	existing, err = ev.Create(ctx, &dup)
	if err != nil {
		t.Fatal(err)
	}
	if existing == nil {
		t.Fatal("second Create returned no existing record")
	}
	if existing.PayloadHash != "hash-evt_create" || existing.Status != event.StatusReceived || !existing.ReceivedAt.Equal(now) {
		t.Errorf("existing: got hash %q status %q received %v; want the original", existing.PayloadHash, existing.Status, existing.ReceivedAt)
	}
	if existing.ObjectID != "in_1" || existing.Type != "invoice.paid" || existing.Payload != nil {
		t.Errorf(
			"existing: got object %q type %q payload %d bytes; want the pointer's fields and no payload",
			existing.ObjectID,
			existing.Type,
			len(existing.Payload),
		)
	}
	got, err := ev.Get(ctx, event.ProviderStripe, "evt_create")
	if err != nil {
		t.Fatal(err)
	}
	if got.PayloadHash != "hash-evt_create" {
		t.Errorf("stored hash: got %q, want the original", got.PayloadHash)
	}
	if string(got.Payload) != `{"id":"evt_create"}` {
		t.Errorf("payload: got %q", got.Payload)
	}
}

func TestLargePayloadsAreCompressedOrOmitted(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()

	compressible := record("evt_big", now)
	compressible.Payload = bytes.Repeat([]byte(`{"line":"a fairly repetitive invoice line item"},`), 20000) // ~1 MB
	if _, err := ev.Create(ctx, &compressible); err != nil {
		t.Fatal(err)
	}
	got, err := ev.Get(ctx, event.ProviderStripe, "evt_big")
	if err != nil {
		t.Fatal(err)
	}
	if got.PayloadOmitted || !bytes.Equal(got.Payload, compressible.Payload) {
		t.Errorf(
			"compressible 1 MB payload: omitted=%v, round-trip equal=%v; want stored and equal",
			got.PayloadOmitted,
			bytes.Equal(got.Payload, compressible.Payload),
		)
	}

	random := make([]byte, 600<<10)
	_, _ = rand.Read(random)
	huge := record("evt_huge", now)
	huge.Payload = random
	if _, err := ev.Create(ctx, &huge); err != nil {
		t.Fatal(err)
	}
	if !huge.PayloadOmitted {
		t.Error("Create did not report the payload as omitted")
	}
	got, err = ev.Get(ctx, event.ProviderStripe, "evt_huge")
	if err != nil {
		t.Fatal(err)
	}
	if !got.PayloadOmitted || got.Payload != nil || got.Type != "invoice.paid" {
		t.Errorf(
			"incompressible 600 KB payload: got omitted=%v payload=%d bytes type=%q; want the envelope only, flagged",
			got.PayloadOmitted,
			len(got.Payload),
			got.Type,
		)
	}
}

func TestClaimLeaseCompleteFail(t *testing.T) {
	ev, s := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	r := record("evt_claim", now)
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}

	claimed, err := ev.Claim(ctx, "stripe", "evt_claim", "w1", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if claimed.Status != event.StatusProcessing || claimed.Attempts != 1 || claimed.LeaseOwner != "w1" {
		t.Fatalf("claimed: got %s attempts %d owner %q", claimed.Status, claimed.Attempts, claimed.LeaseOwner)
	}

	// A second worker while the lease is live loses and learns why.
	_, err = ev.Claim(ctx, "stripe", "evt_claim", "w2", now.Add(time.Second), now.Add(time.Minute))
	var nc *store.NotClaimableError
	if !errors.As(err, &nc) || nc.Current.Status != event.StatusProcessing || nc.Current.LeaseOwner != "w1" {
		t.Fatalf("claim under a live lease: got %v, want NotClaimableError(processing, w1)", err)
	}

	// After the lease expires, w2 takes over; w1's commit must then fail.
	later := now.Add(2 * time.Minute)
	if _, err := ev.Claim(ctx, "stripe", "evt_claim", "w2", later, later.Add(time.Minute)); err != nil {
		t.Fatalf("claim after lease expiry: %v", err)
	}
	if err := ev.Complete(ctx, claimed, "w1", later, store.Completion{Outcome: outcome.Applied}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("complete by the old holder: got %v, want ErrLeaseLost", err)
	}
	if err := ev.Fail(ctx, claimed, "w1", event.StatusFailed, "boom", later, time.Time{}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("fail by the old holder: got %v, want ErrLeaseLost", err)
	}

	// w2 fails it (retryable), claims again, and completes.
	if err := ev.Fail(ctx, claimed, "w2", event.StatusFailed, "dependency 503", later, time.Time{}); err != nil {
		t.Fatal(err)
	}
	got, _ := ev.Get(ctx, "stripe", "evt_claim")
	if got.Status != event.StatusFailed || got.LastError != "dependency 503" || got.LeaseOwner != "" {
		t.Fatalf("after Fail: got %s %q owner %q", got.Status, got.LastError, got.LeaseOwner)
	}
	again, err := ev.Claim(ctx, "stripe", "evt_claim", "w3", later, later.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if again.Attempts != 3 {
		t.Errorf("attempts: got %d, want 3", again.Attempts)
	}
	// An extra write in the transaction, to show it commits with the status.
	marker := types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.Table("MirrorTable")),
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "marker"}},
	}}
	if err := ev.Complete(ctx, again, "w3", later, store.Completion{Outcome: outcome.Applied, MirrorKey: "in_1", Writes: []types.TransactWriteItem{marker}}); err != nil {
		t.Fatal(err)
	}
	got, _ = ev.Get(ctx, "stripe", "evt_claim")
	if got.Status != event.StatusProcessed || got.Outcome != outcome.Applied || got.MirrorKey != "in_1" || got.LeaseOwner != "" {
		t.Fatalf("after Complete: got %s %s %q owner %q", got.Status, got.Outcome, got.MirrorKey, got.LeaseOwner)
	}
	// Processed is final for claims.
	_, err = ev.Claim(ctx, "stripe", "evt_claim", "w4", later, later.Add(time.Minute))
	if !errors.As(err, &nc) || nc.Current.Status != event.StatusProcessed {
		t.Fatalf("claim of a processed event: got %v, want NotClaimableError(processed)", err)
	}
	if _, err := ev.Claim(ctx, "stripe", "evt_missing", "w4", later, later.Add(time.Minute)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim of a missing event: got %v, want ErrNotFound", err)
	}
}

func TestCompleteReportsWhichWriteConflicted(t *testing.T) {
	ev, s := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	r := record("evt_conflict", now)
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	claimed, err := ev.Claim(ctx, "stripe", "evt_conflict", "w1", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// The first write would succeed alone: the whole transaction must not.
	applies := types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(s.Table("MirrorTable")),
		Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "applied-alone"}},
	}}
	never := types.TransactWriteItem{Put: &types.Put{
		TableName:           aws.String(s.Table("MirrorTable")),
		Item:                map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "obj"}},
		ConditionExpression: aws.String("attribute_exists(pk)"),
	}}
	err = ev.Complete(ctx, claimed, "w1", now, store.Completion{Outcome: outcome.Applied, Writes: []types.TransactWriteItem{applies, never}})
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.Index != 1 {
		t.Fatalf("got %v, want ConflictError{Index: 1}", err)
	}
	out, err := s.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table("MirrorTable")), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "applied-alone"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) != 0 {
		t.Error("a write of a cancelled transaction was kept: transactions must be all or nothing")
	}
	got, _ := ev.Get(ctx, "stripe", "evt_conflict")
	if got.Status != event.StatusProcessing {
		t.Errorf("status after a cancelled transaction: got %s, want processing (nothing written)", got.Status)
	}
}

// smallPages forwards to the real client with a page size of two, so that
// reading every page is exercised.
type smallPages struct{ store.DynamoDB }

func (p smallPages) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.Limit = aws.Int32(2)
	return p.DynamoDB.Query(ctx, in, optFns...)
}

func TestByObjectReadsEveryPageAndOrdersTiesByID(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	add := func(id, objectID string, created int64) event.Record {
		t.Helper()
		env := event.Envelope{ID: id, Type: "customer.subscription.updated", Created: created, ObjectID: objectID, ObjectType: "subscription"}
		r := event.NewRecord(event.ProviderStripe, env, []byte(`{}`), "h", event.SourceWebhook, event.StatusReceived, now)
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	add("evt_c", "sub_1", 300)
	add("evt_b2", "sub_1", 200)
	first := add("evt_a", "sub_1", 100)
	add("evt_b1", "sub_1", 200) // same second as evt_b2: ordered by id
	add("evt_x", "sub_2", 150)
	add("evt_d", "sub_1", 400)
	claimed, err := ev.Claim(ctx, "stripe", first.ID, "w", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Complete(ctx, claimed, "w", now, store.Completion{Outcome: outcome.Superseded}); err != nil {
		t.Fatal(err)
	}

	paged := &store.Events{DB: smallPages{ev.DB}, Table: ev.Table}
	got, err := paged.ByObject(ctx, "sub_1")
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, r := range got {
		summary = append(summary, fmt.Sprintf("%s@%d:%s/%s", r.ID, r.Created, r.Status, r.Outcome))
	}
	want := []string{"evt_a@100:processed/superseded", "evt_b1@200:received/", "evt_b2@200:received/", "evt_c@300:received/", "evt_d@400:received/"}
	if !reflect.DeepEqual(summary, want) {
		t.Errorf("ByObject(sub_1):\n got %v\nwant %v", summary, want)
	}
}

// TestCompleteWhoseAnswerWasLostCommitsOnce drops the connection after the
// commit went through: the SDK retries with the same ClientRequestToken, and
// the retry must answer success without applying anything twice (DynamoDB's
// idempotency window; the emulator's launcher keeps it too).
func TestCompleteWhoseAnswerWasLostCommitsOnce(t *testing.T) {
	ev, s := newEvents(t)
	p, err := faultproxy.New(testenv.Endpoints(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	// The client's own option: it wins over AWS_ENDPOINT_URL_DYNAMODB too.
	ev.DB = dynamodb.NewFromConfig(s.AWS, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) })

	ctx := context.Background()
	now := time.Now()
	r := record("evt_lost_answer", now)
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	claimed, err := ev.Claim(ctx, "stripe", r.ID, "w1", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// The effect counts its applications: a second one shows as 2.
	counter := types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.Table("MirrorTable")),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "counter"}},
		UpdateExpression:          aws.String("ADD applied :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}}
	p.Set(faultproxy.Rule{Service: "dynamodb", Operation: "TransactWriteItems", Action: faultproxy.DropAfter, Count: 1})
	if err := ev.Complete(ctx, claimed, "w1", now, store.Completion{Outcome: outcome.Applied, Writes: []types.TransactWriteItem{counter}}); err != nil {
		t.Fatalf("complete whose first answer was lost: got %v, want success from the retry", err)
	}
	if p.Injected() != 1 {
		t.Fatalf("injected %d faults, want 1: the test did not lose an answer", p.Injected())
	}
	got, err := ev.Get(ctx, "stripe", r.ID)
	if err != nil || got.Status != event.StatusProcessed {
		t.Fatalf("record: got %s (%v), want processed", got.Status, err)
	}
	out, err := s.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table("MirrorTable")), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "counter"}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := out.Item["applied"].(*types.AttributeValueMemberN); !ok || n.Value != "1" {
		t.Errorf("effect applied %v times, want exactly once", out.Item["applied"])
	}
}

// TestClientRequestTokenReuseWithOtherWritesIsRefused: DynamoDB refuses a
// token reused for a different transaction within its window, rather than
// silently answering the first one's success.
func TestClientRequestTokenReuseWithOtherWritesIsRefused(t *testing.T) {
	_, s := newEvents(t)
	ctx := context.Background()
	put := func(pk string) error {
		_, err := s.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			ClientRequestToken: aws.String("token-reused-" + s.Prefix),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String(s.Table("MirrorTable")),
				Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
			}}},
		})
		return err
	}
	if err := put("a"); err != nil {
		t.Fatal(err)
	}
	if err := put("a"); err != nil {
		t.Fatalf("same token, same transaction: got %v, want success", err)
	}
	var mismatch *types.IdempotentParameterMismatchException
	if err := put("b"); !errors.As(err, &mismatch) {
		t.Fatalf("same token, other transaction: got %v, want IdempotentParameterMismatchException", err)
	}
}

package store_test

import (
	"context"
	"errors"
	"net/http/httptest"
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

// throughProxy returns the events table with its client behind a fault
// proxy, and the proxy.
func throughProxy(t *testing.T) (*store.Events, *testenv.Stack, *faultproxy.Proxy) {
	t.Helper()
	ev, s := newEvents(t)
	p, err := faultproxy.New(testenv.Endpoints(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	ev.DB = dynamodb.NewFromConfig(s.AWS, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	return ev, s, p
}

// lose makes every attempt of the next call of op take effect and lose
// its answer: the SDK's retries too (Sticky), so the caller never learns
// what happened from the call itself.
func lose(p *faultproxy.Proxy, op string, sticky bool) {
	p.Set(faultproxy.Rule{Service: "dynamodb", Operation: op, Action: faultproxy.DropAfter, Sticky: sticky, Count: map[bool]int{true: 0, false: 1}[sticky]})
}

// TestAClaimWhoseEveryAnswerWasLostIsReadBack: the claim took effect and
// neither it nor any of the SDK's retries was answered; the store reads the
// record back and finds its own lease, so the claim is the caller's.
func TestAClaimWhoseEveryAnswerWasLostIsReadBack(t *testing.T) {
	ev, _, p := throughProxy(t)
	ctx := context.Background()
	now := time.Now()
	r := record("evt_claim_lost", now)
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	lose(p, "UpdateItem", true)
	got, err := ev.Claim(ctx, "stripe", r.ID, "w1:m1:a", now, now.Add(time.Minute))
	p.Clear()
	if p.Injected() == 0 {
		t.Fatal("no answer was lost: the test proves nothing")
	}
	if err != nil {
		t.Fatalf("claim whose answers were all lost: got %v, want the claimed record (read back)", err)
	}
	if got.Status != event.StatusProcessing || got.LeaseOwner != "w1:m1:a" {
		t.Errorf("claimed record: got %s leased by %q, want processing leased by w1:m1:a", got.Status, got.LeaseOwner)
	}
}

// TestAFailureWhoseAnswerWasLostIsReadBack: Fail took effect and its
// answer was lost, once (the SDK's retry meets the record it wrote, not
// processing any more) or every time; either way the store reads back
// what it wrote and reports success, so the caller counts the status it
// set (failed_permanent: the alarm's metric) instead of a lost lease.
func TestAFailureWhoseAnswerWasLostIsReadBack(t *testing.T) {
	for _, st := range []event.Status{event.StatusFailedPermanent, event.StatusDeadLettered, event.StatusFailed} {
		for _, sticky := range []bool{false, true} {
			name := string(st) + map[bool]string{false: "/answer lost once", true: "/every answer lost"}[sticky]
			t.Run(name, func(t *testing.T) {
				ev, _, p := throughProxy(t)
				ctx := context.Background()
				now := time.Now()
				r := record("evt_fail_lost", now)
				if _, err := ev.Create(ctx, &r); err != nil {
					t.Fatal(err)
				}
				claimed, err := ev.Claim(ctx, "stripe", r.ID, "w1", now, now.Add(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				lose(p, "UpdateItem", sticky)
				err = ev.Fail(ctx, claimed, "w1", st, "boom", now, now.Add(time.Minute))
				p.Clear()
				if p.Injected() == 0 {
					t.Fatal("no answer was lost: the test proves nothing")
				}
				if err != nil {
					t.Fatalf("Fail(%s) that took effect: got %v, want nil (read back)", st, err)
				}
				got, err := ev.Get(ctx, "stripe", r.ID)
				if err != nil || got.Status != st {
					t.Fatalf("record: got %s (%v), want %s", got.Status, err, st)
				}
			})
		}
	}
}

// TestAFailureThatLostItsLeaseIsStillLost: the read-back tells a failure
// that took effect from one that never could: another worker's claim.
func TestAFailureThatLostItsLeaseIsStillLost(t *testing.T) {
	ev, _, _ := throughProxy(t)
	ctx := context.Background()
	now := time.Now()
	r := record("evt_fail_other", now)
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	claimed, err := ev.Claim(ctx, "stripe", r.ID, "w1", now.Add(-2*time.Minute), now.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Claim(ctx, "stripe", r.ID, "w2", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := ev.Fail(ctx, claimed, "w1", event.StatusFailedPermanent, "boom", now, time.Time{}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("Fail under a lease taken over: got %v, want ErrLeaseLost", err)
	}
}

// TestACompleteWhoseEveryAnswerWasLostIsReadBack: the commit took effect
// and no answer came back, the SDK's retries' included; the store reads
// the record back and reports the commit, applied once.
func TestACompleteWhoseEveryAnswerWasLostIsReadBack(t *testing.T) {
	ev, s, p := throughProxy(t)
	ctx := context.Background()
	now := time.Now()
	r := record("evt_complete_lost", now)
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	claimed, err := ev.Claim(ctx, "stripe", r.ID, "w1", now, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	counter := types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.Table("MirrorTable")),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "counter-lost"}},
		UpdateExpression:          aws.String("ADD applied :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	}}
	lose(p, "TransactWriteItems", true)
	err = ev.Complete(ctx, claimed, "w1", now, store.Completion{Outcome: outcome.Applied, Writes: []types.TransactWriteItem{counter}})
	p.Clear()
	if p.Injected() == 0 {
		t.Fatal("no answer was lost: the test proves nothing")
	}
	if err != nil {
		t.Fatalf("complete whose every answer was lost: got %v, want nil (read back)", err)
	}
	out, err := s.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table("MirrorTable")), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "counter-lost"}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := out.Item["applied"].(*types.AttributeValueMemberN); !ok || n.Value != "1" {
		t.Errorf("effect applied %v times, want exactly once", out.Item["applied"])
	}
}

// payloadFails fails the second PutItem it is asked for: Create's put of
// the payload, after the record's.
type payloadFails struct {
	store.DynamoDB
	puts int
}

func (p *payloadFails) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	p.puts++
	if p.puts == 2 {
		return nil, errors.New("throttled (injected)")
	}
	return p.DynamoDB.PutItem(ctx, in, o...)
}

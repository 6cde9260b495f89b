package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newStack provisions the template's tables and queues for t, as the
// operations see a stack.
func newStack(t *testing.T) (*ops.Stack, *testenv.Stack) {
	t.Helper()
	env := testenv.Provision(t, nil)
	s := &ops.Stack{
		Events: &store.Events{DB: env.DynamoDB, Table: env.Table("EventsTable"), Retention: 90 * 24 * time.Hour},
		SQS:    env.SQS,
		Queue:  env.Queue("WebhookQueue").URL,
		DLQ:    env.Queue("DeadLetterQueue").URL,
		Now:    func() time.Time { return now },
	}
	return s, env
}

// storeEvent stores a record of provider in status and, when dead, puts a
// pointer to it on the dead-letter queue.
func storeEvent(t *testing.T, s *ops.Stack, provider, id string, status event.Status, dead bool) {
	t.Helper()
	b := []byte(`{"id":"` + id + `"}`)
	r := event.NewRecord(provider, event.Envelope{ID: id, Type: "invoice.paid", Created: now.Unix()}, b, ingest.Hash(b), event.SourceWebhook, status, now)
	if _, err := s.Events.Create(context.Background(), &r); err != nil {
		t.Fatal(err)
	}
	if dead {
		p, err := json.Marshal(event.PointerTo(r))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(s.DLQ), MessageBody: aws.String(string(p))}); err != nil {
			t.Fatal(err)
		}
	}
}

// ids receives every message of url (hiding them) and returns the ids of
// the events they point to, sorted.
func ids(t *testing.T, env *testenv.Stack, url string) []string {
	t.Helper()
	var out []string
	for {
		res, err := env.SQS.ReceiveMessage(
			context.Background(),
			&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60},
		)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) == 0 {
			sort.Strings(out)
			return out
		}
		for _, m := range res.Messages {
			p, err := queue.Decode(aws.ToString(m.Body))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.ID)
		}
	}
}

// TestRedriveOneMessageMovesItAlone: the console's redrive of one message
// moves exactly that message, among more than a batch, leaves every other
// visible at once, and reports a message no longer there as nothing moved.
func TestRedriveOneMessageMovesItAlone(t *testing.T) {
	s, env := newStack(t)
	ctx := context.Background()
	var all []string
	for i := range 14 {
		id := fmt.Sprintf("evt_dlq_%02d", i)
		all = append(all, id)
		storeEvent(t, s, event.ProviderStripe, id, event.StatusDeadLettered, true)
	}
	d, err := s.DeadLetters(ctx, 100)
	if err != nil || len(d.Messages) != len(all) {
		t.Fatalf("DeadLetters: %d messages (%v), want %d", len(d.Messages), err, len(all))
	}
	target := d.Messages[len(d.Messages)-1]
	if target.Provider != event.ProviderStripe || target.EventStatus != "dead_lettered" {
		t.Errorf("peeked %+v, want Stripe's dead_lettered event", target)
	}
	res, err := s.Redrive(ctx, target.MessageID)
	if err != nil || res.Moved != 1 || res.Remaining != len(all)-1 || res.Method != ops.MethodReceiveSendDelete {
		t.Fatalf("redrive %s: got %+v (%v), want 1 moved by receive_send_delete and %d remaining (all visible again)", target.EventID, res, err, len(all)-1)
	}
	main, dlq := ids(t, env, s.Queue), ids(t, env, s.DLQ)
	if !slices.Equal(main, []string{target.EventID}) || len(dlq) != len(all)-1 || slices.Contains(dlq, target.EventID) {
		t.Errorf("after redriving %s: webhook queue %v, DLQ %v", target.EventID, main, dlq)
	}
	if res, err = s.Redrive(ctx, target.MessageID); err != nil || res.Moved != 0 {
		t.Errorf("a message no longer there: got %+v (%v), want nothing moved", res, err)
	}
}

// TestDiscardFindsTheProvidersEvent: a discard finds the event of its id
// whatever its provider, records the decision on that record, deletes its
// messages and no other; an id two providers share is refused until the
// provider is named.
func TestDiscardFindsTheProvidersEvent(t *testing.T) {
	s, env := newStack(t)
	ctx := context.Background()
	storeEvent(t, s, "github", "dlv_1", event.StatusFailed, true)
	storeEvent(t, s, "standard", "msg_2", event.StatusDeadLettered, true)
	storeEvent(t, s, "github", "same", event.StatusDeadLettered, true)
	storeEvent(t, s, "shopify", "same", event.StatusDeadLettered, true)

	got, err := s.Discard(ctx, "", []string{"dlv_1", "msg_2", "same", "gone"}, "test deliveries")
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.DiscardResult{
		{ID: "same", Action: ops.DiscardError},
		{ID: "gone", Action: ops.DiscardNotFound},
		{ID: "dlv_1", Provider: "github", Status: "failed", StatusAfter: "dead_lettered", Action: ops.DiscardDiscarded, Messages: 1},
		{ID: "msg_2", Provider: "standard", Status: "dead_lettered", StatusAfter: "dead_lettered", Action: ops.DiscardDiscarded, Messages: 1},
	}
	for i := range got {
		got[i].Detail = ""
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	rec, err := s.Events.Get(ctx, "github", "dlv_1")
	if err != nil || rec.DiscardReason != "test deliveries" || !rec.DiscardedAt.Equal(now) {
		t.Errorf("GitHub's record: reason %q at %v (%v), want the reason at %v", rec.DiscardReason, rec.DiscardedAt, err, now)
	}
	if dlq := ids(t, env, s.DLQ); !slices.Equal(dlq, []string{"same", "same"}) {
		t.Fatalf("DLQ after the discard: %v, want the shared id's two messages, visible", dlq)
	}
}

// TestReplayIsDoneOnlyWhenEnqueued: Done is what the console shows as a
// success: an enqueue, or a dry run that would enqueue; a skip is not.
func TestReplayIsDoneOnlyWhenEnqueued(t *testing.T) {
	s, env := newStack(t)
	ctx := context.Background()
	storeEvent(t, s, event.ProviderStripe, "evt_processed", event.StatusProcessed, false)
	storeEvent(t, s, event.ProviderStripe, "evt_permanent", event.StatusFailedPermanent, false)
	for _, tc := range []struct {
		id            string
		force, dryRun bool
		action        string
		done          bool
	}{
		{"evt_processed", false, true, ops.ActionWouldEnqueue, true},
		{"evt_processed", false, false, ops.ActionEnqueued, true},
		{"evt_permanent", false, false, ops.ActionSkipped, false},
		{"evt_permanent", true, true, ops.ActionWouldReopen, true},
		{"evt_missing", false, false, ops.ActionNotFound, false},
	} {
		r, err := s.Replay(ctx, "", tc.id, tc.force, tc.dryRun)
		if err != nil || r.Action != tc.action || r.Done != tc.done {
			t.Errorf(
				"replay %s (force %v, dry run %v): got %s, done %v (%v); want %s, done %v",
				tc.id,
				tc.force,
				tc.dryRun,
				r.Action,
				r.Done,
				err,
				tc.action,
				tc.done,
			)
		}
	}
	if main := ids(t, env, s.Queue); !slices.Equal(main, []string{"evt_processed"}) {
		t.Errorf("webhook queue: %v, want the one replay that was not a dry run", main)
	}
}

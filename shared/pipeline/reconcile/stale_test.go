package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// staleEvents answers Existing as an eventually consistent read that has
// not seen the latest writes yet: every event missing. The rest is the
// real store's.
type staleEvents struct{ *store.Events }

func (staleEvents) Existing(context.Context, string, []string) (map[string]bool, error) {
	return map[string]bool{}, nil
}

// TestAStaleMissIngestsNothingTwice: the existence check reads keys only,
// eventually consistent, so it may miss a record written a moment before.
// The reconciler then ingests the event through the receiver's path, whose
// conditional put of the record loses to the stored one: nothing is
// written, a processed event is not enqueued again, a received one is (as
// any duplicate delivery of it would), the webhook's payload stays, and
// the run counts the event as raced, not as a lost webhook.
func TestAStaleMissIngestsNothingTwice(t *testing.T) {
	h := newHarness(t, oneGroup)
	ctx := context.Background()
	envs := h.seed(2)
	for i, st := range []event.Status{event.StatusProcessed, event.StatusReceived} {
		body := []byte(`{"id":"` + envs[i].ID + `","copy":"the webhook's"}`)
		rec := event.NewRecord(event.ProviderStripe, envs[i], body, ingest.Hash(body), event.SourceWebhook, st, h.now)
		if existing, err := h.events.Create(ctx, &rec); err != nil || existing != nil {
			t.Fatalf("store %s: %v (existing %v)", envs[i].ID, err, existing)
		}
	}
	before := h.records([]string{envs[0].ID, envs[1].ID})

	r := h.reconciler("sk_test_stale", func(c *reconcile.Config) { c.Events = staleEvents{h.events} })
	res, err := r.Run(ctx, reconcile.RunOptions{Since: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.Listed != 2 || res.Missing != 0 || res.Raced != 2 {
		t.Errorf("run: listed %d, missing %d, raced %d; want 2 listed, none missing, 2 raced", res.Listed, res.Missing, res.Raced)
	}
	after := h.records([]string{envs[0].ID, envs[1].ID})
	for _, e := range envs {
		b, a := before[e.ID], after[e.ID]
		if a.Status != b.Status || a.Source != event.SourceWebhook || a.PayloadHash != b.PayloadHash || string(a.Payload) != string(b.Payload) ||
			!a.ReceivedAt.Equal(b.ReceivedAt) {
			t.Errorf("%s changed: %+v\nwas %+v", e.ID, a, b)
		}
	}
	msgs := receiveAll(t, h)
	if len(msgs) != 1 || msgs[0] != envs[1].ID {
		t.Errorf("enqueued: %v; want only the received event, %s, as any duplicate delivery of it would", msgs, envs[1].ID)
	}
}

// receiveAll reads what the webhook queue holds and returns the ids it
// points to.
func receiveAll(t *testing.T, h *harness) []string {
	t.Helper()
	var ids []string
	for {
		out, err := h.stack.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(h.queue.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return ids
		}
		for _, m := range out.Messages {
			p, err := queue.Decode(aws.ToString(m.Body))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, p.ID)
		}
	}
}

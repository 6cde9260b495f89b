package cli

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// noMoveTask fails the test if a command starts an SQS message move task:
// a move task moves a whole queue, and the commands on named events must
// move or delete those events' messages only, on every endpoint (moto has
// no move tasks; LocalStack and AWS do).
func noMoveTask(t *testing.T) func(SQS) SQS {
	return func(inner SQS) SQS {
		return &faultySQS{
			SQS: inner,
			startMove: func(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
				t.Error("a command on named events started a message move task, which moves the whole queue")
				return nil, errors.New("no move task here")
			},
		}
	}
}

// sendDLQ puts a message with body on the world's dead-letter queue.
func sendDLQ(t *testing.T, w *world, body string) {
	t.Helper()
	if _, err := w.s.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.s.Queue("DeadLetterQueue").URL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

// deadLettered stores an event and fails it on its last receive, as the
// processor does before SQS moves its message to the DLQ, and puts that
// message on the DLQ.
func deadLettered(t *testing.T, w *world, id string) {
	t.Helper()
	rec := w.store(body(t, "invoice.paid", stripeOpts(id, now.Unix())), event.SourceWebhook, event.StatusReceived, time.Time{})
	w.setFail(id, errors.New("billing API: 400 invalid customer"))
	w.process(rec, 5)
	w.setFail(id, nil)
	if got, _ := w.events.Get(context.Background(), "stripe", id); got.Status != event.StatusDeadLettered {
		t.Fatalf("setup: %s is %s, want dead_lettered", id, got.Status)
	}
	sendDLQ(t, w, pointerBody(t, id))
}

// TestDiscardRecordsItThenRemovesIt: dlq discard deletes exactly the
// event's messages from the DLQ, every copy, and leaves every other
// message there and visible; the record says when and why, and the event
// command shows it. The DLQ alarm's metric then counts only the others.
func TestDiscardRecordsItThenRemovesIt(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	c.wrapSQS = noMoveTask(t)
	ctx := context.Background()
	deadLettered(t, w, "evt_poison")
	sendDLQ(t, w, pointerBody(t, "evt_poison")) // a second copy
	others := deadLetter(t, w, 12)
	sendDLQ(t, w, "not a pointer")

	r := c.run(ctx, "dlq", "discard", "evt_poison", "--reason", "billing API rejects this customer for good; credited by hand").must(t, 0)
	c.golden("dlq_discard", r)

	rec, err := w.events.Get(ctx, "stripe", "evt_poison")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != event.StatusDeadLettered || !rec.DiscardedAt.Equal(now) || !strings.Contains(rec.DiscardReason, "credited by hand") {
		t.Errorf(
			"record after discard: status %s, discarded at %v, reason %q; want dead_lettered, %v, the reason",
			rec.Status,
			rec.DiscardedAt,
			rec.DiscardReason,
			now,
		)
	}
	r = c.run(ctx, "event", "evt_poison").must(t, 0)
	if !strings.Contains(r.stdout, "credited by hand") {
		t.Errorf("inboxctl event does not show the discard:\n%s", r.stdout)
	}
	var j EventJSON
	if err := json.Unmarshal([]byte(c.run(ctx, "event", "evt_poison", "--json").must(t, 0).stdout), &j); err != nil || j.DiscardReason == "" ||
		j.DiscardedAt == "" {
		t.Errorf("event --json: discarded_at %q, discard_reason %q (%v); want both", j.DiscardedAt, j.DiscardReason, err)
	}

	// Every other message is back, visible at once: read now, not after
	// the search's visibility timeout.
	left := bodies(t, w.s.SQS, w.s.Queue("DeadLetterQueue").URL)
	want := []string{"not a pointer"}
	for _, id := range others {
		want = append(want, pointerBody(t, id))
	}
	slices.Sort(left)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("DLQ after discard: %d messages %q, want the %d others, every one visible", len(left), left, len(want))
	}
	if n := len(bodies(t, w.s.SQS, w.s.Queue("WebhookQueue").URL)); n != 0 {
		t.Errorf("discard put %d message(s) on the webhook queue", n)
	}
}

// TestDiscardOfAPendingRecordDeadLettersIt: a record still failed whose
// message reached the DLQ (the processor crashed on its last receive)
// becomes dead_lettered, so the reconciler's stuck sweep, which reads the
// pending lane, does not send it through again behind the operator's back.
func TestDiscardOfAPendingRecordDeadLettersIt(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	ctx := context.Background()
	rec := w.store(body(t, "invoice.paid", stripeOpts("evt_crashed", now.Unix())), event.SourceWebhook, event.StatusReceived, time.Time{})
	w.setFail("evt_crashed", errors.New("timeout"))
	w.process(rec, 1) // failed, retryable
	sendDLQ(t, w, pointerBody(t, "evt_crashed"))
	sweeps := func() bool {
		for s, err := range w.events.Stuck(ctx, "stripe", now.Add(time.Hour), 100) {
			if err != nil {
				t.Fatal(err)
			}
			if s.ID == "evt_crashed" {
				return true
			}
		}
		return false
	}
	if !sweeps() {
		t.Fatal("setup: the stuck sweep does not find the failed event")
	}

	c.run(ctx, "dlq", "discard", "evt_crashed", "--reason", "duplicate of evt_other, applied by hand").must(t, 0)
	got, err := w.events.Get(ctx, "stripe", "evt_crashed")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != event.StatusDeadLettered {
		t.Errorf("a failed record after discard is %s, want dead_lettered", got.Status)
	}
	if sweeps() {
		t.Error("the stuck sweep still finds the discarded event: the reconciler would send it through again")
	}
	// It stays replayable: an operator can still change their mind.
	w.setFail("evt_crashed", nil)
	c.run(ctx, "replay", "evt_crashed").must(t, 0)
	w.drain()
	if got, _ := w.events.Get(ctx, "stripe", "evt_crashed"); got.Status != event.StatusProcessed || w.effectCount("evt_crashed") != 1 {
		t.Errorf("replayed after discard: %s with %d effects, want processed with 1", got.Status, w.effectCount("evt_crashed"))
	}
}

// TestDiscardRefusesWhatItCannotRecord: no reason, no record, no message:
// each is refused and changes nothing.
func TestDiscardRefusesWhatItCannotRecord(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	ctx := context.Background()
	deadLettered(t, w, "evt_dead")
	sendDLQ(t, w, pointerBody(t, "evt_expired")) // its record is gone

	r := c.run(ctx, "dlq", "discard", "evt_dead").must(t, 2)
	if !strings.Contains(r.stderr, "--reason is required") {
		t.Errorf("without --reason: %s", r.stderr)
	}
	r = c.run(ctx, "dlq", "discard", "evt_expired", "--reason", "x", "--json").must(t, 1)
	var out DiscardJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Results) != 1 || out.Results[0].Action != "not_found" {
		t.Errorf("no record: got %s (%v), want action not_found", r.stdout, err)
	}
	stored := w.store(body(t, "invoice.paid", stripeOpts("evt_no_message", now.Unix())), event.SourceWebhook, event.StatusReceived, time.Time{})
	r = c.run(ctx, "dlq", "discard", stored.ID, "--reason", "x").must(t, 1)
	if !strings.Contains(r.stdout, "no_message") {
		t.Errorf("no message: %s", r.stdout)
	}
	if got, _ := w.events.Get(ctx, "stripe", stored.ID); !got.DiscardedAt.IsZero() || got.Status != event.StatusReceived {
		t.Errorf("an event with no message was changed: %s, discarded at %v", got.Status, got.DiscardedAt)
	}
	if _, dlq := census(t, w); !slices.Equal(dlq, []string{"evt_dead", "evt_expired"}) {
		t.Errorf("DLQ after refusals: %v, want both messages still there", dlq)
	}
}

// TestDiscardInterruptedIsNeverSilent: the decision is recorded before
// any message is deleted, so a delete that fails leaves the message and
// the record saying so; running the command again finishes the job.
func TestDiscardInterruptedIsNeverSilent(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	ctx := context.Background()
	deadLettered(t, w, "evt_dead")
	c.wrapSQS = func(inner SQS) SQS {
		return &faultySQS{
			SQS: inner,
			deleteBatch: func(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
				return nil, errors.New("injected: connection reset")
			},
		}
	}
	r := c.run(ctx, "dlq", "discard", "evt_dead", "--reason", "poison").must(t, 1)
	if !strings.Contains(r.stdout, "run the discard again") {
		t.Errorf("a failed delete does not say what to do: %s", r.stdout)
	}
	if got, _ := w.events.Get(ctx, "stripe", "evt_dead"); got.DiscardedAt.IsZero() {
		t.Error("the decision was not recorded before the delete")
	}
	if _, dlq := census(t, w); !slices.Equal(dlq, []string{"evt_dead"}) {
		t.Fatalf("DLQ after a failed delete: %v, want the message still there and visible", dlq)
	}
	// The census hid it; put it back and run again.
	sendDLQ(t, w, pointerBody(t, "evt_dead"))
	c.wrapSQS = nil
	c.run(ctx, "dlq", "discard", "evt_dead", "--reason", "poison").must(t, 0)
	if _, dlq := census(t, w); len(dlq) != 0 {
		t.Errorf("DLQ after the second discard: %v, want empty", dlq)
	}
}

// TestRedriveOneEvent: redrive --event moves every copy of that event's
// pointer and nothing else, on every endpoint the same way (never a move
// task, which moves the whole queue); the processor then claims the
// dead_lettered event and applies it once.
func TestRedriveOneEvent(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	c.wrapSQS = noMoveTask(t)
	ctx := context.Background()
	deadLettered(t, w, "evt_back")
	sendDLQ(t, w, pointerBody(t, "evt_back")) // a second copy
	others := deadLetter(t, w, 23)

	r := c.run(ctx, "dlq", "redrive", "--event", "evt_back", "--json").must(t, 0)
	var out RedriveJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Moved != 2 || out.Method != "receive_send_delete" || !slices.Equal(out.Events, []string{"evt_back"}) || out.Remaining != 23 {
		t.Errorf("got %+v, want 2 moved by receive_send_delete for evt_back, 23 remaining", out)
	}
	if n := w.drain(); n != 2 {
		t.Fatalf("the processor handled %d messages, want the 2 copies", n)
	}
	if got, _ := w.events.Get(ctx, "stripe", "evt_back"); got.Status != event.StatusProcessed || w.effectCount("evt_back") != 1 {
		t.Errorf("after redrive --event: %s with %d effects, want processed with 1", got.Status, w.effectCount("evt_back"))
	}
	if main, dlq := census(t, w); len(main) != 0 || !slices.Equal(dlq, others) {
		t.Errorf("after redrive --event: webhook queue %v, DLQ %v; want the other %d untouched", main, dlq, len(others))
	}
}

func TestRedriveOneEventRefusals(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	c.wrapSQS = noMoveTask(t)
	ctx := context.Background()
	ids := deadLetter(t, w, 3)

	r := c.run(ctx, "dlq", "redrive", "--event", "evt_nowhere").must(t, 1)
	if !strings.Contains(r.stderr, "nothing in the dead-letter queue points to evt_nowhere") {
		t.Errorf("an id with no message: %s", r.stderr)
	}
	c.run(ctx, "dlq", "redrive", "--event", ids[0], "--max", "1").must(t, 2)
	if main, dlq := census(t, w); len(main) != 0 || !slices.Equal(dlq, ids) {
		t.Errorf("after refusals: webhook queue %v, DLQ %v; want nothing moved", main, dlq)
	}
}

// TestRedriveOneEventInterruptedLosesNothing: a send that fails leaves
// the message in the DLQ, visible again, and every other message too.
func TestRedriveOneEventInterruptedLosesNothing(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	ctx := context.Background()
	ids := deadLetter(t, w, 5)
	c.wrapSQS = func(inner SQS) SQS {
		return &faultySQS{SQS: inner, sendBatch: func(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
			return nil, errors.New("injected: connection reset")
		}}
	}
	r := c.run(ctx, "dlq", "redrive", "--event", ids[2]).must(t, 1)
	if !strings.Contains(r.stderr, "nothing was lost") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if main, dlq := census(t, w); len(main) != 0 || !slices.Equal(dlq, ids) {
		t.Errorf("after a failed send: webhook queue %v, DLQ %v; want every message in the DLQ, visible", main, dlq)
	}
}

// TestDiscardWorksForEveryProvider: dlq discard finds an event of any
// provider, records the decision on that provider's record and deletes
// that provider's messages only. An id two providers share is refused
// until --provider names one, and then only that one's message goes.
func TestDiscardWorksForEveryProvider(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	c.wrapSQS = noMoveTask(t)
	ctx := context.Background()
	stored := func(prov, id string) {
		t.Helper()
		b := []byte(`{"id":"` + id + `"}`)
		r := event.NewRecord(
			prov,
			event.Envelope{ID: id, Type: "delivery.test", Created: now.Unix()},
			b,
			ingest.Hash(b),
			event.SourceWebhook,
			event.StatusFailed,
			now,
		)
		if _, err := w.events.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
		p, err := json.Marshal(event.PointerTo(r))
		if err != nil {
			t.Fatal(err)
		}
		sendDLQ(t, w, string(p))
	}
	for _, prov := range event.Providers {
		if prov == event.ProviderStripe {
			continue
		}
		t.Run(prov, func(t *testing.T) {
			id := "dlv_" + prov
			stored(prov, id)
			r := c.run(ctx, "dlq", "discard", id, "--reason", "a test delivery", "--json").must(t, 0)
			var out DiscardJSON
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Results) != 1 {
				t.Fatalf("got %s (%v), want one result", r.stdout, err)
			}
			if got := out.Results[0]; got.Action != "discarded" || got.Provider != prov || got.Messages != 1 || got.StatusAfter != "dead_lettered" {
				t.Errorf("got %+v, want %s's event discarded, its 1 message deleted, dead_lettered", got, prov)
			}
			rec, err := w.events.Get(ctx, prov, id)
			if err != nil || rec.DiscardReason != "a test delivery" || rec.Status != event.StatusDeadLettered {
				t.Errorf("%s's record: %s, reason %q (%v); want dead_lettered with the reason", prov, rec.Status, rec.DiscardReason, err)
			}
		})
	}
	if _, dlq := census(t, w); len(dlq) != 0 {
		t.Fatalf("DLQ after the discards: %v, want empty", dlq)
	}

	stored(provider.GitHub, "dlv_shared")
	stored(provider.Shopify, "dlv_shared")
	r := c.run(ctx, "dlq", "discard", "dlv_shared", "--reason", "x").must(t, 1)
	if !strings.Contains(r.stdout, "--provider") {
		t.Errorf("an id of two providers: %s, want a result naming --provider", r.stdout)
	}
	c.run(ctx, "dlq", "discard", "dlv_shared", "--provider", "shopify", "--reason", "x").must(t, 0)
	if got, _ := w.events.Get(ctx, provider.GitHub, "dlv_shared"); !got.DiscardedAt.IsZero() {
		t.Error("--provider shopify discarded GitHub's event too")
	}
	if _, dlq := census(t, w); !slices.Equal(dlq, []string{"dlv_shared"}) {
		t.Errorf("DLQ after --provider shopify: %v, want GitHub's message alone", dlq)
	}
	c.run(ctx, "dlq", "discard", "dlv_shared", "--provider", "gitlab", "--reason", "x").must(t, 2)
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/queue"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefixture"
)

// faultySQS passes calls to the real client, except those its hooks take.
type faultySQS struct {
	SQS
	sendBatch   func(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	deleteBatch func(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

func (f *faultySQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if f.sendBatch != nil {
		return f.sendBatch(ctx, in, optFns...)
	}
	return f.SQS.SendMessageBatch(ctx, in, optFns...)
}

func (f *faultySQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if f.deleteBatch != nil {
		return f.deleteBatch(ctx, in, optFns...)
	}
	return f.SQS.DeleteMessageBatch(ctx, in, optFns...)
}

// deadLetter puts pointers to n events on the DLQ and returns their ids.
func deadLetter(t *testing.T, w *world, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("evt_dlq_%02d", i)
		ids = append(ids, id)
		if _, err := w.s.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(w.s.Queue("DeadLetterQueue").URL), MessageBody: aws.String(pointerBody(t, id)),
		}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// census returns the event ids in each queue, sorted.
func census(t *testing.T, w *world) (main, dlq []string) {
	t.Helper()
	ids := func(url string) []string {
		var out []string
		for _, b := range bodies(t, w.s.SQS, url) {
			p, err := queue.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.ID)
		}
		sort.Strings(out)
		return out
	}
	return ids(w.s.Queue("WebhookQueue").URL), ids(w.s.Queue("DeadLetterQueue").URL)
}

// lost returns the ids of want found in neither queue.
func lost(want, main, dlq []string) []string {
	var out []string
	for _, id := range want {
		if !slices.Contains(main, id) && !slices.Contains(dlq, id) {
			out = append(out, id)
		}
	}
	return out
}

func TestRedriveFallsBackAndMovesEverything(t *testing.T) {
	w := newWorld(t, false)
	c := w.cli()
	ids := deadLetter(t, w, 23)
	r := c.run(context.Background(), "dlq", "redrive").must(t, 0)
	c.golden("dlq_redrive", r)
	main, dlq := census(t, w)
	if !slices.Equal(main, ids) || len(dlq) != 0 {
		t.Errorf("after redrive: webhook queue %v, DLQ %v; want all 23 moved, once each", main, dlq)
	}
}

func TestRedriveMax(t *testing.T) {
	w := newWorld(t, false)
	c := w.cli()
	deadLetter(t, w, 12)
	r := c.run(context.Background(), "dlq", "redrive", "--max", "5", "--json").must(t, 0)
	var out RedriveJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Moved != 5 || out.Method != "receive_send_delete" || out.Remaining != 7 {
		t.Errorf("got %+v, want 5 moved by receive_send_delete, 7 remaining", out)
	}
	main, dlq := census(t, w)
	if len(main) != 5 || len(dlq) != 7 {
		t.Errorf("queues: %d and %d, want 5 and 7", len(main), len(dlq))
	}
}

// TestRedriveInterruptedLosesNothing interrupts a redrive half-way in each
// of the ways it can be: the send fails, the delete after a send fails (a
// crash between the two), the operator presses Ctrl-C. Every message is
// then in at least one queue, and a second redrive finishes the job.
func TestRedriveInterruptedLosesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fault wraps the client; calls counts the batches seen so far.
		fault func(inner SQS, calls *atomic.Int32, cancel context.CancelFunc) SQS
		// dup: messages may be in both queues afterwards.
		dup bool
	}{
		{"send fails on the second batch", func(inner SQS, calls *atomic.Int32, _ context.CancelFunc) SQS {
			return &faultySQS{SQS: inner, sendBatch: func(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
				if calls.Add(1) == 2 {
					return nil, errors.New("injected: connection reset")
				}
				return inner.SendMessageBatch(ctx, in, o...)
			}}
		}, false},
		{"some sends of a batch fail", func(inner SQS, calls *atomic.Int32, _ context.CancelFunc) SQS {
			return &faultySQS{SQS: inner, sendBatch: func(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
				if calls.Add(1) != 2 {
					return inner.SendMessageBatch(ctx, in, o...)
				}
				// Half the entries go through, half are refused.
				half := *in
				half.Entries = in.Entries[:len(in.Entries)/2]
				out, err := inner.SendMessageBatch(ctx, &half, o...)
				if err != nil {
					return nil, err
				}
				for _, e := range in.Entries[len(in.Entries)/2:] {
					out.Failed = append(out.Failed, sqsFailed(e.Id))
				}
				return out, nil
			}}
		}, false},
		{"crash between send and delete", func(inner SQS, calls *atomic.Int32, _ context.CancelFunc) SQS {
			return &faultySQS{SQS: inner, deleteBatch: func(ctx context.Context, in *sqs.DeleteMessageBatchInput, o ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
				if calls.Add(1) == 2 {
					return nil, errors.New("injected: process killed")
				}
				return inner.DeleteMessageBatch(ctx, in, o...)
			}}
		}, true},
		{"Ctrl-C while sending", func(inner SQS, calls *atomic.Int32, cancel context.CancelFunc) SQS {
			return &faultySQS{SQS: inner, sendBatch: func(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
				out, err := inner.SendMessageBatch(ctx, in, o...)
				if calls.Add(1) == 2 {
					// The batch is sent; its delete must still happen.
					cancel()
				}
				return out, err
			}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, false)
			c := w.cli()
			ids := deadLetter(t, w, 30)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var calls atomic.Int32
			c.wrapSQS = func(inner SQS) SQS { return tc.fault(inner, &calls, cancel) }
			r := c.run(ctx, "dlq", "redrive")
			if r.code != ExitFailure {
				t.Fatalf("interrupted redrive: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
			}
			if !regexp.MustCompile(`nothing was lost`).MatchString(r.stderr) {
				t.Errorf("stderr does not reassure and say what to do next:\n%s", r.stderr)
			}
			main, dlq := census(t, w)
			if l := lost(ids, main, dlq); len(l) > 0 {
				t.Fatalf("lost %d messages: %v", len(l), l)
			}
			if !tc.dup && len(main)+len(dlq) != len(ids) {
				t.Errorf("webhook queue %d + DLQ %d messages, want exactly %d", len(main), len(dlq), len(ids))
			}
			if len(main) == 0 || len(dlq) == 0 {
				t.Errorf("webhook queue %d, DLQ %d: the fault did not interrupt half-way", len(main), len(dlq))
			}

			// The census hid what it read; put the DLQ's share back as
			// new messages, then finish the job.
			for _, id := range dlq {
				if _, err := w.s.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.s.Queue("DeadLetterQueue").URL), MessageBody: aws.String(pointerBody(t, id))}); err != nil {
					t.Fatal(err)
				}
			}
			c.wrapSQS = nil
			c.run(context.Background(), "dlq", "redrive").must(t, 0)
			rest, left := census(t, w)
			all := append(main, rest...)
			if l := lost(ids, all, nil); len(l) > 0 || len(left) != 0 {
				t.Errorf("after the second redrive: lost %v, %d left in the DLQ", l, len(left))
			}
		})
	}
}

func TestDLQListPeeksWithoutLosing(t *testing.T) {
	w := newWorld(t, true)
	w.seed()
	c := w.cli()
	ctx := context.Background()
	dlqURL := w.s.Queue("DeadLetterQueue").URL
	for _, b := range []string{pointerBody(t, "evt_golden_dead"), pointerBody(t, "evt_expired"), "not a pointer"} {
		if _, err := w.s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	ids := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	times := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	normalize := func(r result) result {
		r.stdout = ids.ReplaceAllString(r.stdout, "<message-id>")
		r.stdout = times.ReplaceAllString(r.stdout, "<sent-at>")
		return r
	}
	// The order SQS returns messages in is not fixed: compare sorted JSON.
	r := c.run(ctx, "dlq", "list", "--json").must(t, 0)
	var list DLQListJSON
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Messages, func(i, j int) bool {
		return list.Messages[i].EventID+list.Messages[i].Body < list.Messages[j].EventID+list.Messages[j].Body
	})
	sorted, _ := json.MarshalIndent(list, "", "  ")
	r.stdout = string(sorted) + "\n"
	c.golden("dlq_list_json", normalize(r))

	// Peeking twice shows the same messages: nothing was consumed.
	r = c.run(ctx, "dlq", "list").must(t, 0)
	for _, want := range []string{"evt_golden_dead", "dead_lettered", "ledger: connection reset", "evt_expired", "missing", "not a pointer", "3 message(s) shown, about 3"} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(r.stdout) {
			t.Errorf("dlq list: %q missing from\n%s", want, r.stdout)
		}
	}
	if n := len(bodies(t, w.s.SQS, dlqURL)); n != 3 {
		t.Errorf("DLQ after two peeks: %d messages, want 3 (and all visible at once)", n)
	}

	empty := newWorld(t, false).cli()
	empty.t = t
	empty.golden("dlq_list_empty", empty.run(ctx, "dlq", "list").must(t, 0))
}

// TestRedrivenDeadLetteredEventIsProcessed: after a redrive, the processor
// claims a dead_lettered event again and applies it once.
func TestRedrivenDeadLetteredEventIsProcessed(t *testing.T) {
	w := newWorld(t, false)
	c := w.cli()
	ctx := context.Background()
	b := body(t, "invoice.paid", stripeOpts("evt_back", time.Now().Unix()))
	rec := w.store(b, event.SourceWebhook, event.StatusReceived, time.Now())
	w.setFail("evt_back", errors.New("downstream down"))
	w.process(rec, 5) // the last receive: dead_lettered
	if got, _ := w.events.Get(ctx, "stripe", "evt_back"); got.Status != event.StatusDeadLettered {
		t.Fatalf("setup: %s, want dead_lettered", got.Status)
	}
	if _, err := w.s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(w.s.Queue("DeadLetterQueue").URL), MessageBody: aws.String(pointerBody(t, "evt_back"))}); err != nil {
		t.Fatal(err)
	}
	w.setFail("evt_back", nil)
	c.run(ctx, "dlq", "redrive").must(t, 0)
	if n := w.drain(); n != 1 {
		t.Fatalf("handled %d messages, want 1", n)
	}
	got, _ := w.events.Get(ctx, "stripe", "evt_back")
	if got.Status != event.StatusProcessed || w.effectCount("evt_back") != 1 {
		t.Errorf("after redrive: %s with %d effects, want processed with 1", got.Status, w.effectCount("evt_back"))
	}
}

func sqsFailed(id *string) sqstypes.BatchResultErrorEntry {
	return sqstypes.BatchResultErrorEntry{Id: id, Code: aws.String("InternalError"), Message: aws.String("injected"), SenderFault: false}
}

func stripeOpts(id string, created int64) stripefixture.Options {
	return stripefixture.Options{ID: id, Customer: "cus_" + id, Created: created}
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// faultySQS passes calls to the real client, except those its hooks take.
type faultySQS struct {
	SQS
	sendBatch   func(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	deleteBatch func(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	startMove   func(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	listMoves   func(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

func (f *faultySQS) StartMessageMoveTask(
	ctx context.Context,
	in *sqs.StartMessageMoveTaskInput,
	optFns ...func(*sqs.Options),
) (*sqs.StartMessageMoveTaskOutput, error) {
	if f.startMove != nil {
		return f.startMove(ctx, in, optFns...)
	}
	return f.SQS.StartMessageMoveTask(ctx, in, optFns...)
}

func (f *faultySQS) ListMessageMoveTasks(
	ctx context.Context,
	in *sqs.ListMessageMoveTasksInput,
	optFns ...func(*sqs.Options),
) (*sqs.ListMessageMoveTasksOutput, error) {
	if f.listMoves != nil {
		return f.listMoves(ctx, in, optFns...)
	}
	return f.SQS.ListMessageMoveTasks(ctx, in, optFns...)
}

func (f *faultySQS) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if f.sendBatch != nil {
		return f.sendBatch(ctx, in, optFns...)
	}
	return f.SQS.SendMessageBatch(ctx, in, optFns...)
}

func (f *faultySQS) DeleteMessageBatch(
	ctx context.Context,
	in *sqs.DeleteMessageBatchInput,
	optFns ...func(*sqs.Options),
) (*sqs.DeleteMessageBatchOutput, error) {
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

// moveTasks reports whether the emulator's SQS runs message move tasks:
// LocalStack does, moto does not (docs/localstack.md). `inboxctl dlq
// redrive` takes the move task where there is one and moves messages
// itself where there is none; each test of a path says which it expects
// where.
func moveTasks(t *testing.T) bool {
	t.Helper()
	return testenv.Backend(t, "SQS") == "localstack"
}

// fallback is the redrive that moves messages itself: the plain command
// where SQS has no move tasks (it falls back), --manual where it has.
func fallback(t *testing.T) []string {
	if moveTasks(t) {
		return []string{"dlq", "redrive", "--manual"}
	}
	return []string{"dlq", "redrive"}
}

// TestRedriveTakesTheEndpointsPath: with move tasks (LocalStack, AWS) the
// redrive is SQS's move task; without (moto) inboxctl says so and moves
// the messages itself. Either way every message is moved, once.
func TestRedriveTakesTheEndpointsPath(t *testing.T) {
	w := newWorld(t, false)
	c := w.cli()
	ids := deadLetter(t, w, 23)
	r := c.run(context.Background(), "dlq", "redrive").must(t, 0)
	if moveTasks(t) {
		c.golden("dlq_redrive_move_task", r)
	} else {
		c.golden("dlq_redrive", r)
	}
	main, dlq := census(t, w)
	if !slices.Equal(main, ids) || len(dlq) != 0 {
		t.Errorf("after redrive: webhook queue %v, DLQ %v; want all 23 moved, once each", main, dlq)
	}
}

// TestRedriveManual: --manual moves the messages with receive, send and
// delete whatever the endpoint supports, and says nothing of move tasks.
func TestRedriveManual(t *testing.T) {
	w := newWorld(t, false)
	c := w.cli()
	ids := deadLetter(t, w, 12)
	c.golden("dlq_redrive_manual", c.run(context.Background(), "dlq", "redrive", "--manual").must(t, 0))
	main, dlq := census(t, w)
	if !slices.Equal(main, ids) || len(dlq) != 0 {
		t.Errorf("after redrive --manual: webhook queue %v, DLQ %v; want all 12 moved, once each", main, dlq)
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

// TestRedriveInterruptedLosesNothing interrupts a redrive that moves
// messages itself (the fallback; --manual where SQS has move tasks)
// half-way in each of the ways it can be: the send fails, the delete after
// a send fails (a crash between the two), the operator presses Ctrl-C.
// Every message is then in at least one queue, and a second redrive
// finishes the job. TestRedriveMoveTaskInterruptedLosesNothing does the
// same for the move task.
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
			r := c.run(ctx, fallback(t)...)
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

// TestRedriveMoveTaskInterruptedLosesNothing interrupts a redrive that
// runs as an SQS message move task, in each of the ways it can be: the
// operator presses Ctrl-C while it runs, following its progress fails, the
// task is cancelled half-way (CancelMessageMoveTask, from the console or
// the CLI), the task cannot start. SQS moves each message atomically and
// goes on without inboxctl: nothing is lost, nothing is doubled, and what
// is left is moved by a second redrive. The task is slowed to 10 messages
// a second so that each interruption falls while it runs.
//
// Where SQS has no move tasks (moto), the path does not exist: the test
// asserts that, which pins the difference.
func TestRedriveMoveTaskInterruptedLosesNothing(t *testing.T) {
	if !moveTasks(t) {
		w := newWorld(t, false)
		_, err := w.s.SQS.StartMessageMoveTask(context.Background(), &sqs.StartMessageMoveTaskInput{
			SourceArn: aws.String(w.s.Queue("DeadLetterQueue").ARN), DestinationArn: aws.String(w.s.Queue("WebhookQueue").ARN),
		})
		if !ops.Unsupported(err) {
			t.Fatalf("StartMessageMoveTask on %s: got %v, want it unsupported (then run this test's cases there, and update docs/localstack.md)",
				testenv.Backend(t, "SQS"), err)
		}
		return
	}
	type hooks struct {
		w      *world
		cancel context.CancelFunc
		handle atomic.Value // the task's handle
		lists  atomic.Int32
	}
	slow := func(h *hooks, inner SQS) func(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
		return func(ctx context.Context, in *sqs.StartMessageMoveTaskInput, o ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
			slowed := *in
			slowed.MaxNumberOfMessagesPerSecond = aws.Int32(10)
			out, err := inner.StartMessageMoveTask(ctx, &slowed, o...)
			if err == nil {
				h.handle.Store(aws.ToString(out.TaskHandle))
			}
			return out, err
		}
	}
	for _, tc := range []struct {
		name  string
		fault func(h *hooks, inner SQS) SQS
		// code and stderr are inboxctl's answer; settled: the task ran to
		// its end by itself (else it was cancelled half-way).
		code    int
		stderr  string
		settled bool
	}{
		{"Ctrl-C while it runs", func(h *hooks, inner SQS) SQS {
			return &faultySQS{SQS: inner, startMove: slow(h, inner), listMoves: func(ctx context.Context, in *sqs.ListMessageMoveTasksInput, o ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
				out, err := inner.ListMessageMoveTasks(ctx, in, o...)
				h.cancel()
				return out, err
			}}
		}, ExitFailure, "interrupted: the move task goes on in SQS by itself, and nothing is lost", true},
		{"following it fails", func(h *hooks, inner SQS) SQS {
			return &faultySQS{SQS: inner, startMove: slow(h, inner), listMoves: func(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
				return nil, errors.New("injected: connection reset")
			}}
		}, ExitFailure, "the move task goes on in SQS by itself, and nothing is lost", true},
		{"cancelled half-way", func(h *hooks, inner SQS) SQS {
			return &faultySQS{SQS: inner, startMove: slow(h, inner), listMoves: func(ctx context.Context, in *sqs.ListMessageMoveTasksInput, o ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
				out, err := inner.ListMessageMoveTasks(ctx, in, o...)
				if err == nil && len(out.Results) == 1 && out.Results[0].ApproximateNumberOfMessagesMoved > 0 && h.lists.Add(1) == 1 {
					if _, cerr := h.w.s.SQS.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(h.handle.Load().(string))}); cerr != nil {
						return nil, cerr
					}
				}
				return out, err
			}}
		}, ExitFailure, "nothing was lost: run `inboxctl dlq redrive` again", false},
		{"it cannot start", func(h *hooks, inner SQS) SQS {
			return &faultySQS{SQS: inner, startMove: func(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
				return nil, errors.New("injected: connection reset")
			}}
		}, ExitOK, "could not start an SQS message move task", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, false)
			c := w.cli()
			c.pollEvery = 100 * time.Millisecond
			ids := deadLetter(t, w, 30)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := &hooks{w: w, cancel: cancel}
			c.wrapSQS = func(inner SQS) SQS { return tc.fault(h, inner) }
			r := c.run(ctx, "dlq", "redrive")
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("interrupted redrive: exit %d, want %d, and stderr %q\n%s%s", r.code, tc.code, tc.stderr, r.stdout, r.stderr)
			}
			// SQS finishes (or has stopped) the task on its own.
			var last sqstypes.ListMessageMoveTasksResultEntry
			testenv.Eventually(t, 30*time.Second, "the move task to end", func() bool {
				out, err := w.s.SQS.ListMessageMoveTasks(
					context.Background(),
					&sqs.ListMessageMoveTasksInput{SourceArn: aws.String(w.s.Queue("DeadLetterQueue").ARN)},
				)
				if err != nil || len(out.Results) == 0 {
					return h.handle.Load() == nil // no task: the fallback moved them
				}
				last = out.Results[0]
				return aws.ToString(last.Status) != "RUNNING" && aws.ToString(last.Status) != "CANCELLING"
			})
			main, dlq := census(t, w)
			if l := lost(ids, main, dlq); len(l) > 0 {
				t.Fatalf("lost %d messages: %v", len(l), l)
			}
			if len(main)+len(dlq) != len(ids) {
				t.Errorf("webhook queue %d + DLQ %d messages, want exactly %d: a move task moves each once", len(main), len(dlq), len(ids))
			}
			if tc.settled {
				if len(dlq) != 0 {
					t.Errorf("the task went on by itself, yet %d messages stayed in the DLQ (task %+v)", len(dlq), last)
				}
				return
			}
			if len(main) == 0 || len(dlq) == 0 {
				t.Errorf("webhook queue %d, DLQ %d: the task was not cancelled half-way (task %s)", len(main), len(dlq), aws.ToString(last.Status))
			}
			// The census hid what it read; put the DLQ's share back as new
			// messages, then finish the job.
			for _, id := range dlq {
				if _, err := w.s.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.s.Queue("DeadLetterQueue").URL), MessageBody: aws.String(pointerBody(t, id))}); err != nil {
					t.Fatal(err)
				}
			}
			c.wrapSQS = nil
			c.run(context.Background(), "dlq", "redrive").must(t, 0)
			rest, left := census(t, w)
			all := append(main, rest...)
			if l := lost(ids, all, nil); len(l) > 0 || len(left) != 0 || len(all) != len(ids) {
				t.Errorf("after the second redrive: lost %v, %d left in the DLQ, %d moved in all (want %d)", l, len(left), len(all), len(ids))
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

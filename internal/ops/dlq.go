package ops

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// DLQ is a peek at the dead-letter queue.
type DLQ struct {
	QueueURL string
	// Approximate is SQS's ApproximateNumberOfMessages of the queue.
	Approximate int
	Messages    []DLQMessage
}

// DLQMessage is one dead-lettered message beside its event's status.
type DLQMessage struct {
	MessageID string
	SentAt    time.Time
	Provider  string
	EventID   string
	Type      string
	// EventStatus is the record's status, "missing" when the store has no
	// record (expired by its TTL), "" when the message is not an event
	// pointer (then Body is set, clipped to 200 characters).
	EventStatus string
	Attempts    int
	LastError   string
	Body        string
}

// Redrive methods (RedriveResult.Method).
const (
	// MethodMoveTask: SQS moved the messages (StartMessageMoveTask).
	MethodMoveTask = "move_task"
	// MethodReceiveSendDelete: the operation moved each message itself.
	MethodReceiveSendDelete = "receive_send_delete"
)

// RedriveResult is what a redrive did.
type RedriveResult struct {
	Method string
	Moved  int
	// Remaining is the DLQ's ApproximateNumberOfMessages afterwards.
	Remaining int
	From, To  string
	// Events are the events a redrive of named events moved, or tried to.
	Events []string
}

// peekVisibility hides peeked messages for long enough to read them all;
// if the process dies before making them visible again, they reappear on
// their own after it.
const peekVisibility = 30

// DeadLetters peeks at up to limit dead-lettered messages and their
// events' status without consuming them: each is received with a short
// visibility timeout and made visible again at once, whatever happens.
func (s *Stack) DeadLetters(ctx context.Context, limit int) (DLQ, error) {
	approx, err := s.approxMessages(ctx, s.DLQ)
	if err != nil {
		return DLQ{}, s.explain("", err)
	}
	var msgs []sqstypes.Message
	defer func() {
		// Visible again whatever happened, even after Ctrl-C.
		s.release(context.WithoutCancel(ctx), s.DLQ, msgs)
	}()
	seen := map[string]bool{}
	for len(msgs) < limit {
		out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(s.DLQ),
			MaxNumberOfMessages:         int32(min(10, limit-len(msgs))),
			VisibilityTimeout:           peekVisibility,
			WaitTimeSeconds:             waitSeconds(len(msgs), approx),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return DLQ{}, s.explain("", fmt.Errorf("receive from the dead-letter queue: %w", err))
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				seen[id] = true
				msgs = append(msgs, m)
			}
		}
	}
	list := DLQ{QueueURL: s.DLQ, Approximate: approx, Messages: []DLQMessage{}}
	for _, m := range msgs {
		d, err := s.describe(ctx, m)
		if err != nil {
			return DLQ{}, err
		}
		list.Messages = append(list.Messages, d)
	}
	return list, nil
}

// describe reads the record a dead-lettered message points to.
func (s *Stack) describe(ctx context.Context, m sqstypes.Message) (DLQMessage, error) {
	d := DLQMessage{MessageID: aws.ToString(m.MessageId)}
	if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		d.SentAt = time.UnixMilli(ms)
	}
	p, err := queue.Decode(aws.ToString(m.Body))
	if err != nil {
		d.Body = clip(aws.ToString(m.Body), 200)
		return d, nil
	}
	d.Provider, d.EventID, d.Type = p.Provider, p.ID, p.Type
	rec, err := s.Events.Get(ctx, p.Provider, p.ID)
	var pe *store.PayloadError
	if errors.As(err, &pe) {
		rec, err = pe.Record, nil // the listing needs no payload
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		d.EventStatus = "missing"
	case err != nil:
		return DLQMessage{}, s.explain(s.Events.Table, err)
	default:
		d.EventStatus, d.Attempts, d.LastError = string(rec.Status), rec.Attempts, rec.LastError
	}
	return d, nil
}

// Redrive moves the dead-lettered message messageID back to the webhook
// queue, or every message when messageID is empty (RedriveAll): the
// console's redrive. Moved is 0 when the message is no longer in the
// dead-letter queue.
func (s *Stack) Redrive(ctx context.Context, messageID string) (RedriveResult, error) {
	if messageID == "" {
		return s.RedriveAll(ctx, 0, false)
	}
	res := RedriveResult{Method: MethodReceiveSendDelete, From: s.DLQ, To: s.Queue}
	var err error
	if res.Moved, _, err = s.redriveKeyed(ctx, []string{messageID}, messageIDOf); err != nil {
		return res, err
	}
	if res.Remaining, err = s.approxMessages(ctx, s.DLQ); err != nil {
		return res, s.explain("", err)
	}
	return res, nil
}

// RedriveAll moves the dead-letter queue's messages (at most limit, 0:
// all) back to the webhook queue, where the processor claims their events
// again (dead_lettered events are claimable). With limit 0 and not manual
// it asks SQS to move them all (a message move task) and follows its
// progress; where the endpoint cannot (moto), with a limit, or manual, it
// moves them itself, a batch at a time: each batch is sent to the webhook
// queue first and deleted from the DLQ only after the send succeeded.
func (s *Stack) RedriveAll(ctx context.Context, limit int, manual bool) (RedriveResult, error) {
	res := RedriveResult{From: s.DLQ, To: s.Queue}
	var moved int
	var err error
	if !manual && limit == 0 {
		res.Method = MethodMoveTask
		moved, err = s.moveTask(ctx)
		if errors.Is(err, errNoMoveTask) {
			res.Method = ""
		} else if err != nil {
			return RedriveResult{}, err
		}
	}
	if res.Method == "" || manual || limit > 0 {
		res.Method = MethodReceiveSendDelete
		moved, err = s.moveEach(ctx, limit)
		if err != nil {
			return RedriveResult{}, fmt.Errorf("%w\n%d message(s) moved before it stopped; nothing was lost "+
				"(at worst a message is in both queues, which the processor absorbs): run `inboxctl dlq redrive` again to move the rest", err, moved)
		}
	}
	res.Moved = moved
	if res.Remaining, err = s.approxMessages(ctx, s.DLQ); err != nil {
		return RedriveResult{}, s.explain("", err)
	}
	return res, nil
}

// RedriveEvents moves every message that points to one of ids (every copy)
// from the dead-letter queue to the webhook queue, as RedriveAll's manual
// path does, and leaves every other message where it was. missing are the
// ids no message pointed to. A message move task moves a whole queue,
// never one event, so this takes the same path on every endpoint.
func (s *Stack) RedriveEvents(ctx context.Context, ids []string) (res RedriveResult, missing []string, err error) {
	res = RedriveResult{Method: MethodReceiveSendDelete, From: s.DLQ, To: s.Queue, Events: ids}
	if res.Moved, missing, err = s.redriveKeyed(ctx, ids, eventIDOf); err != nil {
		return res, missing, err
	}
	if res.Remaining, err = s.approxMessages(ctx, s.DLQ); err != nil {
		return res, missing, s.explain("", err)
	}
	return res, missing, nil
}

func (s *Stack) queueAttr(ctx context.Context, url string, name sqstypes.QueueAttributeName) (string, error) {
	out, err := s.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{name}})
	if err != nil {
		return "", fmt.Errorf("read %s of %s: %w", name, url, err)
	}
	return out.Attributes[string(name)], nil
}

func (s *Stack) approxMessages(ctx context.Context, url string) (int, error) {
	v, err := s.queueAttr(ctx, url, sqstypes.QueueAttributeNameApproximateNumberOfMessages)
	if err != nil {
		return 0, err
	}
	n, _ := strconv.Atoi(v)
	return n, nil
}

// waitSeconds long-polls only when more messages are expected: SQS's short
// poll samples a subset of its servers and can come back empty early.
func waitSeconds(have, expected int) int32 {
	if have < expected {
		return 1
	}
	return 0
}

// release makes received messages visible again.
func (s *Stack) release(ctx context.Context, url string, msgs []sqstypes.Message) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for start := 0; start < len(msgs); start += 10 {
		var entries []sqstypes.ChangeMessageVisibilityBatchRequestEntry
		for i, m := range msgs[start:min(start+10, len(msgs))] {
			entries = append(entries, sqstypes.ChangeMessageVisibilityBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
			})
		}
		// A failure only delays the message's return to its visibility
		// timeout.
		_, _ = s.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
	}
}

// errNoMoveTask: the endpoint cannot run message move tasks.
var errNoMoveTask = errors.New("message move tasks not supported")

// Unsupported reports whether err means the endpoint does not implement
// the operation (moto answers such calls with a bare HTTP 500).
func Unsupported(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "InvalidAction",
			"UnknownOperationException", "NotImplemented", "NotImplementedException":
			return true
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case 404, 405, 501:
			return true
		case 500:
			// An AWS 500 names its error; an emulator's unimplemented
			// operation does not.
			return ae == nil || ae.ErrorCode() == "" || ae.ErrorCode() == "500" || ae.ErrorCode() == "UnknownError"
		}
	}
	return false
}

// moveTask moves every message with an SQS message move task and follows
// its progress. It returns errNoMoveTask where the endpoint has none.
func (s *Stack) moveTask(ctx context.Context) (int, error) {
	dlqARN, err := s.queueAttr(ctx, s.DLQ, sqstypes.QueueAttributeNameQueueArn)
	if err != nil {
		return 0, s.explain("", err)
	}
	mainARN, err := s.queueAttr(ctx, s.Queue, sqstypes.QueueAttributeNameQueueArn)
	if err != nil {
		return 0, s.explain("", err)
	}
	_, err = s.SQS.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlqARN), DestinationArn: aws.String(mainARN),
	}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if Unsupported(err) {
			s.note("this endpoint does not support SQS message move tasks; moving messages one batch at a time")
		} else {
			// Moving them ourselves is safe whatever went wrong: at worst
			// a message is moved twice, and processing is idempotent.
			s.note("could not start an SQS message move task (%v); moving messages one batch at a time", err)
		}
		return 0, errNoMoveTask
	}
	return s.followMoveTask(ctx, dlqARN)
}

// followMoveTask reads the move task's progress until it ends.
func (s *Stack) followMoveTask(ctx context.Context, dlqARN string) (int, error) {
	var b Progress = noProgress{}
	for {
		out, err := s.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN), MaxResults: aws.Int32(1)})
		if err != nil {
			if ctx.Err() != nil {
				return 0, goesOn("interrupted", dlqARN)
			}
			return 0, fmt.Errorf("follow the message move task: %w\n%w", err, goesOn("", dlqARN))
		}
		if len(out.Results) == 0 {
			return 0, errors.New("the message move task disappeared: check `aws sqs list-message-move-tasks`")
		}
		t := out.Results[0]
		if total := int(aws.ToInt64(t.ApproximateNumberOfMessagesToMove)); total > 0 {
			if _, ok := b.(noProgress); ok {
				b = s.progress(total, "moving")
			}
		}
		switch aws.ToString(t.Status) {
		case "COMPLETED":
			_ = b.Finish()
			return int(t.ApproximateNumberOfMessagesMoved), nil
		case "FAILED", "CANCELLED":
			_ = b.Finish()
			status := aws.ToString(t.Status)
			if reason := aws.ToString(t.FailureReason); reason != "" {
				status += ": " + reason
			}
			return int(t.ApproximateNumberOfMessagesMoved), fmt.Errorf("the message move task ended %s, after moving about %d message(s); "+
				"the others are still in the dead-letter queue, nothing was lost: run `inboxctl dlq redrive` again, or with --manual",
				status, t.ApproximateNumberOfMessagesMoved)
		}
		if pb, ok := b.(interface{ Set(int) error }); ok {
			_ = pb.Set(int(t.ApproximateNumberOfMessagesMoved))
		}
		if pause.For(ctx, s.poll()) != nil {
			return 0, goesOn("interrupted", dlqARN)
		}
	}
}

// goesOn says that a move task no longer followed goes on without us: SQS
// moves each message atomically, so nothing is lost.
func goesOn(what, dlqARN string) error {
	msg := "the move task goes on in SQS by itself, and nothing is lost (see `aws sqs list-message-move-tasks --source-arn " + dlqARN + "`)"
	if what != "" {
		msg = what + ": " + msg
	}
	return errors.New(msg)
}

// redriveVisibility hides a batch while it is being moved; a message whose
// move was interrupted reappears in the DLQ after it.
const redriveVisibility = 60

// moveEach moves up to limit messages (0: all) from the DLQ to the webhook
// queue, a batch at a time: send the batch, then delete from the DLQ
// exactly the messages whose send succeeded. A message is therefore always
// in at least one queue; an interruption between the send and the delete
// leaves it in both, and the processor acknowledges the second copy as a
// duplicate.
func (s *Stack) moveEach(ctx context.Context, limit int) (moved int, err error) {
	total, err := s.approxMessages(ctx, s.DLQ)
	if err != nil {
		return 0, s.explain("", err)
	}
	if limit > 0 {
		total = min(total, limit)
	}
	b := s.progress(total, "moving")
	defer func() { _ = b.Finish() }()
	for limit == 0 || moved < limit {
		if ctx.Err() != nil {
			return moved, fmt.Errorf("interrupted: %w", ctx.Err())
		}
		want := 10
		if limit > 0 {
			want = min(want, limit-moved)
		}
		out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(s.DLQ),
			MaxNumberOfMessages:         int32(want),
			VisibilityTimeout:           redriveVisibility,
			WaitTimeSeconds:             waitSeconds(moved, total),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return moved, fmt.Errorf("receive from the dead-letter queue: %w", err)
		}
		if len(out.Messages) == 0 {
			return moved, nil
		}
		n, err := s.moveBatch(ctx, out.Messages)
		moved += n
		_ = b.Add(n)
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// moveBatch sends msgs to the webhook queue, then deletes from the DLQ
// those sent. It returns how many are now only in the webhook queue.
func (s *Stack) moveBatch(ctx context.Context, msgs []sqstypes.Message) (int, error) {
	byID := map[string]sqstypes.Message{}
	var entries []sqstypes.SendMessageBatchRequestEntry
	for i, m := range msgs {
		id := strconv.Itoa(i)
		byID[id] = m
		entries = append(entries, sqstypes.SendMessageBatchRequestEntry{
			Id: aws.String(id), MessageBody: m.Body, MessageAttributes: m.MessageAttributes,
		})
	}
	sent, err := s.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.Queue), Entries: entries})
	if err != nil {
		// Nothing is known to be sent: delete nothing. The batch
		// reappears in the DLQ; make it visible now rather than later.
		s.release(context.WithoutCancel(ctx), s.DLQ, msgs)
		return 0, fmt.Errorf("send to the webhook queue: %w", err)
	}
	var unsent []sqstypes.Message
	var failure error
	for _, f := range sent.Failed {
		unsent = append(unsent, byID[aws.ToString(f.Id)])
		failure = fmt.Errorf("send to the webhook queue: %s: %s", aws.ToString(f.Code), aws.ToString(f.Message))
	}
	s.release(context.WithoutCancel(ctx), s.DLQ, unsent)
	var dels []sqstypes.DeleteMessageBatchRequestEntry
	for _, m := range sent.Successful {
		dels = append(dels, sqstypes.DeleteMessageBatchRequestEntry{Id: m.Id, ReceiptHandle: byID[aws.ToString(m.Id)].ReceiptHandle})
	}
	if len(dels) == 0 {
		return 0, failure
	}
	// The copies are in the webhook queue now: finish the delete even if
	// the operator pressed Ctrl-C meanwhile, so fewer duplicates remain.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	del, err := s.SQS.DeleteMessageBatch(dctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.DLQ), Entries: dels})
	if err != nil {
		// Sent but not deleted: duplicates, never losses.
		return 0, fmt.Errorf("delete from the dead-letter queue after sending (the messages are now in both queues; the duplicates are harmless): %w", err)
	}
	moved := len(del.Successful)
	if len(del.Failed) > 0 && failure == nil {
		failure = fmt.Errorf("delete from the dead-letter queue after sending: %s (those messages are in both queues; harmless)",
			aws.ToString(del.Failed[0].Message))
	}
	if failure == nil {
		failure = ctx.Err()
	}
	return moved, failure
}

// clip shortens v to n runes, on one line.
func clip(v string, n int) string {
	v = strings.ReplaceAll(v, "\n", " ")
	r := []rune(v)
	if len(r) <= n {
		return v
	}
	return string(r[:n-1]) + "…"
}

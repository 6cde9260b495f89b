package ops

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
)

// The dead-letter queue's operations on named events or messages (a
// discard, a redrive of named events, the console's redrive of one
// message). SQS cannot address a message by its content, so each first
// finds its messages: it receives the queue's messages, keeping each
// hidden while it looks, and makes every message it does not act on
// visible again when it is done (even on Ctrl-C; if the process is
// killed, after findVisibility by themselves).

// findVisibility hides the messages received while looking for an
// event's: long enough to search, record and act on them.
const findVisibility = 300

// findBudget bounds the search, well inside findVisibility, so that every
// message found is still hidden when it is acted on.
const findBudget = 4 * time.Minute

// found is what findMessages received from the dead-letter queue.
type found struct {
	// byKey holds the messages of each key asked for (more than one when
	// a redrive left a copy that failed again).
	byKey map[string][]sqstypes.Message
	// others are every other message received: releaseFound makes them
	// visible again.
	others []sqstypes.Message
}

// eventIDOf is the id of the event a dead-lettered message points to (""
// for a message that is no pointer).
func eventIDOf(m sqstypes.Message) string {
	if p, err := queue.Decode(aws.ToString(m.Body)); err == nil {
		return p.ID
	}
	return ""
}

// eventKeyOf is the provider and id of the event a dead-lettered message
// points to, as eventKey writes them ("" for a message that is no
// pointer).
func eventKeyOf(m sqstypes.Message) string {
	if p, err := queue.Decode(aws.ToString(m.Body)); err == nil {
		return eventKey(p.Provider, p.ID)
	}
	return ""
}

func eventKey(provider, id string) string { return provider + "\x00" + id }

// messageIDOf is a message's own id.
func messageIDOf(m sqstypes.Message) string { return aws.ToString(m.MessageId) }

// findMessages receives the dead-letter queue's messages until it is empty
// (or findBudget is spent) and sorts those whose keyOf is one of keys from
// the rest. The whole queue is searched, so every copy of an event's
// pointer is found. The caller must release f.others, and any found
// message it does not delete, even when findMessages fails
// (releaseFound).
func (s *Stack) findMessages(ctx context.Context, keys []string, keyOf func(sqstypes.Message) string) (*found, error) {
	f := &found{byKey: map[string][]sqstypes.Message{}}
	seen := map[string]bool{}
	deadline := s.now().Add(findBudget)
	for {
		if s.now().After(deadline) {
			return f, fmt.Errorf("searched %d message(s) of the dead-letter queue in %s and stopped, so that none of them reappears while in use: "+
				"run the command again (what was not found is still in the queue)", len(seen), findBudget)
		}
		out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(s.DLQ),
			MaxNumberOfMessages: 10,
			VisibilityTimeout:   findVisibility,
			// Long polling asks every SQS server: an empty answer means no
			// visible message is left, where a short poll samples a few.
			WaitTimeSeconds:             1,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return f, s.explain("", fmt.Errorf("receive from the dead-letter queue: %w", err))
		}
		if len(out.Messages) == 0 {
			return f, nil
		}
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] {
				// Received again: its earlier receipt no longer holds it.
				f.others = append(f.others, m)
				continue
			}
			seen[id] = true
			if k := keyOf(m); k != "" && slices.Contains(keys, k) {
				f.byKey[k] = append(f.byKey[k], m)
				continue
			}
			f.others = append(f.others, m)
		}
	}
}

// releaseFound makes visible again every message findMessages received
// and nothing deleted.
func (s *Stack) releaseFound(ctx context.Context, f *found) {
	if f == nil {
		return
	}
	msgs := f.others
	for _, ms := range f.byKey {
		msgs = append(msgs, ms...)
	}
	s.release(context.WithoutCancel(ctx), s.DLQ, msgs)
}

// redriveKeyed moves the messages whose keyOf is one of keys from the
// dead-letter queue to the webhook queue, as moveEach does (send, then
// delete what was sent), leaves every other message where it was, and
// returns the keys no message had.
func (s *Stack) redriveKeyed(ctx context.Context, keys []string, keyOf func(sqstypes.Message) string) (moved int, missing []string, err error) {
	f, err := s.findMessages(ctx, keys, keyOf)
	defer func() { s.releaseFound(ctx, f) }()
	if err != nil {
		return 0, nil, err
	}
	var msgs []sqstypes.Message
	for _, k := range keys {
		if len(f.byKey[k]) == 0 {
			missing = append(missing, k)
		}
		msgs = append(msgs, f.byKey[k]...)
	}
	// From here moveBatch owns them: it makes visible again what it did
	// not send, and deletes what it sent.
	f.byKey = nil
	for start := 0; start < len(msgs); start += 10 {
		n, err := s.moveBatch(ctx, msgs[start:min(start+10, len(msgs))])
		moved += n
		if err != nil {
			f.others = append(f.others, msgs[min(start+10, len(msgs)):]...)
			return moved, missing, fmt.Errorf("%w\n%d message(s) moved before it stopped; nothing was lost "+
				"(at worst a message is in both queues, which the processor absorbs): run the redrive again", err, moved)
		}
	}
	return moved, missing, nil
}

// deleteMessages deletes msgs from the dead-letter queue, ten at a time,
// and returns how many were deleted. It finishes even after Ctrl-C: the
// decision to delete is recorded by the time it is called.
func (s *Stack) deleteMessages(ctx context.Context, msgs []sqstypes.Message) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n := 0
	for start := 0; start < len(msgs); start += 10 {
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range msgs[start:min(start+10, len(msgs))] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		out, err := s.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.DLQ), Entries: entries})
		if err != nil {
			return n, fmt.Errorf("delete from the dead-letter queue: %w", err)
		}
		n += len(out.Successful)
		if len(out.Failed) > 0 {
			return n, fmt.Errorf("delete from the dead-letter queue: %s", aws.ToString(out.Failed[0].Message))
		}
	}
	return n, nil
}

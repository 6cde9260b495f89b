// Package ops is what an operator does to a stack beyond reading it:
// replay events, peek at the dead-letter queue, redrive its messages to
// the webhook queue and discard them, and erase a customer's personal
// data. inboxctl's commands (internal/cli) and the web console
// (internal/console, whose Actions a *Stack implements) run this code, so
// they never disagree about what an action does; they only format its
// results. Nothing here knows cobra, a terminal or a page.
//
// Every operation keeps the pipeline's guarantees:
//
//   - nothing is lost: a message moved between the queues is sent to its
//     destination before it is deleted from its source, so an interruption
//     leaves it in both (the processor acknowledges the second copy as a
//     duplicate), never in neither; a message received to be looked at is
//     made visible again whatever happens, even after Ctrl-C;
//   - nothing is silent: a discard is recorded on the event's record
//     before its messages are deleted; an erasure leaves each record, so a
//     duplicate delivery is still recognised;
//   - decisions are made on the record as it stands (a strongly consistent
//     read) and applied with the store's conditional writes, so a worker
//     that changed it meanwhile wins and the result says so.
//
// Results are values (ReplayResult, DLQ, RedriveResult, DiscardResult,
// Erasure) whose Action fields use the vocabulary below; errors are
// returned only when an operation could not run at all.
package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// SQS is the part of *sqs.Client the operations use.
type SQS interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput,
		optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// Stack is one stack's tables and queues, and how the operations report
// on the way. The operations use only what they need: Events, SQS and
// Queue for a replay; SQS, Queue and DLQ for the dead-letter queue (Events
// too, to read and record events); Events, Mirror and Eraser for an
// erasure.
type Stack struct {
	Events *store.Events
	Mirror *mirror.Reader
	// Eraser writes an erasure's changes to the mirror's table.
	Eraser *mirror.Eraser
	SQS    SQS
	// Queue is the webhook queue's URL, DLQ its dead-letter queue's.
	Queue, DLQ string

	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Explain adds what to do next to an error reaching the stack (the
	// local stack is not running, a --stage is wrong); nil leaves errors
	// as they are. A table's error that means it does not exist already
	// names it (TableError).
	Explain func(err error) error
	// Progress shows the progress of a long operation of total steps; nil
	// shows none.
	Progress func(total int, what string) Progress
	// Note receives what an operator should know while an operation goes
	// on (an endpoint without SQS message move tasks); nil drops it.
	Note func(msg string)
	// PollEvery is how often a message move task's progress is read; a
	// second when zero.
	PollEvery time.Duration
}

// Progress is a progress display. A display that can also jump to a
// count (a bar following an SQS move task) has Set(n int) error.
type Progress interface {
	Add(n int) error
	Finish() error
}

type noProgress struct{}

func (noProgress) Add(int) error { return nil }
func (noProgress) Finish() error { return nil }

func (s *Stack) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Stack) progress(total int, what string) Progress {
	if s.Progress == nil || total <= 0 {
		return noProgress{}
	}
	return s.Progress(total, what)
}

func (s *Stack) note(format string, args ...any) {
	if s.Note != nil {
		s.Note(fmt.Sprintf(format, args...))
	}
}

func (s *Stack) poll() time.Duration {
	if s.PollEvery > 0 {
		return s.PollEvery
	}
	return time.Second
}

// explain is Explain for a queue's error (table "") or a table's; a
// table's error that means the table does not exist names it first.
func (s *Stack) explain(table string, err error) error {
	if err == nil {
		return nil
	}
	if table != "" {
		err = TableError(table, err)
	}
	if s.Explain == nil {
		return err
	}
	return s.Explain(err)
}

// TableError names table in an error that means it does not exist
// (DynamoDB's ResourceNotFoundException), and returns other errors as
// they are.
func TableError(table string, err error) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("table %s not found: %w", table, err)
	}
	return err
}

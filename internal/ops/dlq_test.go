package ops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// moveSQS is an SQS endpoint with message move tasks (moto has none):
// the path a real SQS takes. Calls it does not expect panic on the nil
// embedded interface.
type moveSQS struct {
	SQS
	startErr error
	tasks    []sqstypes.ListMessageMoveTasksResultEntry
	lists    int
	received int
}

func (f *moveSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	url := aws.ToString(in.QueueUrl)
	attrs := map[string]string{}
	for _, n := range in.AttributeNames {
		switch n {
		case sqstypes.QueueAttributeNameQueueArn:
			attrs[string(n)] = "arn:aws:sqs:us-east-1:123456789012:" + url[strings.LastIndex(url, "/")+1:]
		case sqstypes.QueueAttributeNameApproximateNumberOfMessages:
			attrs[string(n)] = "0"
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: attrs}, nil
}

func (f *moveSQS) StartMessageMoveTask(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	if f.startErr != nil {
		return nil, f.startErr
	}
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String("handle")}, nil
}

func (f *moveSQS) ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	t := f.tasks[min(f.lists, len(f.tasks)-1)]
	f.lists++
	return &sqs.ListMessageMoveTasksOutput{Results: []sqstypes.ListMessageMoveTasksResultEntry{t}}, nil
}

func (f *moveSQS) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.received++
	return &sqs.ReceiveMessageOutput{}, nil
}

func task(status string, moved, total int64) sqstypes.ListMessageMoveTasksResultEntry {
	return sqstypes.ListMessageMoveTasksResultEntry{Status: aws.String(status), ApproximateNumberOfMessagesMoved: moved,
		ApproximateNumberOfMessagesToMove: aws.Int64(total), FailureReason: aws.String("CouldNotDetermineMessageSource")}
}

// counter is a Progress that remembers what it was told.
type counter struct{ set, finished int }

func (c *counter) Add(int) error   { return nil }
func (c *counter) Set(n int) error { c.set = n; return nil }
func (c *counter) Finish() error   { c.finished++; return nil }

func fakeStack(f *moveSQS, bar *counter, notes *[]string) *Stack {
	return &Stack{
		SQS: f, Queue: "http://sqs.local/123456789012/main", DLQ: "http://sqs.local/123456789012/dlq", PollEvery: time.Millisecond,
		Progress: func(int, string) Progress { return bar },
		Note:     func(m string) { *notes = append(*notes, m) },
	}
}

// TestRedriveAllFollowsAMoveTask: where SQS runs message move tasks, a
// redrive of everything is one, followed to its end; its count is SQS's.
func TestRedriveAllFollowsAMoveTask(t *testing.T) {
	f := &moveSQS{tasks: []sqstypes.ListMessageMoveTasksResultEntry{task("RUNNING", 1, 3), task("RUNNING", 2, 3), task("COMPLETED", 3, 3)}}
	bar, notes := &counter{}, []string{}
	res, err := fakeStack(f, bar, &notes).RedriveAll(context.Background(), 0, false)
	if err != nil || res.Method != MethodMoveTask || res.Moved != 3 || f.received != 0 {
		t.Fatalf("got %+v (%v), %d receives; want 3 moved by the move task and no message received", res, err, f.received)
	}
	if bar.set != 2 || bar.finished != 1 || len(notes) != 0 {
		t.Errorf("progress set to %d, finished %d times, notes %q; want 2, once, none", bar.set, bar.finished, notes)
	}
}

// TestRedriveAllFallsBackWhereNoMoveTaskStarts: an endpoint without move
// tasks, or one that refuses to start one, gets the messages moved one
// batch at a time, and the operator is told which and why.
func TestRedriveAllFallsBackWhereNoMoveTaskStarts(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		note string
	}{
		{"unsupported", &smithy.GenericAPIError{Code: "UnsupportedOperation"}, "this endpoint does not support SQS message move tasks"},
		{"refused", &smithy.GenericAPIError{Code: "AccessDenied"}, "could not start an SQS message move task (api error AccessDenied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &moveSQS{startErr: tc.err}
			notes := []string{}
			res, err := fakeStack(f, &counter{}, &notes).RedriveAll(context.Background(), 0, false)
			if err != nil || res.Method != MethodReceiveSendDelete || f.received == 0 {
				t.Fatalf("got %+v (%v), %d receives; want receive_send_delete", res, err, f.received)
			}
			if len(notes) != 1 || !strings.HasPrefix(notes[0], tc.note) {
				t.Errorf("notes %q, want one starting %q", notes, tc.note)
			}
		})
	}
}

// TestRedriveAllReportsAFailedMoveTask: a task that ends FAILED says so,
// with its count and what to do; nothing was lost.
func TestRedriveAllReportsAFailedMoveTask(t *testing.T) {
	f := &moveSQS{tasks: []sqstypes.ListMessageMoveTasksResultEntry{task("FAILED", 1, 3)}}
	_, err := fakeStack(f, &counter{}, new([]string)).RedriveAll(context.Background(), 0, false)
	if err == nil || !strings.Contains(err.Error(), "ended FAILED: CouldNotDetermineMessageSource, after moving about 1 message(s)") {
		t.Errorf("got %v, want the failure with its reason and count", err)
	}
}

// TestTableErrorNamesAMissingTable: DynamoDB's ResourceNotFoundException
// names the table; other errors pass unchanged.
func TestTableErrorNamesAMissingTable(t *testing.T) {
	var nf error = &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}
	got := TableError("t-EventsTable", fmt.Errorf("get: %w", nf))
	if !strings.HasPrefix(got.Error(), "table t-EventsTable not found: ") || !errors.As(got, new(*types.ResourceNotFoundException)) {
		t.Errorf("got %v, want the table named and the error kept", got)
	}
	other := errors.New("throttled")
	if got := TableError("t", other); got != other {
		t.Errorf("got %v, want %v unchanged", got, other)
	}
}

func TestUnsupported(t *testing.T) {
	status := func(code int, err error) error {
		return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: err,
		}}
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&smithy.GenericAPIError{Code: "UnsupportedOperation"}, true},
		{&smithy.GenericAPIError{Code: "AWS.SimpleQueueService.UnsupportedOperation"}, true},
		{status(500, errors.New("<!doctype html> 500 Internal Server Error")), true}, // moto
		{status(501, errors.New("not implemented")), true},
		{status(500, &smithy.GenericAPIError{Code: "InternalError"}), false},
		{status(403, &smithy.GenericAPIError{Code: "AccessDenied"}), false},
		{fmt.Errorf("wrapped: %w", &smithy.GenericAPIError{Code: "InvalidAction"}), true},
		{context.Canceled, false},
	} {
		if got := Unsupported(tc.err); got != tc.want {
			t.Errorf("Unsupported(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

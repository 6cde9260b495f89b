package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// fakeMoveSQS is an SQS endpoint that supports message move tasks (moto
// does not), for the path a real SQS takes. Calls it does not expect panic
// on the nil embedded interface.
type fakeMoveSQS struct {
	SQS
	startErr error
	started  *sqs.StartMessageMoveTaskInput
	tasks    []sqstypes.ListMessageMoveTasksResultEntry
	lists    int
}

func (f *fakeMoveSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
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

func (f *fakeMoveSQS) StartMessageMoveTask(
	_ context.Context,
	in *sqs.StartMessageMoveTaskInput,
	_ ...func(*sqs.Options),
) (*sqs.StartMessageMoveTaskOutput, error) {
	f.started = in
	if f.startErr != nil {
		return nil, f.startErr
	}
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String("handle")}, nil
}

func (f *fakeMoveSQS) ListMessageMoveTasks(context.Context, *sqs.ListMessageMoveTasksInput, ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	t := f.tasks[min(f.lists, len(f.tasks)-1)]
	f.lists++
	return &sqs.ListMessageMoveTasksOutput{Results: []sqstypes.ListMessageMoveTasksResultEntry{t}}, nil
}

func (f *fakeMoveSQS) ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return &sqs.ReceiveMessageOutput{}, nil
}

func task(status string, moved, total int64) sqstypes.ListMessageMoveTasksResultEntry {
	return sqstypes.ListMessageMoveTasksResultEntry{
		Status:                            aws.String(status),
		ApproximateNumberOfMessagesMoved:  moved,
		ApproximateNumberOfMessagesToMove: aws.Int64(total),
		FailureReason:                     aws.String("CouldNotDetermineMessageSource"),
	}
}

func runFake(t *testing.T, fake *fakeMoveSQS, args ...string) result {
	t.Helper()
	var out, errb strings.Builder
	a := &app{
		stdout: &out, stderr: &errb, now: time.Now, pollEvery: time.Millisecond,
		getenv:  func(string) string { return "" },
		wrapSQS: func(SQS) SQS { return fake },
	}
	full := append(
		[]string{"--endpoint", "http://127.0.0.1:1", "--queue-url", "http://sqs.local/123456789012/main", "--dlq-url", "http://sqs.local/123456789012/dlq"},
		args...)
	code := a.run(context.Background(), full)
	return result{args: args, stdout: out.String(), stderr: errb.String(), code: code}
}

func TestRedriveFollowsAMoveTask(t *testing.T) {
	fake := &fakeMoveSQS{tasks: []sqstypes.ListMessageMoveTasksResultEntry{task("RUNNING", 3, 10), task("RUNNING", 7, 10), task("COMPLETED", 10, 10)}}
	r := runFake(t, fake, "dlq", "redrive", "--json").must(t, 0)
	var got RedriveJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Method != "move_task" || got.Moved != 10 {
		t.Errorf("got %+v, want 10 moved by move_task", got)
	}
	if aws.ToString(fake.started.SourceArn) != "arn:aws:sqs:us-east-1:123456789012:dlq" ||
		aws.ToString(fake.started.DestinationArn) != "arn:aws:sqs:us-east-1:123456789012:main" {
		t.Errorf("task from %s to %s, want dlq to main", aws.ToString(fake.started.SourceArn), aws.ToString(fake.started.DestinationArn))
	}
	if fake.lists != 3 {
		t.Errorf("progress read %d times, want until COMPLETED (3)", fake.lists)
	}
}

func TestRedriveReportsAFailedMoveTask(t *testing.T) {
	fake := &fakeMoveSQS{tasks: []sqstypes.ListMessageMoveTasksResultEntry{task("RUNNING", 1, 10), task("FAILED", 4, 10)}}
	r := runFake(t, fake, "dlq", "redrive").must(t, 1)
	if !strings.Contains(r.stderr, "FAILED: CouldNotDetermineMessageSource") || !strings.Contains(r.stderr, "nothing was lost") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

func TestRedriveFallsBackWhenAMoveTaskCannotStart(t *testing.T) {
	for _, tc := range []struct {
		err  error
		note string
	}{
		{&smithy.GenericAPIError{Code: "UnsupportedOperation"}, "does not support SQS message move tasks"},
		{&smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to perform sqs:StartMessageMoveTask"}, "could not start an SQS message move task"},
	} {
		fake := &fakeMoveSQS{startErr: tc.err}
		r := runFake(t, fake, "dlq", "redrive").must(t, 0)
		if !strings.Contains(r.stderr, tc.note) || !strings.Contains(r.stdout, "(receive, send, delete)") {
			t.Errorf("%v: stdout %q stderr %q; want %q and the manual path", tc.err, r.stdout, r.stderr, tc.note)
		}
	}
	// --max never starts a task: a task cannot stop after N messages.
	fake := &fakeMoveSQS{}
	runFake(t, fake, "dlq", "redrive", "--max", "3").must(t, 0)
	if fake.started != nil {
		t.Error("redrive --max started a move task")
	}
}

package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// Output keys of the deployed stack (template.yaml Outputs).
const (
	outEventsTable = "EventsTableName"
	outMirrorTable = "MirrorTableName"
	outQueueURL    = "QueueUrl"
	outDLQURL      = "DeadLetterQueueUrl"
	outWebhookURL  = "WebhookUrl"
)

// stageOutputs reads the outputs of the stage's stack once.
func (a *app) stageOutputs(ctx context.Context) (map[string]string, error) {
	if a.outputs != nil {
		return a.outputs, nil
	}
	cfg, err := a.aws(ctx)
	if err != nil {
		return nil, err
	}
	// The first call to a deployed stack: without credentials it would
	// fail with the SDK's provider chain alone.
	if err := credentialsOK(ctx, cfg, a.profile); err != nil {
		return nil, err
	}
	name := a.stackName()
	client := cloudformation.NewFromConfig(cfg)
	in := &cloudformation.DescribeStacksInput{StackName: aws.String(name)}
	out, err := client.DescribeStacks(ctx, in)
	if err != nil {
		if noStack(err) {
			return nil, fmt.Errorf("%s: no stack %s in %s: check the stack's name (--stage S reads the stack webhook-inbox-S; --stack names any other), "+
				"--region and --profile, or deploy it with `sam deploy --config-env <env>`", a.target(), name, cfg.Region)
		}
		return nil, fmt.Errorf("%s: describe stack %s: %w", a.target(), name, err)
	}
	if len(out.Stacks) == 0 {
		return nil, fmt.Errorf("%s: no stack %s in %s", a.target(), name, cfg.Region)
	}
	if out, err = a.settle(ctx, client, in, out); err != nil {
		return nil, fmt.Errorf("%s: %w", a.target(), err)
	}
	outputs := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	a.params = map[string]string{}
	for _, p := range out.Stacks[0].Parameters {
		a.params[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	a.outputs = outputs
	return outputs, nil
}

// poll is the first wait between two reads of a stack's status (and how
// often dlq redrive reads a move task's progress: ops.Stack.PollEvery).
func (a *app) poll() time.Duration {
	if a.pollEvery > 0 {
		return a.pollEvery
	}
	return time.Second
}

// stageWait bounds the wait for a stack being created or updated: a
// deployment of the template takes minutes.
const stageWait = 30 * time.Minute

// settle waits, with the SDK's CloudFormation waiters, for a stack that is
// being created, updated or imported (CloudFormation does that
// asynchronously: outputs appear when it ends) and returns its description
// then; a stack at rest is returned as it is. A creation or update that
// fails ends the wait with the stack's status and reason.
func (a *app) settle(ctx context.Context, client *cloudformation.Client, in *cloudformation.DescribeStacksInput,
	out *cloudformation.DescribeStacksOutput) (*cloudformation.DescribeStacksOutput, error) {
	status := string(out.Stacks[0].StackStatus)
	name := aws.ToString(in.StackName)
	if !strings.HasSuffix(status, "_IN_PROGRESS") || status == string(cftypes.StackStatusReviewInProgress) {
		return out, nil
	}
	if strings.HasPrefix(status, "DELETE_") {
		return nil, fmt.Errorf("stack %s is being deleted (%s)", name, status)
	}
	fmt.Fprintf(a.stderr, "inboxctl: stack %s is %s; waiting for it to finish (up to %s)\n", name, status, stageWait)
	// AWS's own defaults poll every 30 s at first; a local emulator's stack
	// is ready in a second, and a person is waiting.
	minDelay := a.poll()
	maxDelay := max(minDelay, 15*time.Second)
	var err error
	switch {
	case strings.HasPrefix(status, "UPDATE_"):
		out, err = cloudformation.NewStackUpdateCompleteWaiter(client, func(o *cloudformation.StackUpdateCompleteWaiterOptions) {
			o.MinDelay, o.MaxDelay = minDelay, maxDelay
		}).WaitForOutput(ctx, in, stageWait)
	case strings.HasPrefix(status, "IMPORT_"):
		out, err = cloudformation.NewStackImportCompleteWaiter(client, func(o *cloudformation.StackImportCompleteWaiterOptions) {
			o.MinDelay, o.MaxDelay = minDelay, maxDelay
		}).WaitForOutput(ctx, in, stageWait)
	default: // CREATE_IN_PROGRESS, ROLLBACK_IN_PROGRESS
		out, err = cloudformation.NewStackCreateCompleteWaiter(client, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
			o.MinDelay, o.MaxDelay = minDelay, maxDelay
		}).WaitForOutput(ctx, in, stageWait)
	}
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("stopped waiting for stack %s: %w", name, ctx.Err())
	}
	// The waiter says only that it failed: the stack says how.
	now, derr := client.DescribeStacks(ctx, in)
	if derr != nil || len(now.Stacks) == 0 {
		return nil, fmt.Errorf("wait for stack %s: %w", name, err)
	}
	st := now.Stacks[0]
	if st.StackStatus == cftypes.StackStatusUpdateRollbackComplete {
		// The previous deployment is back in place, outputs and all.
		fmt.Fprintf(a.stderr, "inboxctl: the update of stack %s was rolled back (%s); using the stack as it is now\n",
			name, cmp.Or(aws.ToString(st.StackStatusReason), "no reason given"))
		return now, nil
	}
	return nil, fmt.Errorf("stack %s ended %s (%s): deploy it again, or check its events in CloudFormation",
		name, st.StackStatus, cmp.Or(aws.ToString(st.StackStatusReason), "no reason given"))
}

// stageParameters reads the parameters the stage's stack was deployed with.
func (a *app) stageParameters(ctx context.Context) (map[string]string, error) {
	if _, err := a.stageOutputs(ctx); err != nil {
		return nil, err
	}
	return a.params, nil
}

// resolve returns a resource name: the flag, else the stage's output, else
// the environment variable, else the local stack's name.
func (a *app) resolve(ctx context.Context, flag, output, envKey, local string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if a.deployed() {
		outputs, err := a.stageOutputs(ctx)
		if err != nil {
			return "", err
		}
		if v := outputs[output]; v != "" {
			return v, nil
		}
		return "", fmt.Errorf(
			"%s: stack %s has no output %s: deploy the current template.yaml, or pass the name with a flag",
			a.target(),
			a.stackName(),
			output,
		)
	}
	if envKey != "" {
		if v := strings.TrimSpace(a.getenv(envKey)); v != "" {
			return v, nil
		}
	}
	return local, nil
}

// Parts of a stack a command opens (open).
type parts int

const (
	withEvents parts = 1 << iota // the events table
	withMirror                   // the mirror table, to read and to erase
	withQueue                    // the webhook queue
	withDLQ                      // the webhook queue and its dead-letter queue
)

// open is how every command reaches the stack: it resolves the names of
// the tables and queues want asks for (resolve: a flag, the stage's
// outputs, the environment, the local stack's names) and builds their
// clients on the one AWS configuration (aws), so a wrong flag or a
// stopped stack fails here, with the same hints, whatever the command.
// The operations (package ops) report through a: hints on errors,
// progress bars and notes on stderr.
func (a *app) open(ctx context.Context, want parts) (*ops.Stack, error) {
	s := &ops.Stack{
		Now:       a.now,
		Explain:   a.hint,
		Progress:  func(total int, what string) ops.Progress { return a.progress(total, what) },
		Note:      func(msg string) { fmt.Fprintln(a.stderr, "inboxctl: "+msg) },
		PollEvery: a.pollEvery,
	}
	var db *dynamodb.Client
	if want&(withEvents|withMirror) != 0 {
		cfg, err := a.aws(ctx)
		if err != nil {
			return nil, err
		}
		db = dynamodb.NewFromConfig(cfg)
	}
	if want&withEvents != 0 {
		table, err := a.resolve(ctx, a.eventsTable, outEventsTable, "EVENTS_TABLE", a.prefix+"-EventsTable")
		if err != nil {
			return nil, err
		}
		s.Events = &store.Events{DB: db, Table: table}
	}
	if want&withMirror != 0 {
		table, err := a.resolve(ctx, a.mirrorTable, outMirrorTable, "MIRROR_TABLE", a.prefix+"-MirrorTable")
		if err != nil {
			return nil, err
		}
		s.Mirror = &mirror.Reader{DB: db, Table: table}
		s.Eraser = &mirror.Eraser{DB: db, Table: table, Now: a.now}
	}
	if want&(withQueue|withDLQ) != 0 {
		cfg, err := a.aws(ctx)
		if err != nil {
			return nil, err
		}
		var client ops.SQS = sqs.NewFromConfig(cfg)
		if a.wrapSQS != nil {
			client = a.wrapSQS(client)
		}
		s.SQS = client
		if s.Queue, err = a.queue(ctx, client); err != nil {
			return nil, err
		}
		if want&withDLQ != 0 {
			if s.DLQ, err = a.deadLetterQueue(ctx, client, s.Queue); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// queue resolves the webhook queue's URL.
func (a *app) queue(ctx context.Context, client SQS) (string, error) {
	url, err := a.resolve(ctx, a.queueURL, outQueueURL, "QUEUE_URL", "")
	if err != nil || url != "" {
		return url, err
	}
	name := a.prefix + "-WebhookQueue"
	out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", a.hint(fmt.Errorf("find the webhook queue %s: %w", name, err))
	}
	return aws.ToString(out.QueueUrl), nil
}

// deadLetterQueue resolves the dead-letter queue of the webhook queue main:
// --dlq-url, the stage's output, else main's redrive policy, which names
// it whatever the naming.
func (a *app) deadLetterQueue(ctx context.Context, client SQS, main string) (string, error) {
	dlq, err := a.resolve(ctx, a.dlqURL, outDLQURL, "", "")
	if err != nil || dlq != "" {
		return dlq, err
	}
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(main),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return "", a.hint(fmt.Errorf("read the redrive policy of %s: %w", main, err))
	}
	var policy struct {
		Target string `json:"deadLetterTargetArn"`
	}
	raw := out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	if json.Unmarshal([]byte(raw), &policy) != nil || policy.Target == "" {
		return "", fmt.Errorf("queue %s has no redrive policy naming a dead-letter queue: pass --dlq-url", main)
	}
	name := policy.Target[strings.LastIndex(policy.Target, ":")+1:]
	q, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", a.hint(fmt.Errorf("find the dead-letter queue %s: %w", name, err))
	}
	return aws.ToString(q.QueueUrl), nil
}

// Package poller is a local stand-in for Lambda's SQS event source mapping.
// It long-polls the queue, hands the function batches of up to the template's
// BatchSize (gathered within MaximumBatchingWindowInSeconds), and settles
// each batch as Lambda does: with ReportBatchItemFailures it deletes every
// message but the reported failures (a malformed report fails the whole
// batch); without it, it deletes the batch only when the handler succeeds.
// Messages left undeleted reappear after their visibility timeout, and the
// queue's redrive policy moves them to the DLQ after maxReceiveCount.
package poller

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/sdkhttp"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// Handler is a Lambda handler for SQS events.
type Handler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// SQS is the part of *sqs.Client the poller uses.
type SQS interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

// longPollClient times an attempt out well after the longest long poll
// (20 s) answers.
var longPollClient = sdkhttp.ReadOnlyBodies(awshttp.NewBuildableClient().WithTimeout(20*time.Second + 30*time.Second))

// LongPoll is the option every long-polling ReceiveMessage needs: a client
// whose attempt timeout outlasts the wait. The functions' client
// (sdkhttp.Client) gives up on an attempt after a few seconds; a long poll
// cut short that way while SQS is answering with messages leaves them
// received but never handed to anyone, invisible for the queue's whole
// visibility timeout, so an event waits minutes for no reason.
func LongPoll(o *sqs.Options) { o.HTTPClient = longPollClient }

// Poller feeds one function from one queue.
type Poller struct {
	SQS      SQS
	QueueURL string
	QueueARN string
	Source   template.SQSSource
	Handler  Handler
	Function string
	// Timeout is the function's timeout: each invocation's deadline.
	Timeout time.Duration
	// Workers is how many batches run at once (the mapping's concurrency).
	Workers int
	Logger  *slog.Logger
}

// Run polls until ctx is done, then waits for in-flight batches.
func (p *Poller) Run(ctx context.Context) {
	workers := max(p.Workers, 1)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.loop(ctx)
		}()
	}
	wg.Wait()
}

func (p *Poller) loop(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		batch, err := p.gather(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.Logger.Warn("poller: receive failed", slog.String("function", p.Function), slog.String("error", err.Error()))
			_ = pause.For(ctx, backoff)
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if len(batch) == 0 {
			continue
		}
		// A batch in flight is finished even when the stack is stopping, as
		// Lambda lets a running invocation complete.
		p.invoke(context.WithoutCancel(ctx), batch)
	}
}

// gather receives up to BatchSize messages, waiting at most the batching
// window once the first message is in.
func (p *Poller) gather(ctx context.Context) ([]sqstypes.Message, error) {
	var batch []sqstypes.Message
	var deadline time.Time
	for len(batch) < p.Source.BatchSize {
		wait := int32(20)
		if len(batch) > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				break
			}
			wait = int32(left / time.Second)
		}
		out, err := p.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(p.QueueURL),
			MaxNumberOfMessages:         int32(min(10, p.Source.BatchSize-len(batch))),
			WaitTimeSeconds:             wait,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		}, LongPoll)
		if err != nil {
			if len(batch) > 0 {
				return batch, nil
			}
			return nil, err
		}
		if len(batch) == 0 && len(out.Messages) > 0 {
			deadline = time.Now().Add(time.Duration(p.Source.MaxBatchingWindow) * time.Second)
		}
		batch = append(batch, out.Messages...)
		if len(batch) > 0 && (p.Source.MaxBatchingWindow == 0 || len(out.Messages) == 0) {
			break
		}
	}
	return batch, nil
}

func (p *Poller) invoke(ctx context.Context, msgs []sqstypes.Message) {
	ev := p.Event(msgs)
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       newID(),
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:" + p.Function,
	})
	resp, err := call(ctx, p.Handler, ev)
	if err != nil {
		p.Logger.Error("poller: invocation failed; the batch will be retried", slog.String("function", p.Function), slog.String("error", err.Error()))
		return
	}
	toDelete, ok := Settle(msgs, resp, p.Source.ReportBatchItemFailures)
	if !ok {
		p.Logger.Error("poller: malformed batchItemFailures; the whole batch will be retried", slog.String("function", p.Function))
		return
	}
	p.delete(ctx, toDelete)
}

// Settle returns the messages to delete after an invocation that returned
// resp, following Lambda's rules. ok is false when the response fails the
// whole batch.
func Settle(msgs []sqstypes.Message, resp events.SQSEventResponse, reportFailures bool) (toDelete []sqstypes.Message, ok bool) {
	if !reportFailures {
		return msgs, true
	}
	failed := map[string]bool{}
	ids := map[string]bool{}
	for _, m := range msgs {
		ids[aws.ToString(m.MessageId)] = true
	}
	for _, f := range resp.BatchItemFailures {
		if f.ItemIdentifier == "" || !ids[f.ItemIdentifier] {
			return nil, false
		}
		failed[f.ItemIdentifier] = true
	}
	for _, m := range msgs {
		if !failed[aws.ToString(m.MessageId)] {
			toDelete = append(toDelete, m)
		}
	}
	return toDelete, true
}

func (p *Poller) delete(ctx context.Context, msgs []sqstypes.Message) {
	for start := 0; start < len(msgs); start += 10 {
		end := min(start+10, len(msgs))
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range msgs[start:end] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		out, err := p.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(p.QueueURL), Entries: entries})
		if err != nil {
			// Undeleted messages come back and are processed again, which
			// the processor's idempotency makes harmless.
			p.Logger.Warn("poller: delete failed", slog.String("function", p.Function), slog.String("error", err.Error()))
			continue
		}
		for _, f := range out.Failed {
			p.Logger.Warn("poller: delete failed", slog.String("function", p.Function), slog.String("error", aws.ToString(f.Message)))
		}
	}
}

// Event builds the SQS event Lambda sends for msgs.
func (p *Poller) Event(msgs []sqstypes.Message) events.SQSEvent {
	region := "us-east-1"
	if parts := strings.Split(p.QueueARN, ":"); len(parts) > 3 {
		region = parts[3]
	}
	var ev events.SQSEvent
	for _, m := range msgs {
		body := aws.ToString(m.Body)
		md5sum := aws.ToString(m.MD5OfBody)
		if md5sum == "" {
			sum := md5.Sum([]byte(body))
			md5sum = hex.EncodeToString(sum[:])
		}
		attrs := map[string]string{}
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		mattrs := map[string]events.SQSMessageAttribute{}
		for k, v := range m.MessageAttributes {
			mattrs[k] = events.SQSMessageAttribute{StringValue: v.StringValue, BinaryValue: v.BinaryValue, DataType: aws.ToString(v.DataType)}
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:         aws.ToString(m.MessageId),
			ReceiptHandle:     aws.ToString(m.ReceiptHandle),
			Body:              body,
			Md5OfBody:         md5sum,
			Attributes:        attrs,
			MessageAttributes: mattrs,
			EventSource:       "aws:sqs",
			EventSourceARN:    p.QueueARN,
			AWSRegion:         region,
		})
	}
	return ev
}

func call(ctx context.Context, h Handler, ev events.SQSEvent) (events.SQSEventResponse, error) {
	type result struct {
		resp events.SQSEventResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("handler panicked: %v", r)}
			}
		}()
		resp, err := h(ctx, ev)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-ctx.Done():
		return events.SQSEventResponse{}, fmt.Errorf("task timed out: %w", ctx.Err())
	}
}

func newID() string {
	return strconv.FormatInt(time.Now().UnixNano(), 36)
}

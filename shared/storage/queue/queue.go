// Package queue sends event pointers to the SQS queue the processor reads.
package queue

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// SQS is the part of *sqs.Client a Queue uses.
type SQS interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Queue is the work queue of the processor.
type Queue struct {
	Client SQS
	URL    string
}

// Send enqueues a pointer to an event record.
func (q *Queue) Send(ctx context.Context, p event.Pointer) error {
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("queue: encode pointer to %s: %w", p.ID, err)
	}
	if _, err := q.Client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(q.URL),
		MessageBody: aws.String(string(body)),
	}); err != nil {
		return fmt.Errorf("queue: send %s: %w", p.ID, err)
	}
	return nil
}

// Decode reads a pointer from a message body.
func Decode(body string) (event.Pointer, error) {
	var p event.Pointer
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return p, fmt.Errorf("queue: decode pointer: %w", err)
	}
	if p.ID == "" {
		return p, fmt.Errorf("queue: pointer has no event id")
	}
	if p.Provider == "" {
		p.Provider = event.ProviderStripe
	}
	return p, nil
}

package cli

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// redriveWhere moves back to the webhook queue the dead-lettered messages
// pick chooses, at most limit of them (0: every one chosen), by the same
// batch move as dlq redrive --manual (moveBatch: send first, then delete
// what was sent). It reads the whole queue once: the messages it passes
// over stay hidden (redriveVisibility) until it has read them all, so that
// each is looked at once, then are made visible again at once. A message
// it was interrupted on reappears by itself.
func (a *app) redriveWhere(ctx context.Context, pick func(sqstypes.Message) bool, limit int) (RedriveJSON, error) {
	client, err := a.sqs(ctx)
	if err != nil {
		return RedriveJSON{}, err
	}
	main, dlq, err := a.queues(ctx, client)
	if err != nil {
		return RedriveJSON{}, err
	}
	res := RedriveJSON{Method: "receive_send_delete", From: dlq, To: main}
	total, err := approxMessages(ctx, client, dlq)
	if err != nil {
		return res, a.hint(err)
	}
	var passed []sqstypes.Message
	defer func() {
		release(context.WithoutCancel(ctx), client, dlq, passed)
	}()
	seen := map[string]bool{}
	for limit == 0 || res.Moved < limit {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(dlq),
			MaxNumberOfMessages:         10,
			VisibilityTimeout:           redriveVisibility,
			WaitTimeSeconds:             waitSeconds(len(seen), total),
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return res, a.hint(fmt.Errorf("receive from the dead-letter queue: %w", err))
		}
		if len(out.Messages) == 0 {
			break
		}
		var chosen []sqstypes.Message
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] || !pick(m) || (limit > 0 && res.Moved+len(chosen) >= limit) {
				passed = append(passed, m)
			} else {
				chosen = append(chosen, m)
			}
			seen[id] = true
		}
		if len(chosen) > 0 {
			n, err := a.moveBatch(ctx, client, dlq, main, chosen)
			res.Moved += n
			if err != nil {
				return res, err
			}
		}
	}
	// Visible again before counting what remains.
	release(context.WithoutCancel(ctx), client, dlq, passed)
	passed = nil
	if res.Remaining, err = approxMessages(ctx, client, dlq); err != nil {
		return res, a.hint(err)
	}
	return res, nil
}

// redriveMessage moves the dead-lettered message id back to the webhook
// queue: the console's "redrive" of one message. Moved is 0 when the
// message is no longer in the dead-letter queue.
func (a *app) redriveMessage(ctx context.Context, id string) (RedriveJSON, error) {
	return a.redriveWhere(ctx, func(m sqstypes.Message) bool { return aws.ToString(m.MessageId) == id }, 1)
}

package boot

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/queue"
)

// NewIngester builds the ingest path shared by the receiver and the
// reconciler.
func NewIngester(cfg aws.Config, c Common, handled func(string) bool) *ingest.Ingester {
	return &ingest.Ingester{
		Store:    c.Events(dynamodb.NewFromConfig(cfg)),
		Queue:    &queue.Queue{Client: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		Provider: event.ProviderStripe,
		Handled:  handled,
	}
}

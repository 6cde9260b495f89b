package boot

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// NewIngester builds the ingest path shared by the receiver and the
// reconciler.
func NewIngester(cfg aws.Config, c Common, handled func(string) bool) *ingest.Ingester {
	return NewIngesterOn(c.Events(dynamodb.NewFromConfig(cfg)), cfg, c, handled)
}

// RecordAccounts makes in record each connected account it stores an
// event of (once per account and container), for the reconciler to list:
// for a function that is given connected accounts' events, whose role may
// update the events table's accounts item.
func RecordAccounts(in *ingest.Ingester, events *store.Events) {
	in.Accounts = &ingest.AccountRecorder{Store: &store.Accounts{DB: events.DB, Table: events.Table}}
}

// NewIngesterOn is NewIngester storing into events, for a function that
// uses the events table for more than ingesting (the receiver's body
// claims).
func NewIngesterOn(events *store.Events, cfg aws.Config, c Common, handled func(string) bool) *ingest.Ingester {
	return &ingest.Ingester{
		Store:    events,
		Queue:    &queue.Queue{Client: sqs.NewFromConfig(cfg), URL: c.QueueURL},
		Provider: event.ProviderStripe,
		Handled:  handled,
	}
}

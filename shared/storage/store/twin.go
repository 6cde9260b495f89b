package store

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// TwinWrite returns the write, for the commit of a Stripe thin event
// (Completion.Writes), that makes its snapshot twin's record (twin, the
// event the thin event names in snapshot_event, of type twinType):
// processed, outcome twinned, source twin, no payload, unless a record
// of that id exists already. So the pair has one business effect
// whichever arrives first: committed with the thin event's effects, it
// turns the snapshot's later delivery into a duplicate; failing its
// condition (a *ConflictError at its index), it says the snapshot event
// is in hand and has the effect, and the thin event commits without its
// effects. thin is the thin event's record, whose account, object and
// created time the twin shares.
func (e *Events) TwinWrite(thin event.Record, twin, twinType string, now time.Time) types.TransactWriteItem {
	r := event.Record{
		Provider: event.ProviderStripe, ID: twin, Type: twinType, Created: thin.Created, Livemode: thin.Livemode,
		Account: thin.Account, ObjectID: thin.ObjectID, ObjectType: thin.ObjectType,
		Status: event.StatusProcessed, StatusAt: now, Source: event.SourceTwin, Outcome: outcome.Twinned,
		ReceivedAt: now, PayloadOmitted: true,
	}
	item := e.marshalRecord(&r)
	item[attrProcessedAt] = ddbattr.Millis(now)
	return types.TransactWriteItem{Put: &types.Put{
		TableName:           aws.String(e.Table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	}}
}

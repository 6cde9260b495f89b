package failpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// tie prepares the stripe-tie world's case: before the delivery, the
// mirror holds another event of the same object and the same created
// second, applied as the processor applies one, and Stripe's API serves
// the object as the delivery has it. The delivery then ties (mirror.Tie):
// the processor reads the object from the API (mirror.Mirror.Settle)
// before its effects run, and that read is a failure point of its own.
func (e *env) tie(ctx context.Context, s *stack, d delivery) error {
	var ev struct {
		Created int64 `json:"created"`
		Data    struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(d.body, &ev); err != nil {
		return fmt.Errorf("failpoints: tie: %w", err)
	}
	var obj struct {
		ID       string `json:"id"`
		Customer string `json:"customer"`
	}
	if err := json.Unmarshal(ev.Data.Object, &obj); err != nil {
		return fmt.Errorf("failpoints: tie: %w", err)
	}
	other := newEventID(event.ProviderStripe)
	body, err := stripefixture.Build(d.typ, stripefixture.Options{ID: other, Created: ev.Created, ObjectID: obj.ID, Customer: obj.Customer, Status: "past_due"})
	if err != nil {
		return err
	}
	m := &mirror.Mirror{Table: s.res.Tables["MirrorTable"], TiesByAPI: true}
	plan, err := m.Plan(event.Record{Provider: event.ProviderStripe, ID: other, Type: d.typ, Created: ev.Created}, body)
	if err != nil {
		return err
	}
	// Straight to the emulator: the earlier event is the world's state,
	// not a call of the case.
	if _, err := dynamodb.NewFromConfig(e.direct).TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: plan.Writes}); err != nil {
		return fmt.Errorf("failpoints: tie: apply the same-second event: %w", err)
	}
	return s.stripe.PutObject("", ev.Data.Object)
}

// objectOf is a snapshot event's data.object (nil when it has none).
func objectOf(body []byte) json.RawMessage {
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	return ev.Data.Object
}

// auditCommits reads how many times the audit's repair to the state of
// d's subscription committed its effects (the ledger of its event,
// audit.RepairEvent: the same id for every repair to that state).
func auditCommits(ctx context.Context, db *dynamodb.Client, table string, d delivery) (int, error) {
	rec, _, err := audit.RepairEvent(objectOf(d.body), "", false, time.Time{})
	if err != nil {
		return 0, err
	}
	return ledgerCommits(ctx, db, table, event.ProviderStripe, rec.ID)
}

package audit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
)

// beforeWrite is the audit's Writer with a hook run before its first
// write: an event processed between the audit's read and its repair.
type beforeWrite struct {
	audit.Writer
	hook func()
}

func (b *beforeWrite) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if h := b.hook; h != nil {
		b.hook = nil
		h()
	}
	return b.Writer.TransactWriteItems(ctx, in, optFns...)
}

// statusOf reads the mirror's status of a subscription.
func (w *world) statusOf(t *testing.T, id string) string {
	t.Helper()
	snap, err := w.reader.Object(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(snap.Data, &d)
	return d.Status
}

// TestAuditNeverReplacesAStateWrittenAfterItsRead: the audit's page is
// asked for at second T; an event of that same second (created after the
// page was served) is applied after the audit read the mirror and before
// its repair, or before its read. The event's state stands either way:
// the page may be the older one, and the guard alone (the same second or
// earlier) would let it through.
func TestAuditNeverReplacesAStateWrittenAfterItsRead(t *testing.T) {
	const asked = 1800000000
	for _, tc := range []struct {
		name string
		// between: the event applied between the read and the repair;
		// else before the run.
		between bool
	}{{"between the read and the repair", true}, {"before the read", false}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			ctx := context.Background()
			w.a.Now = func() time.Time { return time.Unix(asked, 0) }
			w.mirrored(t, subEvent(t, "sub_race", "cus_race", "active", asked-100))
			w.stripeHas(t, "sub_race", "cus_race", "canceled") // the page: canceled
			newer := subEvent(t, "sub_race", "cus_race", "past_due", asked)
			if tc.between {
				w.a.DB = &beforeWrite{Writer: w.db, hook: func() { w.mirrored(t, newer) }}
			} else {
				w.mirrored(t, newer)
			}
			res, err := w.a.Run(ctx, audit.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := w.statusOf(t, "sub_race"); got != "past_due" || res.Repaired != 0 || res.Raced != 1 {
				t.Errorf("got status %q, repaired %d, raced %d; want the event's past_due to stand, the repair counted raced", got, res.Repaired, res.Raced)
			}
			if ent, _ := w.reader.Entitlement(ctx, "cus_race"); len(ent.Subscriptions) != 1 || ent.Subscriptions[0].Status != "past_due" {
				t.Errorf("the entitlement: %+v; want the event's past_due entry, not the page's cancellation", ent)
			}
		})
	}
}

// TestAuditRunsNoEffectForHistory: a subscription the mirror lacks that
// ended long ago (status=all lists it) is written to the mirror and runs
// no effect, as history ingested by a backfill runs none; a live one the
// mirror lacks runs its effects as created.
func TestAuditRunsNoEffectForHistory(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	eff := &countingEffect{}
	reg := &effect.Registry{}
	reg.On(eff, "customer.subscription.deleted", "customer.subscription.updated", "customer.subscription.created")
	w.a.Effects = reg
	w.stripeHas(t, "sub_ended", "cus_ended", "canceled")
	w.stripeHas(t, "sub_expired", "cus_expired", "incomplete_expired")
	w.stripeHas(t, "sub_live", "cus_live", "active")
	res, err := w.a.Run(ctx, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Repaired != 3 || res.MissingHere != 3 {
		t.Fatalf("got %+v, want the 3 missing subscriptions repaired", res)
	}
	if got := w.statusOf(t, "sub_ended"); got != "canceled" {
		t.Errorf("sub_ended in the mirror: %q, want canceled", got)
	}
	if len(eff.evs) != 1 || eff.evs[0].Record.ObjectID != "sub_live" || res.Effects != 1 {
		var ran []string
		for _, ev := range eff.evs {
			ran = append(ran, ev.Record.ObjectID+" "+ev.Record.Type)
		}
		t.Errorf("effects ran for %v (counted %d); want sub_live's alone, no effect for the history", ran, res.Effects)
	}
}

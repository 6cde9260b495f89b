package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// TestErase erases the golden world's customer: a dry run that changes
// nothing, a real run that erases the mirror and every settled payload
// that names the customer (an ignored charge included, found only by the
// scan) and skips the pending ones, and a last run once those are settled.
// Another customer's data stays, and a duplicate delivery of an erased
// event is still recognised.
func TestErase(t *testing.T) {
	w := newWorld(t, true)
	w.seed()
	c := w.cli()
	ctx := context.Background()
	const c0 = 1777600000
	charge := body(t, "charge.succeeded", stripefixture.Options{ID: "evt_golden_charge", Created: c0 + 190,
		Set: map[string]any{"customer": "cus_golden", "billing_details": map[string]any{"email": "jenny@example.com", "name": "Jenny Rosen"}}})
	w.store(charge, event.SourceWebhook, event.StatusIgnored, time.Time{})
	other := w.store(
		body(t, "customer.subscription.updated", stripefixture.Options{ID: "evt_other", ObjectID: "sub_other", Customer: "cus_other", Created: c0 + 200}),
		event.SourceWebhook,
		event.StatusReceived,
		time.Time{},
	)
	w.process(other, 1)
	mr := &mirror.Reader{DB: w.s.DynamoDB, Table: w.s.Table("MirrorTable")}

	payload := func(id string) []byte {
		t.Helper()
		r, err := w.events.Get(ctx, event.ProviderStripe, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Payload
	}
	snapshot := func(id string) mirror.Snapshot {
		t.Helper()
		s, err := mr.Object(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return s
	}

	t.Run("usage", func(t *testing.T) {
		c.t = t
		c.run(ctx, "erase").must(t, 2)
		if r := c.run(ctx, "erase", "--customer", "sub_golden").must(t, 2); !strings.Contains(r.stderr, "cus_") {
			t.Errorf("a subscription id: %s", r.stderr)
		}
		c.golden("erase_unknown", c.run(ctx, "erase", "--customer", "cus_nobody").must(t, 1))
	})

	t.Run("dry run changes nothing", func(t *testing.T) {
		c.t = t
		c.golden("erase_dry_run", c.run(ctx, "erase", "--customer", "cus_golden").must(t, 0))
		if s := snapshot("sub_golden"); s.Erased || string(s.Data) == "null" {
			t.Errorf("sub_golden after a dry run: erased %v data %.30s", s.Erased, s.Data)
		}
		if len(payload("evt_golden_sub_updated")) == 0 || len(payload("evt_golden_charge")) == 0 {
			t.Error("a dry run erased a payload")
		}
	})

	t.Run("erase skips what is pending", func(t *testing.T) {
		c.t = t
		c.golden("erase_yes", c.run(ctx, "erase", "--customer", "cus_golden", "--yes").must(t, 1))
		for _, id := range []string{"sub_golden", "in_golden_inv_paid"} {
			if s := snapshot(id); !s.Erased || string(s.Data) != "null" || s.Customer != "cus_golden" {
				t.Errorf("%s: erased %v data %.30s customer %s; want an erased tombstone", id, s.Erased, s.Data, s.Customer)
			}
		}
		if ent, err := mr.Entitlement(ctx, "cus_golden"); err != nil || ent.Reason != "no_subscription" {
			t.Errorf("entitlement: %+v, %v; want none left", ent, err)
		}
		for _, id := range []string{"evt_golden_sub_created", "evt_golden_sub_updated", "evt_golden_sub_late", "evt_golden_inv_paid", "evt_golden_perm", "evt_golden_charge"} {
			if p := payload(id); len(p) != 0 {
				t.Errorf("%s: payload of %d bytes left", id, len(p))
			}
		}
		for _, id := range []string{"evt_golden_inv_failed", "evt_golden_dead", "evt_golden_received"} {
			if len(payload(id)) == 0 {
				t.Errorf("%s: a pending event's payload was erased", id)
			}
		}
		if s := snapshot("sub_other"); s.Erased || !strings.Contains(string(s.Data), "cus_other") || len(payload("evt_other")) == 0 {
			t.Errorf("another customer's data was touched: %+v", s)
		}
		r := c.run(ctx, "event", "evt_golden_sub_updated", "--payload").must(t, 1)
		if !strings.Contains(r.stderr, "erased") {
			t.Errorf("event --payload of an erased event: %q", r.stderr)
		}
		// A redelivery is still a duplicate of a processed event.
		dup := event.NewRecord(
			event.ProviderStripe,
			event.Envelope{ID: "evt_golden_sub_updated", Type: "customer.subscription.updated", Created: c0 + 120},
			[]byte(`{}`),
			"h",
			event.SourceWebhook,
			event.StatusReceived,
			now,
		)
		if existing, err := w.events.Create(ctx, &dup); err != nil || existing == nil || existing.Status != event.StatusProcessed {
			t.Errorf("redelivery of an erased event: %+v, %v; want the processed record", existing, err)
		}
	})

	t.Run("erase again once they are settled", func(t *testing.T) {
		c.t = t
		for _, id := range []string{"evt_golden_inv_failed", "evt_golden_dead", "evt_golden_received"} {
			w.setFail(id, nil)
			r, err := w.events.Get(ctx, event.ProviderStripe, id)
			if err != nil {
				t.Fatal(err)
			}
			w.process(r, 1)
		}
		r := c.run(ctx, "erase", "--customer", "cus_golden", "--yes", "--json").must(t, 0)
		c.golden("erase_json", r)
		var out EraseJSON
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		// Listed: the three settled since, and the erased ones about the
		// customer's mirrored objects (by_object). An erased payload no
		// longer names anyone, so the charge and the permanently failed
		// invoice, never mirrored, are not found again.
		if out.Skipped != 0 || out.Failed != 0 || len(out.Events) != 7 {
			t.Errorf("second run: skipped %d failed %d events %d; want 0, 0 and 7", out.Skipped, out.Failed, len(out.Events))
		}
		for _, id := range []string{"evt_golden_inv_failed", "evt_golden_dead", "evt_golden_received"} {
			if p := payload(id); len(p) != 0 {
				t.Errorf("%s: payload left after it settled", id)
			}
		}
		// The customer's own snapshot and the failed invoice's, written
		// when their events settled, are erased too.
		for _, id := range []string{"cus_golden", "in_golden_inv_failed"} {
			if s := snapshot(id); !s.Erased {
				t.Errorf("%s: not erased", id)
			}
		}
	})
}

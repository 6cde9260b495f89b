package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// TestReadCommandsByAccount: the same customer and subscription ids under
// two connected accounts and the platform, processed by the real
// processor, are three entitlements and three objects; --account picks
// one, and events --account lists that account's events only.
func TestReadCommandsByAccount(t *testing.T) {
	w := newWorld(t, true)
	c := w.cli()
	ctx := context.Background()
	const customer, sub = "cus_everywhere", "sub_everywhere"
	for _, e := range []struct{ id, account, status string }{
		{"evt_acct_a", "acct_a", "active"},
		{"evt_acct_b", "acct_b", "past_due"},
		{"evt_platform", "", "canceled"},
	} {
		b := body(
			t,
			"customer.subscription.updated",
			stripefixture.Options{
				ID:       e.id,
				Account:  e.account,
				ObjectID: sub,
				Customer: customer,
				Status:   e.status,
				Created:  now.Add(-30 * time.Minute).Unix(),
			},
		)
		r := w.store(b, event.SourceWebhook, event.StatusReceived, time.Time{})
		if resp := w.process(r, 1); len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s: %+v", e.id, resp)
		}
	}
	for _, tc := range []struct {
		account, status, event string
		active                 bool
	}{
		{"acct_a", "active", "evt_acct_a", true},
		{"acct_b", "past_due", "evt_acct_b", false},
		{"", "canceled", "evt_platform", false},
	} {
		args := []string{"entitlement", customer, "--json"}
		if tc.account != "" {
			args = append(args, "--account", tc.account)
		}
		var ent EntitlementJSON
		if err := json.Unmarshal([]byte(c.run(ctx, args...).must(t, 0).stdout), &ent); err != nil {
			t.Fatal(err)
		}
		if ent.Account != tc.account || ent.Active != tc.active || len(ent.Subscriptions) != 1 || ent.Subscriptions[0].Status != tc.status ||
			len(ent.Events) != 1 || ent.Events[0].ID != tc.event {
			t.Errorf("entitlement %v: got %+v; want %s's only (%s, from %s)", args, ent, tc.account, tc.status, tc.event)
		}
		args = []string{"object", sub, "--json"}
		if tc.account != "" {
			args = append(args, "--account", tc.account)
		}
		var obj ObjectJSON
		if err := json.Unmarshal([]byte(c.run(ctx, args...).must(t, 0).stdout), &obj); err != nil {
			t.Fatal(err)
		}
		if !obj.Mirrored || obj.Account != tc.account || obj.Snapshot.LastEventID != tc.event || len(obj.Events) != 1 || obj.Events[0].ID != tc.event {
			t.Errorf("object %v: got %+v; want %s's snapshot and event only", args, obj, tc.event)
		}
	}
	var list EventListJSON
	if err := json.Unmarshal([]byte(c.run(ctx, "events", "--account", "acct_b", "--json").must(t, 0).stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Events) != 1 || list.Events[0].ID != "evt_acct_b" || list.Events[0].Account != "acct_b" {
		t.Errorf("events --account acct_b: got %+v; want evt_acct_b only", list.Events)
	}
	c.run(ctx, "object", sub, "--account", "acct_nobody").must(t, 1)

	// erase --account acct_a erases acct_a's customer only: acct_b's
	// and the platform's customer of the same id keep their snapshot,
	// entitlement and payloads.
	var erased EraseJSON
	if err := json.Unmarshal([]byte(c.run(ctx, "erase", "--customer", customer, "--account", "acct_a", "--yes", "--json").must(t, 0).stdout), &erased); err != nil {
		t.Fatal(err)
	}
	if erased.Account != "acct_a" || len(erased.Events) != 1 || erased.Events[0].ID != "evt_acct_a" || erased.Events[0].Action != "erased" {
		t.Errorf("erase --account acct_a: got %+v; want acct_a's one event erased", erased)
	}
	var entitlementDeleted bool
	for _, it := range erased.Mirror {
		if it.Object == "entitlement" && it.Action == "deleted" {
			entitlementDeleted = true
		}
	}
	if !entitlementDeleted {
		t.Errorf("erase --account acct_a: got mirror %+v; want its entitlement deleted", erased.Mirror)
	}
	for _, e := range []struct{ account, event string }{{"acct_b", "evt_acct_b"}, {"", "evt_platform"}} {
		args := []string{"object", sub, "--json"}
		if e.account != "" {
			args = append(args, "--account", e.account)
		}
		var obj ObjectJSON
		if err := json.Unmarshal([]byte(c.run(ctx, args...).must(t, 0).stdout), &obj); err != nil {
			t.Fatal(err)
		}
		if !obj.Mirrored || obj.Snapshot.Erased {
			t.Errorf("after erasing acct_a's: %v got %+v; want its snapshot kept", args, obj.Snapshot)
		}
		rec, err := w.events.Get(ctx, event.ProviderStripe, e.event)
		if err != nil || rec.PayloadErased || len(rec.Payload) == 0 {
			t.Errorf("after erasing acct_a's: %s's payload: got %d bytes, erased %v (%v); want kept", e.event, len(rec.Payload), rec.PayloadErased, err)
		}
	}
	if rec, err := w.events.Get(ctx, event.ProviderStripe, "evt_acct_a"); err != nil || !rec.PayloadErased {
		t.Errorf("evt_acct_a: got erased %v (%v); want its payload erased", rec.PayloadErased, err)
	}
	// acct_b's entitlement is still there.
	var ent EntitlementJSON
	if err := json.Unmarshal([]byte(c.run(ctx, "entitlement", customer, "--account", "acct_b", "--json").must(t, 0).stdout), &ent); err != nil {
		t.Fatal(err)
	}
	if len(ent.Subscriptions) != 1 || ent.Subscriptions[0].Status != "past_due" {
		t.Errorf("acct_b's entitlement after erasing acct_a's: got %+v; want kept", ent)
	}
}

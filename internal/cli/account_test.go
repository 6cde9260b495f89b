package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
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
}

package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestReadCommandsGolden runs every read command against the seeded world
// and compares its output, text and JSON, with testdata/*.golden.
func TestReadCommandsGolden(t *testing.T) {
	w := newWorld(t, true)
	w.seed()
	c := w.cli()
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"event", []string{"event", "evt_golden_sub_late"}, 0},
		{"event_json", []string{"event", "evt_golden_sub_updated", "--json"}, 0},
		{"event_failed", []string{"event", "evt_golden_inv_failed"}, 0},
		{"event_reconciled", []string{"event", "evt_golden_inv_paid"}, 0},
		{"event_missing", []string{"event", "evt_missing"}, 1},
		{"events_failed", []string{"events", "--status", "failed"}, 0},
		{"events_processed_page1", []string{"events", "--status", "processed", "--since", "2h", "--limit", "2"}, 0},
		{"events_processed_json", []string{"events", "--status", "processed", "--type", "customer.subscription.updated", "--json"}, 0},
		{"events_none", []string{"events", "--status", "processing", "--since", "7d"}, 0},
		{"events_failing", []string{"events", "--failing"}, 0},
		{"events_failing_and_status", []string{"events", "--failing", "--status", "failed"}, 2},
		{"events_no_status", []string{"events"}, 0},
		{"events_bad_status", []string{"events", "--status", "done"}, 2},
		{"events_bad_since", []string{"events", "--status", "failed", "--since", "yesterday"}, 2},
		{"events_bad_cursor", []string{"events", "--status", "failed", "--next", "bm9wZQ"}, 2},
		{"object", []string{"object", "sub_golden"}, 0},
		{"object_json", []string{"object", "sub_golden", "--json"}, 0},
		{"object_unmirrored", []string{"object", "in_golden_perm"}, 0},
		{"object_unmirrored_json", []string{"object", "in_golden_perm", "--json"}, 0},
		{"object_missing", []string{"object", "sub_nothing"}, 1},
		{"object_customer", []string{"object", "cus_golden"}, 0},
		{"object_customer_missing", []string{"object", "cus_nobody"}, 1},
		{"entitlement", []string{"entitlement", "cus_golden"}, 0},
		{"entitlement_json", []string{"entitlement", "cus_golden", "--json"}, 0},
		{"entitlement_unknown", []string{"entitlement", "cus_nobody"}, 3},
		{"entitlement_email", []string{"entitlement", "alice@example.com"}, 2},
		{"entitlement_subscription_id", []string{"entitlement", "sub_golden"}, 2},
		{"status", []string{"status"}, 0},
		{"status_json", []string{"status", "--since", "2h", "--json"}, 0},
		{"status_bad_since", []string{"status", "--since", "tomorrow"}, 2},
		{"unknown_command", []string{"frobnicate"}, 2},
		{"unknown_subcommand", []string{"dlq", "lst"}, 2},
		{"missing_arg", []string{"event"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			r := c.run(ctx, tc.args...).must(t, tc.code)
			c.golden(tc.name, r)
		})
	}

	t.Run("next page continues where the first ended", func(t *testing.T) {
		c.t = t
		var first, second EventListJSON
		r := c.run(ctx, "events", "--status", "processed", "--limit", "2", "--json").must(t, 0)
		if err := json.Unmarshal([]byte(r.stdout), &first); err != nil {
			t.Fatal(err)
		}
		if first.Next == "" || len(first.Events) != 2 {
			t.Fatalf("first page: %d events, next %q; want 2 and a cursor", len(first.Events), first.Next)
		}
		r = c.run(ctx, "events", "--status", "processed", "--limit", "2", "--json", "--next", first.Next).must(t, 0)
		if err := json.Unmarshal([]byte(r.stdout), &second); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range append(first.Events, second.Events...) {
			ids = append(ids, e.ID)
		}
		want := "evt_golden_inv_paid evt_golden_sub_late evt_golden_sub_updated evt_golden_sub_created"
		if got := strings.Join(ids, " "); got != want || second.Next != "" {
			t.Errorf("pages: got %s (next %q), want %s and no more", got, second.Next, want)
		}
		c.golden(
			"events_processed_page2",
			c.run(ctx, "events", "--status", "processed", "--since", "2026-05-01T10:00:00Z", "--limit", "2", "--next", first.Next).must(t, 0),
		)
	})

	t.Run("payload is the stored body byte for byte", func(t *testing.T) {
		c.t = t
		r := c.run(ctx, "event", "evt_golden_sub_updated", "--payload").must(t, 0)
		rec, err := w.events.Get(ctx, "stripe", "evt_golden_sub_updated")
		if err != nil {
			t.Fatal(err)
		}
		if r.stdout != string(rec.Payload) {
			t.Errorf("payload: got %d bytes, want the %d stored", len(r.stdout), len(rec.Payload))
		}
	})
}

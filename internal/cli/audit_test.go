package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefake"
)

// TestAuditRepairsWhatNoEventWillShow: the mirror says active, Stripe's
// API says canceled, and no event will ever be listed.
func TestAuditRepairsWhatNoEventWillShow(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	fake := stripefake.New()
	defer fake.Close()

	active := body(t, "customer.subscription.updated", stripefixture.Options{ID: "evt_au_active", ObjectID: "sub_au", Customer: "cus_au",
		Status: "active", Created: time.Now().Add(-40 * 24 * time.Hour).Unix()})
	w.process(w.store(active, event.SourceWebhook, event.StatusReceived, time.Now()), 1)
	canceled := body(t, "customer.subscription.deleted", stripefixture.Options{ObjectID: "sub_au", Customer: "cus_au", Status: "canceled"})
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(canceled, &ev); err != nil {
		t.Fatal(err)
	}
	if err := fake.PutObject("", ev.Data.Object); err != nil {
		t.Fatal(err)
	}

	c := w.cli()
	c.t = t
	c.env["STRIPE_API_KEY"] = "rk_test_audit"
	c.env["STRIPE_API_BASE"] = fake.URL
	entitled := func() bool {
		var ent mirror.Entitlement
		r := c.run(ctx, "entitlement", "cus_au", "--json")
		if err := json.Unmarshal([]byte(r.stdout), &ent); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		return ent.Active
	}
	if !entitled() {
		t.Fatal("before the audit: not entitled, want the mirror's active")
	}

	var dry AuditJSON
	r := c.run(ctx, "audit", "--dry-run", "--json").must(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &dry); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if !dry.DryRun || dry.Repaired != 1 || dry.Listed != 1 || !entitled() {
		t.Errorf("dry run: got %+v, entitled %v; want 1 to repair and nothing changed", dry, entitled())
	}

	var got AuditJSON
	r = c.run(ctx, "audit", "--json").must(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if got.Repaired < 1 || got.DryRun || entitled() {
		t.Errorf("audit: got %+v, entitled %v; want repaired >= 1, the entitlement inactive", got, entitled())
	}
	var obj struct {
		Data struct {
			Status string `json:"status"`
		} `json:"data"`
		SettledBy string `json:"settled_by"`
	}
	r = c.run(ctx, "object", "sub_au", "--json").must(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if obj.Data.Status != "canceled" || obj.SettledBy != "audit" {
		t.Errorf("object: status %q settled by %q, want canceled by the audit", obj.Data.Status, obj.SettledBy)
	}
	// The JSON has every field the issue names.
	var fields map[string]any
	_ = json.Unmarshal([]byte(r.stdout), &fields)
	r = c.run(ctx, "audit", "--json").must(t, 0)
	_ = json.Unmarshal([]byte(r.stdout), &fields)
	for _, k := range []string{"listed", "matched", "repaired", "missing_here", "unknown_there", "pages", "dry_run"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("audit --json has no %q: %s", k, r.stdout)
		}
	}
}

package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
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

	// Each run is kept for the console and status: the last one first,
	// with the object it repaired.
	last, _ := fields["run_id"].(string)
	var st StatusJSON
	r = c.run(ctx, "status", "--json").must(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if st.Audit == nil || st.Audit.RunID != last || st.Audit.Outcome != "complete" || st.Audit.Listed != 1 {
		t.Errorf("status --json: audit %+v; want the last run %s, completed, 1 listed", st.Audit, last)
	}
	if text := c.run(ctx, "status").must(t, 0).stdout; !strings.Contains(text, "audit: last run") {
		t.Errorf("status: no line of the audit's last run:\n%s", text)
	}
	runs, err := (&store.Runs{DB: w.events.DB, Table: w.events.Table}).RecentAudits(ctx, event.ProviderStripe)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].ID != last || runs[2].ID != dry.RunID || !runs[2].DryRun || runs[1].ID != got.RunID || len(runs[1].Repairs) != 1 ||
		runs[1].Repairs[0].ID != "sub_au" || runs[1].Repairs[0].Customer != "cus_au" || len(runs[1].Repairs[0].Changes) == 0 {
		t.Errorf("kept audit runs: %+v; want the 3 runs newest first, the first real one repairing sub_au", runs)
	}
}

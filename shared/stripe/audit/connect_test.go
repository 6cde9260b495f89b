package audit_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// mirroredAs applies a connected account's event to the mirror, as the
// processor would: under the account's keys.
func (w *world) mirroredAs(t *testing.T, account string, body []byte) {
	t.Helper()
	var head struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Created int64  `json:"created"`
	}
	_ = json.Unmarshal(body, &head)
	plan, err := w.m.Plan(event.Record{ID: head.ID, Type: head.Type, Created: head.Created, Provider: event.ProviderStripe, Account: account}, body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: plan.Writes}); err != nil {
		t.Fatal(err)
	}
}

// TestAuditAuditsEveryConnectedAccountUnderItsOwnKeys: a configured
// account and one the inbox has seen are audited after the platform's
// own subscriptions, each listed as the account and read and repaired
// under the account's keys; none of their subscriptions counts as unknown
// to Stripe. A run with a page budget resumes where it stopped, across
// accounts.
func TestAuditAuditsEveryConnectedAccountUnderItsOwnKeys(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.mirrored(t, subEvent(t, "sub_plat", "cus_plat", "active", 1700000000))
	w.stripeHas(t, "sub_plat", "cus_plat", "active")
	w.mirroredAs(t, "acct_c1", subEvent(t, "sub_conn", "cus_conn", "active", 1700000000))
	if err := w.fake.PutObject("acct_c1", objectOf(t, subEvent(t, "sub_conn", "cus_conn", "canceled", 1700000000))); err != nil {
		t.Fatal(err)
	}
	if err := w.fake.PutObject("acct_c2", objectOf(t, subEvent(t, "sub_seen", "cus_seen", "active", 1700000000))); err != nil {
		t.Fatal(err)
	}
	seen := &store.Accounts{DB: w.db, Table: w.stack.Table("EventsTable")}
	if err := seen.Record(ctx, event.ProviderStripe, "acct_c2"); err != nil {
		t.Fatal(err)
	}
	w.a.ConnectAccounts = []string{"acct_c1"}
	w.a.SeenAccounts = seen

	var runs []audit.Result
	after := ""
	for i := 0; i < 5; i++ {
		res, err := w.a.Run(ctx, audit.Options{MaxPages: 1, StartingAfter: after})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, res)
		if after = res.Cursor; after == "" {
			break
		}
	}
	if len(runs) != 3 {
		t.Fatalf("runs with a one-page budget: %d (%+v); want 3, one per account, each resuming where the last stopped", len(runs), runs)
	}
	listed, repaired := 0, map[string]audit.Repair{}
	for _, r := range runs {
		listed += r.Listed
		for _, rp := range r.Repairs {
			repaired[mirror.Key(rp.Account, rp.ID)] = rp
		}
	}
	if listed != 3 || len(repaired) != 2 || repaired["acct_c1/sub_conn"].Account != "acct_c1" || !repaired["acct_c2/sub_seen"].Missing {
		t.Errorf("listed %d, repaired %v; want 3 listed, acct_c1's sub_conn and acct_c2's missing sub_seen repaired under their accounts", listed, repaired)
	}
	snap, err := w.reader.Object(ctx, mirror.Key("acct_c1", "sub_conn"))
	if err != nil || snap.SettledBy != mirror.SourceAudit || snap.Account != "acct_c1" {
		t.Errorf("acct_c1's sub_conn: %+v (%v); want repaired by the audit under the account's key", snap, err)
	}
	if _, err := w.reader.Object(ctx, "sub_conn"); err == nil {
		t.Errorf("the connected account's subscription was written under the platform's key")
	}
	if ent, _ := w.reader.Entitlement(ctx, mirror.Key("acct_c2", "cus_seen")); !ent.Active {
		t.Errorf("acct_c2's customer: active %v, want the missing subscription backfilled under the account", ent.Active)
	}

	whole, err := w.a.Run(ctx, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if whole.Listed != 3 || whole.Matched != 3 || whole.UnknownThere != 0 {
		t.Errorf("a whole run: %+v; want 3 listed and matched across the accounts, none unknown to Stripe", whole)
	}
}

package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

type world struct {
	db     *dynamodb.Client
	m      *mirror.Mirror
	reader *mirror.Reader
	fake   *stripefake.Server
	a      *audit.Auditor
	stack  *testenv.Stack
}

func newWorld(t *testing.T) *world {
	t.Helper()
	s := testenv.Provision(t, nil)
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	api, err := stripeapi.New(stripeapi.Config{Key: "rk_test_audit", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{db: s.DynamoDB, m: &mirror.Mirror{Table: s.Table("MirrorTable"), TiesByAPI: true},
		reader: &mirror.Reader{DB: s.DynamoDB, Table: s.Table("MirrorTable")}, fake: fake, stack: s}
	w.a = &audit.Auditor{API: api, Mirror: w.m, Reader: w.reader, DB: s.DynamoDB, Scan: s.DynamoDB}
	return w
}

// event builds a subscription event.
func subEvent(t *testing.T, id, customer, status string, created int64) []byte {
	t.Helper()
	body, err := stripefixture.Build("customer.subscription.updated", stripefixture.Options{ObjectID: id, Customer: customer, Status: status, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func objectOf(t *testing.T, body []byte) json.RawMessage {
	t.Helper()
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Data.Object
}

// mirrored applies an event to the mirror, as the processor would.
func (w *world) mirrored(t *testing.T, body []byte) {
	t.Helper()
	var head struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Created int64  `json:"created"`
	}
	_ = json.Unmarshal(body, &head)
	plan, err := w.m.Plan(event.Record{ID: head.ID, Type: head.Type, Created: head.Created, Provider: event.ProviderStripe}, body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: plan.Writes}); err != nil {
		t.Fatal(err)
	}
}

func (w *world) stripeHas(t *testing.T, id, customer, status string) {
	t.Helper()
	if err := w.fake.PutObject("", objectOf(t, subEvent(t, id, customer, status, 1700000000))); err != nil {
		t.Fatal(err)
	}
}

// TestAuditRepairsACancellationNoEventWillShow: the mirror says active,
// Stripe says canceled, and no event will ever be listed. Only status=all
// lists the canceled subscription.
func TestAuditRepairsACancellationNoEventWillShow(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.mirrored(t, subEvent(t, "sub_drift", "cus_drift", "active", 1700000000))
	w.stripeHas(t, "sub_drift", "cus_drift", "canceled")
	w.mirrored(t, subEvent(t, "sub_same", "cus_same", "active", 1700000000))
	w.stripeHas(t, "sub_same", "cus_same", "active")
	w.stripeHas(t, "sub_before", "cus_before", "active")                     // created before the inbox
	w.mirrored(t, subEvent(t, "sub_gone", "cus_gone", "active", 1700000000)) // Stripe has no such subscription

	dry, err := w.a.Run(ctx, audit.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Listed != 3 || dry.Matched != 1 || dry.Repaired != 2 || dry.MissingHere != 1 || !dry.DryRun || dry.Pages != 1 ||
		dry.UnknownThere != 1 || len(dry.Unknown) != 1 || dry.Unknown[0] != "sub_gone" {
		t.Errorf("dry run: got %+v, want listed 3, matched 1, repaired 2 (would), missing_here 1, unknown_there 1 (sub_gone), 1 page", dry)
	}
	if ent, _ := w.reader.Entitlement(ctx, "cus_drift"); !ent.Active {
		t.Errorf("dry run changed the entitlement: active %v, want still active", ent.Active)
	}
	if _, err := w.reader.Object(ctx, "sub_before"); err == nil {
		t.Errorf("dry run wrote the missing subscription")
	}

	res, err := w.a.Run(ctx, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Repaired < 1 || res.Repaired != 2 || res.MissingHere != 1 || res.DryRun {
		t.Errorf("run: got %+v, want repaired 2, missing_here 1", res)
	}
	ent, err := w.reader.Entitlement(ctx, "cus_drift")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := w.reader.Object(ctx, "sub_drift")
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(snap.Data, &data)
	if ent.Active || data.Status != "canceled" || snap.SettledBy != mirror.SourceAudit || len(snap.Changes) == 0 {
		t.Errorf("after the audit: active %v, status %q settled by %q, changes %v; want inactive, canceled, by the audit, with what changed",
			ent.Active, data.Status, snap.SettledBy, snap.Changes)
	}
	if ent, _ := w.reader.Entitlement(ctx, "cus_before"); !ent.Active {
		t.Errorf("the subscription created before the inbox: entitled %v, want backfilled, active", ent.Active)
	}
	for _, r := range w.fake.SubscriptionLists() {
		if r.Query.Get("status") != "all" {
			t.Errorf("list %v: want status=all", r.Query)
		}
	}

	again, err := w.a.Run(ctx, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Matched != 3 || again.Repaired != 0 {
		t.Errorf("a second run: got %+v, want all 3 matched, nothing repaired", again)
	}
}

// TestAuditLosesToANewerEvent: a repair is written at the time its page
// was asked for; an event created after that still wins.
func TestAuditLosesToANewerEvent(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	w.mirrored(t, subEvent(t, "sub_newer", "cus_newer", "active", 4000000000)) // created after the audit's page
	w.stripeHas(t, "sub_newer", "cus_newer", "canceled")
	res, err := w.a.Run(ctx, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Repaired != 0 || res.Raced != 1 {
		t.Errorf("got %+v, want the repair raced by the newer event", res)
	}
	if ent, _ := w.reader.Entitlement(ctx, "cus_newer"); !ent.Active {
		t.Errorf("the newer event's state was replaced")
	}
}

// TestAStoppedAuditResumes: a run that ends before the list does says
// where, and the next run resumes there.
func TestAStoppedAuditResumes(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	for i := range 150 {
		w.stripeHas(t, fmt.Sprintf("sub_page%03d", i), fmt.Sprintf("cus_page%03d", i), "active")
	}
	first, err := w.a.Run(ctx, audit.Options{MaxPages: 1})
	if err != nil {
		t.Fatal(err)
	}
	if first.Listed != 100 || first.Cursor == "" || first.Pages != 1 {
		t.Fatalf("first run: listed %d, cursor %q; want 100 and where to resume", first.Listed, first.Cursor)
	}
	rest, err := w.a.Run(ctx, audit.Options{StartingAfter: first.Cursor})
	if err != nil {
		t.Fatal(err)
	}
	if rest.Listed != 50 || rest.Cursor != "" || first.Repaired+rest.Repaired != 150 {
		t.Errorf("resumed: listed %d, cursor %q, repaired %d+%d; want the other 50, to the end, 150 repaired in all",
			rest.Listed, rest.Cursor, first.Repaired, rest.Repaired)
	}
}

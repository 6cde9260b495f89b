package reconcile_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestAConnectedAccountsMissedEventIsFound: with connected accounts
// configured, a run lists each account's events with the platform's key
// and the Stripe-Account header (the fake, as Stripe, shows an account's
// events only to a request acting for it), each account with checkpoints
// of its own; a connected account's missed event is ingested, processed
// into that account's mirror, and the same customer id under another
// account is left alone.
func TestAConnectedAccountsMissedEventIsFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	const sub, customer = "sub_connect_missed", "cus_connect_missed"
	created := h.now.Add(-reconcile.DefaultSettle - time.Hour).Unix()
	build := func(id, account, status string) []byte {
		b, err := stripefixture.Build(
			"customer.subscription.updated",
			stripefixture.Options{ID: id, Account: account, Created: created, ObjectID: sub, Customer: customer, Status: status},
		)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	missedA, deliveredB := build("evt_connect_missed_a", "acct_a", "active"), build("evt_connect_delivered_b", "acct_b", "past_due")
	if err := h.fake.Add(missedA, deliveredB); err != nil {
		t.Fatal(err)
	}
	// acct_b's event arrived by its webhook.
	env, err := event.DecodeEnvelope(deliveredB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.ingester.Ingest(context.Background(), env, deliveredB, event.SourceWebhook); err != nil {
		t.Fatal(err)
	}
	h.startProcessor()
	r := h.reconciler("sk_test_connect", func(c *reconcile.Config) { c.ConnectAccounts = []string{"acct_a", "acct_b"} })
	if n := len(r.Groups()); n != 3 {
		t.Fatalf("groups: got %d, want 3 (the platform's and one per account)", n)
	}
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Listed != 2 || res.Missing != 1 || res.Stopped != "" {
		t.Fatalf("run: got %+v, want 2 listed (one per account), 1 missing, complete", res)
	}
	accounts := map[string]int{}
	for _, l := range h.fake.Lists() {
		accounts[l.Account]++
	}
	if accounts[""] != 1 || accounts["acct_a"] != 1 || accounts["acct_b"] != 1 {
		t.Errorf("list requests by Stripe-Account: got %v, want one each for the platform, acct_a and acct_b", accounts)
	}
	seen := map[string]bool{}
	for _, g := range r.Groups() {
		if seen[g.Checkpoint] {
			t.Errorf("checkpoint %s shared by two groups", g.Checkpoint)
		}
		seen[g.Checkpoint] = true
	}
	rec := h.records([]string{"evt_connect_missed_a"})["evt_connect_missed_a"]
	if rec == nil || rec.Source != event.SourceReconciler || rec.Account != "acct_a" {
		t.Fatalf("the missed event's record: got %+v, want stored by the reconciler, of acct_a", rec)
	}
	reader := &mirror.Reader{DB: dynamodb.NewFromConfig(h.stack.AWS), Table: h.stack.Table("MirrorTable")}
	testenv.Eventually(t, 30*time.Second, "acct_a's entitlement from its missed event", func() bool {
		ent, err := reader.Entitlement(context.Background(), mirror.Key("acct_a", customer))
		return err == nil && ent.Active && ent.Account == "acct_a"
	})
	testenv.Eventually(t, 30*time.Second, "acct_b's entitlement from its own event", func() bool {
		ent, err := reader.Entitlement(context.Background(), mirror.Key("acct_b", customer))
		return err == nil && !ent.Active && len(ent.Subscriptions) == 1 && ent.Subscriptions[0].Status == "past_due"
	})
	if ent, err := reader.Entitlement(context.Background(), customer); err != nil || len(ent.Subscriptions) != 0 {
		t.Errorf("the platform's customer %s: got %+v, %v; want none (the accounts' are their own)", customer, ent, err)
	}
}

// TestAnAccountSeenByTheReceiverIsListed: no account configured; an event
// of acct_seen stored through the receiver's ingest path records the
// account, and the next run lists acct_seen's events with its
// Stripe-Account header and finds the one its webhook lost.
func TestAnAccountSeenByTheReceiverIsListed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	created := h.now.Add(-reconcile.DefaultSettle - time.Hour).Unix()
	build := func(id string) []byte {
		b, err := stripefixture.Build("customer.subscription.updated",
			stripefixture.Options{ID: id, Account: "acct_seen", Created: created, ObjectID: "sub_" + id, Customer: "cus_seen", Status: "active"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	delivered, missed := build("evt_seen_delivered"), build("evt_seen_missed")
	if err := h.fake.Add(delivered, missed); err != nil {
		t.Fatal(err)
	}
	accounts := &store.Accounts{DB: h.db, Table: h.stack.Table("EventsTable")}
	receiver := *h.ingester
	receiver.Accounts = &ingest.AccountRecorder{Store: accounts}
	env, err := event.DecodeEnvelope(delivered)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := receiver.Ingest(context.Background(), env, delivered, event.SourceWebhook); err != nil || res.AccountErr != nil {
		t.Fatalf("webhook: %v, %v", err, res.AccountErr)
	}
	r := h.reconciler("sk_test_seen", func(c *reconcile.Config) { c.SeenAccounts = accounts })
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing != 1 || res.Accounts < 1 {
		t.Fatalf("run: got %+v, want acct_seen listed and its 1 missing event found", res)
	}
	var asked bool
	for _, l := range h.fake.Lists() {
		asked = asked || l.Account == "acct_seen"
	}
	if !asked {
		t.Error("no list request with Stripe-Account acct_seen")
	}
	rec := h.records([]string{"evt_seen_missed"})["evt_seen_missed"]
	if rec == nil || rec.Source != event.SourceReconciler || rec.Account != "acct_seen" {
		t.Fatalf("the missed event's record: got %+v, want stored by the reconciler, of acct_seen", rec)
	}
}

// TestAListedAccountIsReconciled: with the platform's accounts listed, an
// account that never sent an event, and is not configured, has its
// missed event found.
func TestAListedAccountIsReconciled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	b, err := stripefixture.Build("customer.subscription.updated", stripefixture.Options{ID: "evt_listed_missed", Account: "acct_listed",
		Created: h.now.Add(-reconcile.DefaultSettle - time.Hour).Unix(), ObjectID: "sub_listed", Customer: "cus_listed", Status: "active"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fake.Add(b); err != nil {
		t.Fatal(err)
	}
	h.fake.AddAccount("acct_listed")
	r := h.reconciler("sk_test_listed", func(c *reconcile.Config) { c.ListAccounts = c.Stripe.(*stripeapi.Client) })
	res, err := r.Run(context.Background(), reconcile.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing != 1 || res.Accounts != 1 || res.AccountFailures != 0 {
		t.Fatalf("run: got %+v, want acct_listed listed and its 1 missing event found", res)
	}
	rec := h.records([]string{"evt_listed_missed"})["evt_listed_missed"]
	if rec == nil || rec.Account != "acct_listed" {
		t.Fatalf("the missed event's record: got %+v, want one of acct_listed", rec)
	}
}

// failingAccounts fails every recording of an account: its item cannot
// be written.
type failingAccounts struct{}

func (failingAccounts) Record(context.Context, string, string) error {
	return errors.New("injected: account item unwritable")
}

// TestARecordingFailureLosesNoEvent: when the account cannot be recorded,
// the event is stored and enqueued all the same; the account's next event
// records it.
func TestARecordingFailureLosesNoEvent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, oneGroup)
	table := h.stack.Table("EventsTable")
	ingestOne := func(accounts ingest.Accounts, id string) ingest.Result {
		t.Helper()
		b, err := stripefixture.Build("customer.subscription.updated", stripefixture.Options{ID: id, Account: "acct_unrecorded",
			Created: h.now.Add(-time.Hour).Unix(), ObjectID: "sub_" + id, Customer: "cus_unrecorded", Status: "active"})
		if err != nil {
			t.Fatal(err)
		}
		env, err := event.DecodeEnvelope(b)
		if err != nil {
			t.Fatal(err)
		}
		in := *h.ingester
		in.Accounts = &ingest.AccountRecorder{Store: accounts}
		res, err := in.Ingest(context.Background(), env, b, event.SourceWebhook)
		if err != nil {
			t.Fatalf("%s: %v; want stored and enqueued", id, err)
		}
		return res
	}
	if res := ingestOne(failingAccounts{}, "evt_unrecorded_1"); res.AccountErr == nil {
		t.Fatal("got no AccountErr, want the failed write reported")
	}
	rec := h.records([]string{"evt_unrecorded_1"})["evt_unrecorded_1"]
	if rec == nil || rec.Account != "acct_unrecorded" || len(rec.Payload) == 0 {
		t.Fatalf("the event whose account was not recorded: got %+v, want stored with its payload", rec)
	}
	if res := ingestOne(&store.Accounts{DB: h.db, Table: table}, "evt_unrecorded_2"); res.AccountErr != nil {
		t.Fatal(res.AccountErr)
	}
	seen, _, err := (&store.Accounts{DB: h.db, Table: table}).Page(context.Background(), event.ProviderStripe, "", 100)
	if err != nil || !slices.Contains(seen, "acct_unrecorded") {
		t.Fatalf("after the next event: got %v (%v), want acct_unrecorded recorded", seen, err)
	}
}

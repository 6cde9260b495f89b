package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// at returns a record received at t, in status st since then.
func at(id, typ string, st event.Status, t time.Time) event.Record {
	r := record(id, t)
	r.Type = typ
	r.Status = st
	r.StatusAt = t
	return r
}

// TestListPagesNewestFirstAcrossDays: a status's records received in the
// window, newest first, across days and shards, a page at a time, each
// page full but the last, and no cursor after the last record.
func TestListPagesNewestFirstAcrossDays(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Date(2026, 5, 3, 10, 0, 0, 0, time.UTC)
	var failed []string // newest first
	var records []event.Record
	// Seven failed records over three days, newest first, one of another type.
	for i, offset := range []time.Duration{1 * time.Minute, 2 * time.Hour, 9 * time.Hour, 11 * time.Hour, 20 * time.Hour, 30 * time.Hour, 40 * time.Hour} {
		id := fmt.Sprintf("evt_f%d", i)
		typ := "invoice.paid"
		if i == 3 {
			typ = "customer.subscription.updated"
		}
		records = append(records, at(id, typ, event.StatusFailed, now.Add(-offset)))
		failed = append(failed, id)
	}
	records = append(records,
		at("evt_too_old", "invoice.paid", event.StatusFailed, now.Add(-49*time.Hour)),
		at("evt_processed", "invoice.paid", event.StatusProcessed, now.Add(-time.Hour)),
		at("evt_future", "invoice.paid", event.StatusFailed, now.Add(time.Hour)),
	)
	for _, r := range records {
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	since := now.Add(-48 * time.Hour)

	for _, limit := range []int{1, 3, 7, 50} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("more than 10 pages")
				}
				page, err := ev.List(ctx, store.Query{Status: event.StatusFailed, Since: since, Until: now, Limit: limit, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Records) == 0 {
					t.Fatalf("page %d is empty: a cursor led to no records", pages)
				}
				if page.Next != "" && len(page.Records) != limit {
					t.Fatalf("page %d: got %d records with a next page, want a full page of %d", pages, len(page.Records), limit)
				}
				for _, r := range page.Records {
					got = append(got, r.ID)
					if r.Status != event.StatusFailed || r.Type == "" || r.StatusAt.IsZero() || r.Source != event.SourceWebhook {
						t.Errorf("%s: projection lost fields: %+v", r.ID, r)
					}
				}
				if cursor = page.Next; cursor == "" {
					break
				}
			}
			if !slices.Equal(got, failed) {
				t.Errorf("got %v, want %v", got, failed)
			}
		})
	}

	t.Run("type filter", func(t *testing.T) {
		page, err := ev.List(ctx, store.Query{Status: event.StatusFailed, Since: since, Until: now, Type: "customer.subscription.updated", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Records) != 1 || page.Records[0].ID != "evt_f3" || page.Next != "" {
			t.Errorf("got %d records (%v), next %q; want evt_f3 only", len(page.Records), page.Records, page.Next)
		}
	})

	t.Run("foreign cursor", func(t *testing.T) {
		page, err := ev.List(ctx, store.Query{Status: event.StatusFailed, Since: since, Until: now, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"garbage!", "e30", page.Next} {
			_, err := ev.List(ctx, store.Query{Status: event.StatusProcessed, Since: since, Until: now, Cursor: c})
			if !errors.Is(err, store.ErrBadCursor) {
				t.Errorf("cursor %q: got %v, want ErrBadCursor", c, err)
			}
		}
	})
}

func TestByObjectListsEventsInTheProvidersOrder(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	for _, c := range []struct {
		id      string
		obj     string
		created int64
		status  event.Status
	}{
		{"evt_b", "sub_1", 200, event.StatusProcessed},
		{"evt_a", "sub_1", 100, event.StatusProcessed},
		{"evt_c", "sub_1", 300, event.StatusFailed},
		{"evt_other", "sub_2", 150, event.StatusReceived},
	} {
		r := record(c.id, now)
		r.ObjectID, r.Created, r.Status, r.Outcome = c.obj, c.created, c.status, outcome.Applied
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ev.ByObject(ctx, "sub_1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
		if r.Provider != event.ProviderStripe || r.Type != "invoice.paid" || r.Status == "" || r.Outcome != outcome.Applied || r.ObjectID != "sub_1" {
			t.Errorf("%s: got %+v, want provider, type, status, outcome and object from the index", r.ID, r)
		}
	}
	if want := []string{"evt_a", "evt_b", "evt_c"}; !slices.Equal(ids, want) {
		t.Errorf("got %v, want %v", ids, want)
	}
	if none, err := ev.ByObject(ctx, "sub_none"); err != nil || len(none) != 0 {
		t.Errorf("object with no events: got %v, %v; want none", none, err)
	}
}

// TestByCustomerListsEveryEventThatConcernsTheCustomer: a customer's own
// events (by_object) and its other objects' (by_customer_id), whatever
// their status, a dead-lettered invoice.paid that never reached the
// mirror included, newest first; another customer's and another
// account's are not its; a limit keeps the newest and says more follow.
func TestByCustomerListsEveryEventThatConcernsTheCustomer(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	for _, c := range []struct {
		id, typ, obj, objType, customer, account string
		created                                  int64
		status                                   event.Status
	}{
		{"evt_cus", "customer.created", "cus_alice", "customer", "cus_alice", "", 100, event.StatusProcessed},
		{"evt_sub", "customer.subscription.created", "sub_a", "subscription", "cus_alice", "", 200, event.StatusProcessed},
		{"evt_inv", "invoice.paid", "in_a", "invoice", "cus_alice", "", 300, event.StatusDeadLettered},
		{"evt_fail", "invoice.payment_failed", "in_b", "invoice", "cus_alice", "", 250, event.StatusFailedPermanent},
		{"evt_bob", "invoice.paid", "in_c", "invoice", "cus_bob", "", 400, event.StatusProcessed},
		{"evt_acct", "invoice.paid", "in_d", "invoice", "cus_alice", "acct_1", 500, event.StatusProcessed},
	} {
		r := record(c.id, now)
		r.Type, r.ObjectID, r.ObjectType, r.Customer, r.Account, r.Created, r.Status = c.typ, c.obj, c.objType, c.customer, c.account, c.created, c.status
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(rs []event.Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID+":"+string(r.Status))
		}
		return out
	}
	got, err := ev.ByCustomer(ctx, "", "cus_alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"evt_inv:dead_lettered", "evt_fail:failed_permanent", "evt_sub:processed", "evt_cus:processed"}
	if !slices.Equal(ids(got.Records), want) || got.More {
		t.Errorf("ByCustomer(cus_alice): got %v (more %t), want %v", ids(got.Records), got.More, want)
	}
	for _, r := range got.Records {
		if r.Customer != "cus_alice" {
			t.Errorf("%s: customer %q, want cus_alice", r.ID, r.Customer)
		}
	}
	got, err = ev.ByCustomer(ctx, "", "cus_alice", 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := want[:2]; !slices.Equal(ids(got.Records), want) || !got.More {
		t.Errorf("ByCustomer(cus_alice, limit 2): got %v (more %t), want %v and more", ids(got.Records), got.More, want)
	}
	got, err = ev.ByCustomer(ctx, "acct_1", "cus_alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"evt_acct:processed"}; !slices.Equal(ids(got.Records), want) {
		t.Errorf("ByCustomer(acct_1/cus_alice): got %v, want %v", ids(got.Records), want)
	}
	if got, err := ev.ByCustomer(ctx, "", "cus_nobody", 0); err != nil || len(got.Records) != 0 {
		t.Errorf("a customer with no events: got %v, %v; want none", got, err)
	}
}

func TestReopenMovesOnlyFailedPermanentBackToFailed(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	r := at("evt_perm", "invoice.paid", event.StatusFailedPermanent, now.Add(-time.Hour))
	r.LastError = "decode"
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	got, err := ev.Reopen(ctx, "stripe", "evt_perm", now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != event.StatusFailed || !got.StatusAt.Equal(now) {
		t.Fatalf("after Reopen: got %s at %v, want failed at %v", got.Status, got.StatusAt, now)
	}
	// Listed by the time it was received, an hour ago.
	page, err := ev.List(ctx, store.Query{Status: event.StatusFailed, Since: now.Add(-2 * time.Hour), Until: now})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("reopened record in the failed listing: got %v, %v; want it listed", page.Records, err)
	}
	// Only once: it is failed now, which the processor claims by itself.
	var nc *store.NotClaimableError
	if _, err := ev.Reopen(ctx, "stripe", "evt_perm", now); !errors.As(err, &nc) || nc.Current.Status != event.StatusFailed {
		t.Fatalf("second Reopen: got %v, want NotClaimableError(failed)", err)
	}
	if _, err := ev.Claim(ctx, "stripe", "evt_perm", "w1", now, now.Add(time.Minute)); err != nil {
		t.Fatalf("claim after Reopen: %v", err)
	}
	processed := at("evt_done", "invoice.paid", event.StatusProcessed, now)
	if _, err := ev.Create(ctx, &processed); err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Reopen(ctx, "stripe", "evt_done", now); !errors.As(err, &nc) || nc.Current.Status != event.StatusProcessed {
		t.Fatalf("Reopen of a processed event: got %v, want NotClaimableError(processed): it must never run twice", err)
	}
	if _, err := ev.Reopen(ctx, "stripe", "evt_missing", now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Reopen of a missing event: got %v, want ErrNotFound", err)
	}
}

// TestListFailingMergesTheLanesThatNeedAPerson: Failing lists failed,
// dead_lettered and failed_permanent records together, newest first, a
// page at a time, and nothing else of the lanes it reads.
func TestListFailingMergesTheLanesThatNeedAPerson(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Date(2026, 5, 3, 10, 0, 0, 0, time.UTC)
	var want []string // newest first
	for i, st := range []event.Status{
		event.StatusFailed, event.StatusReceived, event.StatusDeadLettered, event.StatusProcessed,
		event.StatusFailedPermanent, event.StatusIgnored, event.StatusFailed, event.StatusProcessing, event.StatusDeadLettered,
	} {
		id := fmt.Sprintf("evt_l%d", i)
		r := at(id, "invoice.paid", st, now.Add(-time.Duration(i+1)*time.Minute))
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
		if st.IsFailing() {
			want = append(want, id)
		}
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages")
		}
		page, err := ev.List(ctx, store.Query{Failing: true, Since: now.Add(-time.Hour), Until: now, Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			got = append(got, r.ID)
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := ev.List(ctx, store.Query{Failing: true, Status: event.StatusFailed}); err == nil {
		t.Error("failing and a status: got no error")
	}
	if _, err := ev.List(ctx, store.Query{Status: event.StatusFailed, Cursor: cursor}); err != nil {
		t.Errorf("first page without a cursor: %v", err)
	}
}

package processor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// withAPI wires the processor as processorboot does with an API key: the
// mirror settles ties, from the Stripe stand-in.
func withAPI(t *testing.T, fake *stripefake.Server) func(*processor.Config) {
	t.Helper()
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_settle", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return func(cfg *processor.Config) {
		m := *cfg.Mirror.(*mirror.Mirror)
		m.TiesByAPI = true
		cfg.Mirror, cfg.API = &m, c
	}
}

// subscriptionObject is the subscription as Stripe's API serves it: the
// sample object with id, customer and status set.
func subscriptionObject(t *testing.T, id, customer, status string) []byte {
	t.Helper()
	body := build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: id, Customer: customer, Status: status})
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

// apiReads sums the api_reads metric of the batches logged.
func (e *env) apiReads() int {
	n := 0
	for _, l := range e.logs.lines(map[string]string{"msg": "batch"}) {
		if v, ok := l[processor.MetricAPIReads].(float64); ok {
			n += int(v)
		}
	}
	return n
}

// TestStaleSameSecondUpdateArrivingLastEndsInTheAPIsState is the reported
// case: an active and an unpaid update of one subscription in the same
// second, the unpaid one with the larger id, arriving last. Ordered by id,
// the mirror would keep unpaid and lock the customer out; Stripe's API
// says active.
func TestStaleSameSecondUpdateArrivingLastEndsInTheAPIsState(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withAPI(t, fake))
	ctx := context.Background()
	sub, cus := "sub_stale", "cus_stale"
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "active")); err != nil {
		t.Fatal(err)
	}
	active := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
		ID: "evt_stale_a", ObjectID: sub, Customer: cus, Created: 1700000000, Status: "active"}))
	unpaid := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
		ID: "evt_stale_b", ObjectID: sub, Customer: cus, Created: 1700000000, Status: "unpaid"}))
	for _, r := range []event.Record{active, unpaid} {
		resp, err := p.Handle(ctx, batch(message(r, 1)))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("event %s: got %v %+v", r.ID, err, resp)
		}
	}
	snap, err := e.reader.Object(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	ent, err := e.reader.Entitlement(ctx, cus)
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(snap.Data, &data)
	if data.Status != "active" || snap.SettledBy != mirror.SourceAPI || !ent.Active {
		t.Errorf("got status %q settled by %q, entitled %v; want active from the API, entitled", data.Status, snap.SettledBy, ent.Active)
	}
	if got := e.record(t, unpaid.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Applied {
		t.Errorf("the unpaid event: %s %s, want processed, applied (the API's state)", got.Status, got.Outcome)
	}
	e.exactlyOnce(t, active.ID)
	e.exactlyOnce(t, unpaid.ID)
	if got := len(fake.Retrievals()); got != 1 || e.apiReads() != 1 {
		t.Errorf("API reads: %d requests, metric %d; want 1 and 1", got, e.apiReads())
	}
}

// TestEveryOrderOfThreeSameSecondEventsEndsInTheAPIsState delivers three
// updates of one subscription in one second in all six orders, each order
// to its own subscription, with the API's state (past_due, a later
// period) differing from every event's.
func TestEveryOrderOfThreeSameSecondEventsEndsInTheAPIsState(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	// As deployed with effects: ties are found and settled by the read
	// before the effects run.
	p := e.processorAt(t, nil, nil, withAPI(t, fake), e.withPreread())
	ctx := context.Background()
	statuses := []string{"incomplete", "active", "unpaid"}
	perms := permutations(3)
	if len(perms) != 6 {
		t.Fatalf("got %d orders, want 6", len(perms))
	}
	for pi, perm := range perms {
		sub, cus := fmt.Sprintf("sub_tie3_%d", pi), fmt.Sprintf("cus_tie3_%d", pi)
		api := subscriptionObject(t, sub, cus, "past_due")
		if err := fake.PutObject("", api); err != nil {
			t.Fatal(err)
		}
		var recs []event.Record
		for i, st := range statuses {
			recs = append(recs, e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
				ID: fmt.Sprintf("evt_tie3_%d_%d", pi, i), ObjectID: sub, Customer: cus, Created: 1700000000, Status: st})))
		}
		for _, i := range perm {
			resp, err := p.Handle(ctx, batch(message(recs[i], 1)))
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("order %v, event %d: got %v %+v", perm, i, err, resp)
			}
		}
		snap, err := e.reader.Object(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		ent, err := e.reader.Entitlement(ctx, cus)
		if err != nil {
			t.Fatal(err)
		}
		var data struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(snap.Data, &data)
		if data.Status != "past_due" || snap.SettledBy != mirror.SourceAPI || ent.Active || ent.Reason != "past_due" {
			t.Errorf("order %v: status %q settled by %q, entitlement active %v reason %q; want the API's past_due",
				perm, data.Status, snap.SettledBy, ent.Active, ent.Reason)
		}
		for _, r := range recs {
			e.exactlyOnce(t, r.ID)
		}
	}
	// The first event of each order finds nothing to tie with; the two
	// after it each read the object once.
	if got := len(fake.Retrievals()); got != 2*len(perms) || e.apiReads() != got {
		t.Errorf("API reads: %d requests, metric %d; want %d", got, e.apiReads(), 2*len(perms))
	}
}

// TestALaterEventStillWinsOverTheAPIsState: the guard holds for events a
// second apart, whichever arrives first, and reads nothing from the API.
func TestALaterEventStillWinsOverTheAPIsState(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withAPI(t, fake))
	ctx := context.Background()
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		sub, cus := fmt.Sprintf("sub_apart_%d", order[0]), fmt.Sprintf("cus_apart_%d", order[0])
		if err := fake.PutObject("", subscriptionObject(t, sub, cus, "past_due")); err != nil {
			t.Fatal(err)
		}
		recs := []event.Record{
			e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: sub, Customer: cus, Created: 1700000000, Status: "unpaid"})),
			e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: sub, Customer: cus, Created: 1700000001, Status: "active"})),
		}
		for _, i := range order {
			if _, err := p.Handle(ctx, batch(message(recs[i], 1))); err != nil {
				t.Fatal(err)
			}
		}
		snap, err := e.reader.Object(ctx, sub)
		if err != nil {
			t.Fatal(err)
		}
		if snap.LastEventID != recs[1].ID || snap.SettledBy != "" {
			t.Errorf("order %v: snapshot of %s settled by %q; want the later event's own", order, snap.LastEventID, snap.SettledBy)
		}
	}
	if got := len(fake.Retrievals()); got != 0 {
		t.Errorf("API reads: %d, want none", got)
	}

	// A later event arriving after the API settled a tie replaces it.
	sub, cus := "sub_after", "cus_after"
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "past_due")); err != nil {
		t.Fatal(err)
	}
	var recs []event.Record
	for i, st := range []string{"unpaid", "incomplete", "active"} {
		recs = append(recs, e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
			ObjectID: sub, Customer: cus, Created: 1700000000 + int64(i/2), Status: st})))
	}
	for _, r := range recs {
		if _, err := p.Handle(ctx, batch(message(r, 1))); err != nil {
			t.Fatal(err)
		}
	}
	ent, err := e.reader.Entitlement(ctx, cus)
	if err != nil {
		t.Fatal(err)
	}
	if snap, _ := e.reader.Object(ctx, sub); snap.LastEventID != recs[2].ID || !ent.Active {
		t.Errorf("after a settled tie: snapshot of %s, active %v; want the later event's, active", snap.LastEventID, ent.Active)
	}
}

// TestAPIDownFailsTheTieRetryably: the API down or rate-limited is a
// failure of the event, retried with backoff, never a guess; the retry
// settles it.
func TestAPIDownFailsTheTieRetryably(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withAPI(t, fake))
	ctx := context.Background()
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		sub, cus := fmt.Sprintf("sub_down_%d", status), fmt.Sprintf("cus_down_%d", status)
		if err := fake.PutObject("", subscriptionObject(t, sub, cus, "active")); err != nil {
			t.Fatal(err)
		}
		first := e.store(
			t,
			build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: sub, Customer: cus, Created: 1700000000, Status: "active"}),
		)
		tie := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: sub, Customer: cus, Created: 1700000000, Status: "unpaid"}))
		if resp, err := p.Handle(ctx, batch(message(first, 1))); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("status %d: the first event: got %v %+v, want it processed", status, err, resp)
		}
		fake.FailNext(1, status)
		resp, err := p.Handle(ctx, batch(message(tie, 1)))
		if err != nil || len(resp.BatchItemFailures) != 1 {
			t.Fatalf("status %d: got %v %+v, want the message retried", status, err, resp)
		}
		if got := e.record(t, tie.ID); got.Status != event.StatusFailed || e.effect.callsOf(tie.ID) != 1 || e.commits(t, tie.ID) != 0 {
			t.Errorf("status %d: record %s, effect committed %d; want failed, nothing committed", status, got.Status, e.commits(t, tie.ID))
		}
		if snap, _ := e.reader.Object(ctx, sub); snap.LastEventID != first.ID {
			t.Errorf("status %d: snapshot of %s, want the first event's still (no guess)", status, snap.LastEventID)
		}
		resp, err = p.Handle(ctx, batch(message(tie, 2)))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("status %d, retry: got %v %+v", status, err, resp)
		}
		snap, _ := e.reader.Object(ctx, sub)
		ent, _ := e.reader.Entitlement(ctx, cus)
		if snap.SettledBy != mirror.SourceAPI || !ent.Active {
			t.Errorf("status %d, retry: settled by %q, active %v; want the API's active", status, snap.SettledBy, ent.Active)
		}
		// Effects run on each attempt and commit once.
		if got := e.commits(t, tie.ID); got != 1 {
			t.Errorf("status %d: the tie's effect committed %d times, want once", status, got)
		}
	}
}

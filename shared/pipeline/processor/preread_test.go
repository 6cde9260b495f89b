package processor_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// withPreread wires the processor's pre-read as processorboot does: the
// mirror's standing read before the effects run, behind the mirror's own
// guard. It goes after withAPI.
func (e *env) withPreread() func(*processor.Config) {
	return func(cfg *processor.Config) {
		cfg.Preread = mirror.Prereader{Reader: e.reader, TiesByAPI: cfg.Mirror.(*mirror.Mirror).TiesByAPI}
	}
}

// TestATieWhoseAPIReadFailsCallsNoEffectUntilSettled: an event of the
// same second as the one its object holds is settled from the API before
// any effect runs. The API failing fails the event with no effect called;
// its retry settles it and calls the effect once: one outside call in all.
func TestATieWhoseAPIReadFailsCallsNoEffectUntilSettled(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withAPI(t, fake), e.withPreread())
	ctx := context.Background()
	if err := fake.PutObject("", subscriptionObject(t, "sub_tie8", "cus_tie8", "active")); err != nil {
		t.Fatal(err)
	}
	first := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_tie8", Customer: "cus_tie8", Created: 1700000000, Status: "active"}))
	tie := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_tie8", Customer: "cus_tie8", Created: 1700000000, Status: "unpaid"}))
	if _, err := p.Handle(ctx, batch(message(first, 1))); err != nil {
		t.Fatal(err)
	}
	fake.FailNext(1, http.StatusServiceUnavailable)
	if resp, err := p.Handle(ctx, batch(message(tie, 1))); err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("got %v %+v, want the message retried", err, resp)
	}
	if n := e.effect.callsOf(tie.ID); n != 0 {
		t.Errorf("the failed attempt called the effect %d times, want none before the tie is settled", n)
	}
	if resp, err := p.Handle(ctx, batch(message(tie, 2))); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("retry: got %v %+v", err, resp)
	}
	if calls, commits := e.effect.callsOf(tie.ID), e.commits(t, tie.ID); calls != 1 || commits != 1 {
		t.Errorf("the tie's effect: %d calls, %d commits in all; want one of each", calls, commits)
	}
	if snap, _ := e.reader.Object(ctx, "sub_tie8"); snap.SettledBy != mirror.SourceAPI {
		t.Errorf("settled by %q, want the API's state", snap.SettledBy)
	}
}

// TestAnAuditRepairAndItsEventRunTheEffectsOnce: the audit (with the
// team's effects) repairs a subscription to the state an event made,
// before or after that event is processed; the change's effects run
// once in all, committed once.
func TestAnAuditRepairAndItsEventRunTheEffectsOnce(t *testing.T) {
	const created, asked = 1700000500, 1700000900
	for _, auditFirst := range []bool{true, false} {
		name := "event first"
		if auditFirst {
			name = "audit first"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			fake := stripefake.New()
			defer fake.Close()
			p := e.processorAt(t, nil, nil, e.withPreread())
			ctx := context.Background()
			api, err := stripeapi.New(stripeapi.Config{Key: "rk_test_claim", BaseURL: fake.URL, MaxNetworkRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			var reg effect.Registry
			reg.On(effect.Func{HandlerName: "count", Fn: e.effect.handle}, "*")
			a := &audit.Auditor{
				API: api, Mirror: &mirror.Mirror{Table: e.stack.Table("MirrorTable")}, Reader: e.reader, DB: e.stack.DynamoDB,
				Effects: &reg, Now: func() time.Time { return time.Unix(asked, 0) },
			}
			before := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_once", Customer: "cus_once", Created: created - 100, Status: "active"}))
			if _, err := p.Handle(ctx, batch(message(before, 1))); err != nil {
				t.Fatal(err)
			}
			// The change: past_due at created, which Stripe's API serves.
			body := build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_once", Customer: "cus_once", Created: created, Status: "past_due"})
			change := e.store(t, body)
			var ev struct {
				Data struct {
					Object json.RawMessage `json:"object"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Fatal(err)
			}
			if err := fake.PutObject("", ev.Data.Object); err != nil {
				t.Fatal(err)
			}
			runAudit := func() audit.Result {
				res, err := a.Run(ctx, audit.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			var res audit.Result
			if auditFirst {
				res = runAudit()
			}
			if _, err := p.Handle(ctx, batch(message(change, 1))); err != nil {
				t.Fatal(err)
			}
			if !auditFirst {
				res = runAudit()
			}
			calls := 0
			for _, id := range e.effect.order["sub_once"] {
				if id != before.ID {
					calls++
				}
			}
			commits := e.commits(t, change.ID)
			if auditFirst {
				commits += e.commits(t, e.effect.order["sub_once"][1])
			}
			if calls != 1 || commits != 1 {
				t.Errorf("the change's effects: %d calls (%v), %d commits; want one of each (audit repairs %+v)", calls, e.effect.order["sub_once"], commits, res.Repairs)
			}
			if r := e.record(t, change.ID); r.Status != event.StatusProcessed {
				t.Errorf("the event: %s, want processed", r.Status)
			}
			if auditFirst {
				if r := e.record(t, change.ID); r.Outcome != outcome.Superseded {
					t.Errorf("the event after the audit: %s, want superseded", r.Outcome)
				}
			}
		})
	}
}

// hookedPrereader runs after, once, between the pre-read and the effects.
type hookedPrereader struct {
	processor.Prereader
	after func()
}

func (h *hookedPrereader) Standing(ctx context.Context, r event.Record, payload []byte) (mirror.Standing, error) {
	st, err := h.Prereader.Standing(ctx, r, payload)
	if f := h.after; f != nil {
		h.after = nil
		f()
	}
	return st, err
}

// TestAClaimAfterThePrereadDropsTheEventsEffects: the audit repairs the
// subscription to the event's state, with its effects, after the event's
// pre-read found it winning. The event's snapshot write then fails on the
// repair's, its commit checks the claim, and its effects are dropped: one
// commit of the change's effects, the audit's.
func TestAClaimAfterThePrereadDropsTheEventsEffects(t *testing.T) {
	const created, asked = 1700000500, 1700000900
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	api, err := stripeapi.New(stripeapi.Config{Key: "rk_test_claim", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	var reg effect.Registry
	reg.On(effect.Func{HandlerName: "count", Fn: e.effect.handle}, "*")
	a := &audit.Auditor{
		API: api, Mirror: &mirror.Mirror{Table: e.stack.Table("MirrorTable")}, Reader: e.reader, DB: e.stack.DynamoDB,
		Effects: &reg, Now: func() time.Time { return time.Unix(asked, 0) },
	}
	ctx := context.Background()
	hook := &hookedPrereader{Prereader: mirror.Prereader{Reader: e.reader}, after: func() {
		if _, err := a.Run(ctx, audit.Options{}); err != nil {
			t.Error(err)
		}
	}}
	p := e.processorAt(t, nil, nil, func(c *processor.Config) { c.Preread = hook })
	body := build(t, "customer.subscription.updated", stripefixture.Options{ObjectID: "sub_late", Customer: "cus_late", Created: created, Status: "past_due"})
	change := e.store(t, body)
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	if err := fake.PutObject("", ev.Data.Object); err != nil {
		t.Fatal(err)
	}
	if resp, err := p.Handle(ctx, batch(message(change, 1))); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("got %v %+v", err, resp)
	}
	order := e.effect.order["sub_late"]
	commits := 0
	for _, id := range order {
		commits += e.commits(t, id)
	}
	if commits != 1 || e.commits(t, change.ID) != 0 {
		t.Errorf("effects ran for %v, committed %d times (the event's %d); want the audit's commit alone", order, commits, e.commits(t, change.ID))
	}
	if r := e.record(t, change.ID); r.Status != event.StatusProcessed || r.Outcome != outcome.Superseded {
		t.Errorf("the event: %s %s, want processed, superseded", r.Status, r.Outcome)
	}
}

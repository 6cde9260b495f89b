// Package drills proves the pipeline's guarantees by breaking it: each drill
// runs through the local stack's real HTTP gateway and SQS poller against the
// AWS emulator, injects its fault from outside the code under test (a
// fault-injecting proxy in front of the emulator, a failing or hanging
// downstream application, process kills), and asserts on the stored records,
// the mirror and a counting downstream.
package drills

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// build makes a Stripe event of type typ from Stripe's sample objects.
// Each event is of an object of its own (the sample's id with a random
// suffix) unless o names one, as distinct payments are: events of one
// object in the same second are a tie the processor settles by reading
// the object from Stripe's API, which the drills that send one don't
// configure (the drill of history does, with a stand-in).
func build(t *testing.T, typ string, o stripefixture.Options) ([]byte, event.Envelope) {
	t.Helper()
	ownCustomer := strings.HasPrefix(typ, "customer.") && !strings.HasPrefix(typ, "customer.subscription.") && o.Customer != ""
	if o.ObjectID == "" && !ownCustomer {
		sample, err := stripefixture.Build(typ, o)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			Data struct {
				Object struct {
					ID string `json:"id"`
				} `json:"object"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sample, &head); err != nil || head.Data.Object.ID == "" {
			t.Fatalf("the %s sample has no data.object.id (%v)", typ, err)
		}
		o.ObjectID = fmt.Sprintf("%s_%08x", head.Data.Object.ID, rand.Uint32())
	}
	body, err := stripefixture.Build(typ, o)
	if err != nil {
		t.Fatal(err)
	}
	env, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	return body, env
}

// Drill 1: the same event delivered twice -> one effect.
func TestDrill1DuplicateDelivery(t *testing.T) {
	p := newPipeline(t, nil, nil)
	body, env := build(t, "invoice.paid", stripefixture.Options{Customer: "cus_d1"})
	if s := p.deliver(body); s != 200 {
		t.Fatalf("first delivery: %d", s)
	}
	p.waitStatus(env.ID, event.StatusProcessed, 30*time.Second)
	if s := p.deliver(body); s != 200 {
		t.Fatalf("second delivery: %d", s)
	}
	time.Sleep(2 * time.Second) // room for a wrongly enqueued second effect
	if calls, ok := p.down.counts(env.ID); calls != 1 || ok != 1 {
		t.Errorf("downstream: %d calls, %d applied; want exactly 1 and 1", calls, ok)
	}
	if r, _ := p.record(env.ID); r.Attempts != 1 {
		t.Errorf("attempts: got %d, want 1", r.Attempts)
	}
}

// Drill 2: events delivered out of order -> the final state of the
// chronological order.
func TestDrill2OutOfOrder(t *testing.T) {
	p := newPipeline(t, nil, nil)
	base := time.Now().Unix() - 100
	sub, cus := "sub_d2_"+stripefixture.NewID(""), "cus_d2_"+stripefixture.NewID("")
	lifecycle := []struct {
		typ, status string
	}{
		{"customer.subscription.created", "trialing"},
		{"customer.subscription.updated", "active"},
		{"customer.subscription.updated", "past_due"},
		{"customer.subscription.updated", "active"},
	}
	var bodies [][]byte
	var ids []string
	for i, s := range lifecycle {
		b, env := build(t, s.typ, stripefixture.Options{ObjectID: sub, Customer: cus, Created: base + int64(i), Status: s.status})
		bodies = append(bodies, b)
		ids = append(ids, env.ID)
	}
	// Newest first: the worst order.
	for i := len(bodies) - 1; i >= 0; i-- {
		if s := p.deliver(bodies[i]); s != 200 {
			t.Fatalf("delivery %d: %d", i, s)
		}
	}
	for _, id := range ids {
		p.waitStatus(id, event.StatusProcessed, 30*time.Second)
	}
	snap, err := p.mirror.Object(t.Context(), sub)
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastEventID != ids[3] {
		t.Errorf("mirror: last event %s, want the chronologically last %s", snap.LastEventID, ids[3])
	}
	ent, err := p.mirror.Entitlement(t.Context(), cus)
	if err != nil {
		t.Fatal(err)
	}
	if !ent.Active {
		t.Errorf("entitlement: got %+v, want active (the last state)", ent)
	}
	superseded := 0
	for _, id := range ids[:3] {
		if r, _ := p.record(id); r.Outcome == outcome.Superseded {
			superseded++
		}
	}
	if superseded == 0 {
		t.Error("no older event was marked superseded although they arrived after the newest")
	}
}

// Drill 3: a worker that dies after accepting (claimed, then the process is
// killed) -> the event is processed later.
func TestDrill3WorkerDiesAfterClaim(t *testing.T) {
	p := newPipeline(t, nil, killOverrides)
	body, env := build(t, "invoice.paid", stripefixture.Options{})
	entered, aborted, release := p.down.hangOn(env.ID)
	if s := p.deliver(body); s != 200 {
		t.Fatalf("delivery: %d", s)
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the processor never reached the effect")
	}
	if r, _ := p.record(env.ID); r.Status != event.StatusProcessing {
		t.Fatalf("status while the effect runs: %s, want processing", r.Status)
	}
	p.stack.Kill()
	// The dead worker's call must end unanswered before the application
	// recovers, or the application would have done its work for it.
	select {
	case <-aborted:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed worker's call to the application never ended")
	}
	release()
	p.stack.Restart(t)
	r := p.waitStatus(env.ID, event.StatusProcessed, 60*time.Second)
	if r.Attempts < 2 {
		t.Errorf("attempts: got %d, want at least 2 (the dead worker's and the one that finished)", r.Attempts)
	}
	if _, ok := p.down.counts(env.ID); ok != 1 {
		t.Errorf("downstream applied %d times, want 1", ok)
	}
}

// Drill 4: the queue unavailable at receipt -> a non-2xx answer, nothing
// falsely acknowledged, and the delivery's retry succeeds.
func TestDrill4QueueUnavailable(t *testing.T) {
	p := newPipeline(t, nil, nil)
	body, env := build(t, "customer.created", stripefixture.Options{})
	p.proxy.Set(faultproxy.Rule{Service: "sqs", Operation: "SendMessage", Action: faultproxy.Error})
	if s := p.deliver(body); s < 500 {
		t.Fatalf("with SQS failing: got %d, want 5xx", s)
	}
	r, err := p.record(env.ID)
	if err != nil || r.Status != event.StatusReceived {
		t.Fatalf("record: %v %v; want it kept as received", r.Status, err)
	}
	p.proxy.Clear()
	if s := p.deliver(body); s != 200 {
		t.Fatalf("the provider's retry: got %d, want 200", s)
	}
	p.waitStatus(env.ID, event.StatusProcessed, 30*time.Second)
	if _, ok := p.down.counts(env.ID); ok != 1 {
		t.Errorf("downstream applied %d times, want 1", ok)
	}
}

// Drill 5: an invalid signature -> nothing stored, nothing processed.
func TestDrill5InvalidSignature(t *testing.T) {
	p := newPipeline(t, nil, nil)
	body, env := build(t, "invoice.paid", stripefixture.Options{})
	if s := p.deliverSigned(body, provider.SignStripe(body, "whsec_forged", time.Now())); s != 400 {
		t.Fatalf("forged signature: got %d, want 400", s)
	}
	if s := p.deliverSigned(body, provider.SignStripe(body, "whsec_local_development_only", time.Now().Add(-time.Hour))); s != 400 {
		t.Fatalf("replayed old signature: got %d, want 400", s)
	}
	time.Sleep(time.Second)
	if _, err := p.record(env.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("record: got %v, want none", err)
	}
	if calls, _ := p.down.counts(env.ID); calls != 0 {
		t.Errorf("downstream called %d times, want 0", calls)
	}
}

// Drill 6: a downstream effect answering 500 temporarily -> retried then
// processed; permanently -> DLQ, record dead_lettered, visible with inboxctl.
func TestDrill6DownstreamFailures(t *testing.T) {
	p := newPipeline(t, nil, nil)
	tmpBody, tmp := build(t, "invoice.paid", stripefixture.Options{})
	permBody, perm := build(t, "invoice.payment_failed", stripefixture.Options{})
	p.down.failTimes(tmp.ID, 2)
	p.down.failTimes(perm.ID, -1)
	if s := p.deliver(tmpBody); s != 200 {
		t.Fatal(s)
	}
	if s := p.deliver(permBody); s != 200 {
		t.Fatal(s)
	}
	r := p.waitStatus(tmp.ID, event.StatusProcessed, 60*time.Second)
	if r.Attempts != 3 {
		t.Errorf("temporary failure: attempts %d, want 3", r.Attempts)
	}
	if calls, ok := p.down.counts(tmp.ID); calls != 3 || ok != 1 {
		t.Errorf("temporary failure: downstream %d calls, %d applied; want 3 and 1", calls, ok)
	}

	d := p.waitStatus(perm.ID, event.StatusDeadLettered, 90*time.Second)
	if d.Attempts != 3 || d.LastError == "" {
		t.Errorf("dead-lettered record: attempts %d, last error %q; want 3 and the cause", d.Attempts, d.LastError)
	}
	testenvEventuallyDLQ(t, p)
	out, err := p.inboxctl("event", perm.ID, "--json")
	if err != nil {
		t.Fatalf("inboxctl event: %v\n%s", err, out)
	}
	var shown struct {
		Status    string `json:"status"`
		LastError string `json:"last_error"`
	}
	decodeJSON(t, out, &shown)
	if shown.Status != "dead_lettered" || shown.LastError == "" {
		t.Errorf("inboxctl shows %+v, want dead_lettered with the last error", shown)
	}
}

func testenvEventuallyDLQ(t *testing.T, p *pipeline) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for p.queueDepth("DeadLetterQueue") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("DLQ holds %d messages, want 1", p.queueDepth("DeadLetterQueue"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Drill 7: an event never delivered -> the reconciler finds and processes it.
func TestDrill7NeverDelivered(t *testing.T) {
	fake := stripefake.New()
	defer fake.Close()
	created := time.Now().Add(-10 * time.Minute).Unix()
	lostBody, lost := build(t, "customer.subscription.created", stripefixture.Options{Customer: "cus_d7", Created: created})
	seenBody, seen := build(t, "invoice.paid", stripefixture.Options{Customer: "cus_d7", Created: created + 1})
	if err := fake.Add(lostBody, seenBody); err != nil {
		t.Fatal(err)
	}
	p := newPipeline(t, map[string]string{
		"STRIPE_API_BASE": fake.URL, "STRIPE_API_KEY": "sk_test_drill7",
		// Events younger than the settle delay are not yet called missing.
		"RECONCILE_SETTLE": "1m",
	}, nil, "-reconcile-every", "1s")
	if s := p.deliver(seenBody); s != 200 {
		t.Fatalf("the delivered event: %d", s)
	}
	r := p.waitStatus(lost.ID, event.StatusProcessed, 60*time.Second)
	if r.Source != event.SourceReconciler {
		t.Errorf("source: got %s, want reconciler", r.Source)
	}
	if s, _ := p.record(seen.ID); s.Source != event.SourceWebhook {
		t.Errorf("the delivered event's source: got %s, want webhook (never ingested twice)", s.Source)
	}
	if _, ok := p.down.counts(lost.ID); ok != 1 {
		t.Errorf("downstream applied the lost event %d times, want 1", ok)
	}
	ent, err := p.mirror.Entitlement(t.Context(), "cus_d7")
	if err != nil || !ent.Active {
		t.Errorf("entitlement after the repair: %+v, %v; want active", ent, err)
	}
	if len(p.stack.Lines(map[string]string{"msg": "reconcile run"})) == 0 {
		t.Error("no reconcile run was logged")
	}
}

// Concurrent identical deliveries -> one record, every answer 2xx, one effect.
func TestConcurrentIdenticalDeliveries(t *testing.T) {
	p := newPipeline(t, nil, nil)
	body, env := build(t, "checkout.session.completed", stripefixture.Options{})
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = p.deliver(body)
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("delivery %d: %d", i, s)
		}
	}
	p.waitStatus(env.ID, event.StatusProcessed, 30*time.Second)
	time.Sleep(2 * time.Second)
	if _, ok := p.down.counts(env.ID); ok != 1 {
		t.Errorf("downstream applied %d times, want 1", ok)
	}
}

// DynamoDB throttling at receipt -> 5xx, then recovery.
func TestThrottlingAnswered5xxAndRecovered(t *testing.T) {
	p := newPipeline(t, nil, nil)
	body, env := build(t, "product.created", stripefixture.Options{})
	p.proxy.Set(faultproxy.Rule{Service: "dynamodb", Operation: "PutItem", Action: faultproxy.Throttle})
	if s := p.deliver(body); s != 503 {
		t.Fatalf("throttled: got %d, want 503", s)
	}
	if _, err := p.record(env.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record while throttled: %v, want none", err)
	}
	p.proxy.Clear()
	if s := p.deliver(body); s != 200 {
		t.Fatalf("after throttling: got %d, want 200", s)
	}
	p.waitStatus(env.ID, event.StatusProcessed, 30*time.Second)
}

// A random SIGKILL of the local stack at points across the pipeline,
// restarted, with nothing lost: every delivery the provider would retry is
// retried until it gets a 2xx, and every event ends processed, applied once.
func TestRandomKillsLoseNothing(t *testing.T) {
	p := newPipeline(t, nil, killOverrides)
	const n = 30
	type ev struct {
		body []byte
		id   string
	}
	var evs []ev
	for range n {
		b, env := build(t, "invoice.paid", stripefixture.Options{})
		evs = append(evs, ev{b, env.ID})
	}
	// Faults in flight too: some answers are lost after the write happened.
	p.proxy.Set(faultproxy.Rule{Service: "dynamodb", Operation: "TransactWriteItems", Action: faultproxy.DropAfter, Probability: 0.1})
	rng := rand.New(rand.NewPCG(1, 2))
	for i, e := range evs {
		if i > 0 && i%10 == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
			p.stack.Kill()
			p.stack.Restart(t)
		}
		// The provider retries a delivery until it gets a 2xx.
		for attempt := 0; ; attempt++ {
			s, _ := p.tryDeliver(e.body, provider.SignStripe(e.body, devstack.DefaultWebhookSecret, time.Now()))
			if s == 200 {
				break
			}
			if attempt > 20 {
				t.Fatalf("event %s never accepted", e.id)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	p.stack.Kill()
	p.stack.Restart(t)
	p.proxy.Clear()
	for _, e := range evs {
		p.waitStatus(e.id, event.StatusProcessed, 90*time.Second)
		calls, ok := p.down.counts(e.id)
		if ok < 1 {
			t.Errorf("%s: never applied downstream", e.id)
		}
		// A kill between the application's 2xx and the commit repeats the
		// call with the same key; the application applies a key once.
		if calls > 1 {
			t.Logf("%s: %d calls with one idempotency key (absorbed by the key)", e.id, calls)
		}
	}
}

// The retry budget, scaled down: a first retry after 2 s, each wait
// doubled up to 4 s, dead-lettered on the 6th receive: 2+4+4+4+4 = 18 s
// in all, where the template's defaults (60 s, 7200 s, 10 receives) make
// 6 h 7 min. The drill's rule is the deployment's; only the time is
// scaled.
var budgetEnv = map[string]string{"RETRY_BACKOFF_BASE": "2s", "RETRY_BACKOFF_MAX": "4s"}

var budgetParams = map[string]string{
	"ProcessorTimeout":       "5",
	"QueueVisibilityTimeout": "8",
	"MaxReceiveCount":        "6",
}

// Drill: a downstream outage shorter than the retry budget dead-letters
// nothing; a longer one dead-letters exactly the events whose budget ran
// out during it, and none of those delivered late enough to outlive it.
func TestDrillRetryBudget(t *testing.T) {
	p := newPipeline(t, budgetEnv, budgetParams)
	if budget := processor.RetryBudget(2*time.Second, 4*time.Second, 6); budget != 18*time.Second {
		t.Fatalf("the drill's budget: got %v, want 18s", budget)
	}
	deliverAll := func(n int, customer string) []string {
		t.Helper()
		var ids []string
		for range n {
			body, env := build(t, "invoice.paid", stripefixture.Options{Customer: customer})
			if s := p.deliver(body); s != 200 {
				t.Fatalf("delivery: %d", s)
			}
			ids = append(ids, env.ID)
		}
		return ids
	}

	// An outage of 10 s, shorter than the 18 s budget: every event is
	// retried past it and processed, nothing is dead-lettered.
	p.down.outage(10 * time.Second)
	short := deliverAll(5, "cus_budget_short")
	for _, id := range short {
		r := p.waitStatus(id, event.StatusProcessed, 60*time.Second)
		if r.Attempts < 2 {
			t.Errorf("%s: attempts %d, want the outage to have cost retries", id, r.Attempts)
		}
		if _, ok := p.down.counts(id); ok != 1 {
			t.Errorf("%s: applied %d times downstream, want 1", id, ok)
		}
	}
	if n := p.queueDepth("DeadLetterQueue"); n != 0 {
		t.Fatalf("after the short outage: %d messages in the DLQ, want 0", n)
	}

	// An outage of 40 s, longer than the budget. Events delivered as it
	// starts run out of retries 18 s in: dead-lettered, all of them, while
	// it lasts. Events delivered 10 s before it ends still have budget
	// when it does (retries at +2, +6, +10, +14 s): processed.
	ends := p.down.outage(40 * time.Second)
	doomed := deliverAll(4, "cus_budget_doomed")
	time.Sleep(time.Until(ends.Add(-10 * time.Second)))
	late := deliverAll(4, "cus_budget_late")
	// On failure, the stack's lines about one event of each kind.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, l := range strings.Split(p.stack.Output(), "\n") {
			if strings.Contains(l, doomed[0]) || (len(late) > 0 && strings.Contains(l, late[0])) {
				t.Log(l)
			}
		}
	})
	for _, id := range doomed {
		r := p.waitStatus(id, event.StatusDeadLettered, 60*time.Second)
		if r.Attempts != 6 || r.LastError == "" {
			t.Errorf("%s: attempts %d, last error %q; want 6 and the cause", id, r.Attempts, r.LastError)
		}
		if _, ok := p.down.counts(id); ok != 0 {
			t.Errorf("%s: applied %d times downstream, want 0", id, ok)
		}
	}
	for _, id := range late {
		p.waitStatus(id, event.StatusProcessed, 60*time.Second)
		if _, ok := p.down.counts(id); ok != 1 {
			t.Errorf("%s: applied %d times downstream, want 1", id, ok)
		}
	}
	// The DLQ holds exactly the doomed events' messages.
	testenv.Eventually(t, 30*time.Second, "the doomed events' messages in the DLQ", func() bool {
		return p.queueDepth("DeadLetterQueue") == len(doomed)
	})
	for _, id := range append(append([]string(nil), short...), late...) {
		if r, _ := p.record(id); r.Status != event.StatusProcessed {
			t.Errorf("%s: %s, want processed", id, r.Status)
		}
	}
}

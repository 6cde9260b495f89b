package processor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

func TestDuplicateDeliveryHasOneEffect(t *testing.T) {
	e := newEnv(t, nil)
	p := e.processor(t, nil)
	body := build(t, "invoice.paid", stripefixture.Options{Customer: "cus_dup"})

	envl, got := e.ingest(t, body)
	if got != outcome.Stored {
		t.Fatalf("first delivery: got %s, want stored", got)
	}
	// Stripe delivers again before the event is processed (the receiver
	// enqueues it again), and SQS delivers one of the messages twice.
	if _, got := e.ingest(t, body); got != outcome.Requeued {
		t.Fatalf("second delivery: got %s, want requeued", got)
	}
	r := e.record(t, envl.ID)
	if err := (&queue.Queue{Client: e.stack.SQS, URL: e.queue}).Send(context.Background(), event.PointerTo(r)); err != nil {
		t.Fatal(err)
	}

	e.drain(t, p)
	e.exactlyOnce(t, envl.ID)
	r = e.record(t, envl.ID)
	if r.Status != event.StatusProcessed || r.Outcome != outcome.Applied || r.Attempts != 1 {
		t.Errorf("record: %s %s attempts %d; want processed, applied, 1", r.Status, r.Outcome, r.Attempts)
	}
	if n := len(e.logs.lines(map[string]string{"msg": "duplicate message", "event_id": envl.ID})); n != 2 {
		t.Errorf("duplicate messages logged: got %d, want 2", n)
	}

	// A delivery after processing is acknowledged by the receiver and never
	// reaches the queue.
	if _, got := e.ingest(t, body); got != outcome.Duplicate {
		t.Errorf("delivery after processing: got %s, want duplicate", got)
	}
	if msgs := e.receive(t, e.queue); len(msgs) != 0 {
		t.Errorf("queue after a processed duplicate: %d messages, want none", len(msgs))
	}
	e.exactlyOnce(t, envl.ID)
}

// lifecycle is four events of one subscription, in chronological order.
type lifecycle struct {
	name   string
	events []lifecycleEvent
	// want of the final entitlement
	wantActive bool
	wantReason string
}

type lifecycleEvent struct {
	eventType string
	status    string
	set       map[string]any
}

var lifecycles = []lifecycle{
	{
		name: "trial, active, past due, canceled",
		events: []lifecycleEvent{
			{"customer.subscription.created", "trialing", map[string]any{"trial_end": 1701000000, "current_period_end": 1701000000}},
			{"customer.subscription.updated", "active", map[string]any{"trial_end": nil, "current_period_end": 1703600000}},
			{"customer.subscription.updated", "past_due", map[string]any{"current_period_end": 1703600000}},
			{"customer.subscription.deleted", "canceled", map[string]any{"current_period_end": 1703600000, "ended_at": 1702000000}},
		},
		wantReason: "canceled",
	},
	{
		name: "trial, active, paused, resumed",
		events: []lifecycleEvent{
			{"customer.subscription.created", "trialing", map[string]any{"trial_end": 1701000000, "current_period_end": 1701000000}},
			{"customer.subscription.updated", "active", map[string]any{"trial_end": nil, "current_period_end": 1703600000}},
			{"customer.subscription.paused", "paused", map[string]any{"current_period_end": 1703600000}},
			{"customer.subscription.resumed", "active", map[string]any{"current_period_end": 1706300000}},
		},
		wantActive: true,
	},
}

func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := len(p); i >= 0; i-- { // the identity first
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// TestEveryOrderingEndsInTheChronologicalState delivers the events of a
// subscription's lifecycle in all 24 orders, each order to its own
// subscription and customer, and compares the final snapshot and
// entitlement with those of chronological order.
func TestEveryOrderingEndsInTheChronologicalState(t *testing.T) {
	ctx := context.Background()
	perms := permutations(4)
	if len(perms) != 24 || fmt.Sprint(perms[0]) != "[0 1 2 3]" {
		t.Fatalf("got %d orders starting with %v, want 24 starting with the chronological one", len(perms), perms[0])
	}
	for li, lc := range lifecycles {
		t.Run(lc.name, func(t *testing.T) {
			// Ids differ only by tag, which is normalised away below.
			tag := func(pi int) string { return fmt.Sprintf("L%dP%02d", li, pi) }
			// moto copies every table a transaction touches, so its cost
			// grows with the table: a fresh stack per six orders keeps the
			// tables small and the test fast.
			envs := make([]*env, len(perms))
			procs := make([]*processor.Processor, len(perms))
			recs := make([][]event.Record, len(perms))
			for pi := range perms {
				if pi%6 == 0 {
					envs[pi] = newEnv(t, nil)
					// As deployed with effects: the object's standing is
					// read before they run, and a superseded event's
					// commit leaves the snapshot alone.
					procs[pi] = envs[pi].processorAt(t, nil, nil, envs[pi].withPreread())
				} else {
					envs[pi], procs[pi] = envs[pi-1], procs[pi-1]
				}
				e := envs[pi]
				for i, le := range lc.events {
					recs[pi] = append(recs[pi], e.store(t, build(t, le.eventType, stripefixture.Options{
						ID: fmt.Sprintf("evt_%s_%d", tag(pi), i), ObjectID: "sub_" + tag(pi), Customer: "cus_" + tag(pi),
						Created: 1700000000 + int64(i)*3600, Status: le.status, Set: le.set,
					})))
				}
			}
			// Each event is its own delivery, in the order's sequence. The
			// orders touch different objects, so they run side by side,
			// which only saves time.
			sem := make(chan struct{}, 4)
			var wg sync.WaitGroup
			for pi, perm := range perms {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					for _, i := range perm {
						resp, err := procs[pi].Handle(ctx, batch(message(recs[pi][i], 1)))
						if err != nil || len(resp.BatchItemFailures) != 0 {
							t.Errorf("order %v, event %d: got %v %+v", perm, i, err, resp)
						}
					}
				}()
			}
			wg.Wait()

			var wantSnap, wantEnt string
			for pi, perm := range perms {
				e := envs[pi]
				// Every event is processed and its effect runs once, whatever
				// its outcome. (Reading the records back is checked for the
				// chronological order only: the emulator is slow, and the
				// other tests cover the store's side.)
				for i, r := range recs[pi] {
					if calls := e.effect.callsOf(r.ID); calls != 1 {
						t.Errorf("order %v: effect of event %d ran %d times, want 1", perm, i, calls)
					}
					if pi != 0 {
						continue
					}
					got := e.record(t, r.ID)
					if got.Status != event.StatusProcessed || got.Outcome != outcome.Applied {
						t.Errorf("chronological order: event %d is %s %s, want processed, applied", i, got.Status, got.Outcome)
					}
				}
				snap, err := e.reader.Object(ctx, "sub_"+tag(pi))
				if err != nil {
					t.Fatal(err)
				}
				ent, err := e.reader.Entitlement(ctx, "cus_"+tag(pi))
				if err != nil {
					t.Fatal(err)
				}
				sj, _ := json.Marshal(snap)
				ej, _ := json.Marshal(ent)
				gotSnap, gotEnt := strings.ReplaceAll(string(sj), tag(pi), "TAG"), strings.ReplaceAll(string(ej), tag(pi), "TAG")
				if pi == 0 {
					wantSnap, wantEnt = gotSnap, gotEnt
					last := lc.events[len(lc.events)-1]
					if snap.LastEventID != recs[0][3].ID || snap.Deleted != strings.HasSuffix(last.eventType, ".deleted") {
						t.Errorf("chronological snapshot: last event %s deleted %v; want the last event", snap.LastEventID, snap.Deleted)
					}
					if ent.Active != lc.wantActive || ent.Reason != lc.wantReason {
						t.Errorf("chronological entitlement: active %v reason %q; want %v %q", ent.Active, ent.Reason, lc.wantActive, lc.wantReason)
					}
					continue
				}
				if gotSnap != wantSnap {
					t.Errorf("order %v: snapshot\n got %s\nwant %s", perm, gotSnap, wantSnap)
				}
				if gotEnt != wantEnt {
					t.Errorf("order %v: entitlement\n got %s\nwant %s", perm, gotEnt, wantEnt)
				}
			}
		})
	}
}

func TestEqualCreatedTimesAreBrokenByEventID(t *testing.T) {
	e := newEnv(t, nil)
	p := e.processor(t, nil)
	ctx := context.Background()
	for _, order := range [][]string{{"a", "b"}, {"b", "a"}} {
		tag := order[0] + order[1]
		recs := map[string]event.Record{}
		for id, status := range map[string]string{"a": "past_due", "b": "active"} {
			recs[id] = e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
				ID: "evt_tie_" + tag + "_" + id, ObjectID: "sub_tie_" + tag, Customer: "cus_tie_" + tag, Created: 1700000000, Status: status,
			}))
		}
		for _, id := range order {
			if _, err := p.Handle(ctx, batch(message(recs[id], 1))); err != nil {
				t.Fatal(err)
			}
		}
		snap, err := e.reader.Object(ctx, "sub_tie_"+tag)
		if err != nil {
			t.Fatal(err)
		}
		ent, err := e.reader.Entitlement(ctx, "cus_tie_"+tag)
		if err != nil {
			t.Fatal(err)
		}
		if snap.LastEventID != recs["b"].ID || !ent.Active {
			t.Errorf("order %v: snapshot from %s, entitlement active %v; want the larger id (%s), active", order, snap.LastEventID, ent.Active, recs["b"].ID)
		}
		wantA := outcome.Applied
		if order[0] == "b" {
			wantA = outcome.Superseded
		}
		if got := e.record(t, recs["a"].ID).Outcome; got != wantA {
			t.Errorf("order %v: outcome of the smaller id: got %s, want %s", order, got, wantA)
		}
	}
}

func TestDeletionIsNeverResurrected(t *testing.T) {
	e := newEnv(t, nil)
	p := e.processor(t, nil)
	ctx := context.Background()
	deleted := e.store(t, build(t, "product.deleted", stripefixture.Options{ObjectID: "prod_gone", Created: 1700000100}))
	late := e.store(t, build(t, "product.updated", stripefixture.Options{ObjectID: "prod_gone", Created: 1700000000}))
	// Even an update stamped after the deletion (clock skew, a bug) is kept out.
	later := e.store(t, build(t, "product.updated", stripefixture.Options{ObjectID: "prod_gone", Created: 1700000200}))
	for _, r := range []event.Record{deleted, late, later} {
		if _, err := p.Handle(ctx, batch(message(r, 1))); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := e.reader.Object(ctx, "prod_gone")
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Deleted || snap.LastEventID != deleted.ID {
		t.Errorf("snapshot: deleted %v from %s; want the tombstone of %s", snap.Deleted, snap.LastEventID, deleted.ID)
	}
	for _, r := range []event.Record{late, later} {
		got := e.record(t, r.ID)
		if got.Status != event.StatusProcessed || got.Outcome != outcome.Superseded {
			t.Errorf("update after the deletion: %s %s; want processed, superseded", got.Status, got.Outcome)
		}
		// The event's own effect still happens, once.
		e.exactlyOnce(t, r.ID)
	}
}

func TestWorkerKilledAfterClaimingIsTakenOverAfterItsLease(t *testing.T) {
	e := newEnv(t, nil)
	p := e.processor(t, nil)
	ctx := context.Background()
	envl, _ := e.ingest(t, build(t, "customer.subscription.created", stripefixture.Options{Customer: "cus_killed"}))
	msgs := e.receive(t, e.queue)
	if len(msgs) != 1 {
		t.Fatalf("received %d messages, want 1", len(msgs))
	}
	// The first worker claims, as the processor does, and dies: no commit,
	// no failure recorded, the message not deleted. The lease is long, so
	// that a loaded machine cannot let it run out before the duplicate
	// below is handled; the takeover is then seen through a clock past it,
	// rather than by sleeping.
	const lease = 30 * time.Second
	if _, err := e.events.Claim(ctx, event.ProviderStripe, envl.ID, "killed-worker", time.Now(), time.Now().Add(lease)); err != nil {
		t.Fatal(err)
	}

	// While the lease is live, a duplicate message is acknowledged without
	// effect: the holder's own message comes back if the holder dies.
	dup := message(e.record(t, envl.ID), 1)
	resp, err := p.Handle(ctx, batch(dup))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("duplicate under a live lease: got %v %+v, want acknowledged", err, resp)
	}
	if e.effect.callsOf(envl.ID) != 0 || e.record(t, envl.ID).LeaseOwner != "killed-worker" {
		t.Fatal("a duplicate under a live lease ran the effect or took the lease")
	}

	// The message's visibility timeout ends after the lease (the template
	// keeps it at six function timeouts, the lease at most one): the worker
	// that receives it then finds the lease expired.
	p = e.processorAt(t, nil, func() time.Time { return time.Now().Add(lease + time.Second) })
	e.visible(t, msgs[0])
	if n := e.drain(t, p); n != 1 {
		t.Errorf("invocations to finish: got %d, want 1", n)
	}
	r := e.record(t, envl.ID)
	if r.Status != event.StatusProcessed || r.Attempts != 2 || r.LeaseOwner != "" {
		t.Errorf("record: %s attempts %d owner %q; want processed, 2 attempts, no lease", r.Status, r.Attempts, r.LeaseOwner)
	}
	e.exactlyOnce(t, envl.ID)
}

func TestKilledAfterCommitBeforeDeleteIsANoOp(t *testing.T) {
	e := newEnv(t, nil)
	p := e.processor(t, nil)
	ctx := context.Background()
	envl, _ := e.ingest(t, build(t, "invoice.payment_succeeded", stripefixture.Options{Customer: "cus_commit"}))
	msgs := e.receive(t, e.queue)
	resp, err := p.Handle(ctx, e.lambdaEvent(msgs))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("first receive: %v %+v", err, resp)
	}
	before := e.record(t, envl.ID)
	// The worker dies before the event source mapping deletes the message.
	e.visible(t, msgs[0])
	again := e.receive(t, e.queue)
	if len(again) != 1 || again[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("redelivery: got %d messages %v, want the message on its second receive", len(again), again)
	}
	resp, err = p.Handle(ctx, e.lambdaEvent(again))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v %+v, want acknowledged", err, resp)
	}
	e.settle(t, again, resp)
	after := e.record(t, envl.ID)
	if after.Attempts != before.Attempts || after.Status != event.StatusProcessed || !after.StatusAt.Equal(before.StatusAt) {
		t.Errorf("record after the redelivery: %s attempts %d at %v; want unchanged (%s, %d, %v)",
			after.Status, after.Attempts, after.StatusAt, before.Status, before.Attempts, before.StatusAt)
	}
	e.exactlyOnce(t, envl.ID)
	if msgs := e.receive(t, e.queue); len(msgs) != 0 {
		t.Errorf("queue: %d messages left, want none", len(msgs))
	}
}

func TestTwoWorkersOnTheSameEventsHaveOneEffect(t *testing.T) {
	e := newEnv(t, nil)
	workers := []interface {
		Handle(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	}{e.processor(t, nil), e.processor(t, nil)}
	ctx := context.Background()
	var ids []string
	for round := range 4 {
		var msgs []events.SQSMessage
		for i := range 10 {
			r := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
				ObjectID: fmt.Sprintf("sub_race_%d_%d", round, i), Customer: fmt.Sprintf("cus_race_%d", i),
			}))
			msgs = append(msgs, message(r, 1))
			ids = append(ids, r.ID)
		}
		// Both workers get the same batch at the same moment.
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := w.Handle(ctx, batch(msgs...)); err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
	}
	for _, id := range ids {
		e.exactlyOnce(t, id)
		if r := e.record(t, id); r.Status != event.StatusProcessed || r.Attempts != 1 {
			t.Errorf("%s: %s attempts %d; want processed, 1", id, r.Status, r.Attempts)
		}
	}
}

func TestAlwaysFailingEventEndsInTheDLQAndDeadLettered(t *testing.T) {
	e := newEnv(t, map[string]string{"MaxReceiveCount": "3"})
	if e.maxReceive != 3 {
		t.Fatalf("maxReceiveCount: got %d, want the override, 3", e.maxReceive)
	}
	e.effect.fail = func(event.Record, int) error { return errors.New("provisioning API answered 503") }
	p := e.processor(t, nil)
	envl, _ := e.ingest(t, build(t, "invoice.paid", stripefixture.Options{Customer: "cus_dlq"}))

	if n := e.drain(t, p); n != 3 {
		t.Errorf("invocations: got %d, want maxReceiveCount (3)", n)
	}
	dead := e.receive(t, e.dlq)
	if len(dead) != 1 {
		t.Fatalf("DLQ: got %d messages, want the event's", len(dead))
	}
	ptr, err := queue.Decode(aws.ToString(dead[0].Body))
	if err != nil || ptr.ID != envl.ID {
		t.Errorf("DLQ message: got %+v (%v), want the pointer to %s", ptr, err, envl.ID)
	}
	r := e.record(t, envl.ID)
	if r.Status != event.StatusDeadLettered || r.Attempts != 3 || !strings.Contains(r.LastError, "answered 503") || r.LastErrorAt.IsZero() {
		t.Errorf(
			"record: %s attempts %d last error %q at %v; want dead_lettered, 3, the handler's error, a time",
			r.Status,
			r.Attempts,
			r.LastError,
			r.LastErrorAt,
		)
	}
	if calls, commits := e.effect.callsOf(envl.ID), e.commits(t, envl.ID); calls != 3 || commits != 0 {
		t.Errorf("effect: %d calls, %d commits; want 3 calls and nothing committed", calls, commits)
	}
	retries := e.logs.lines(map[string]string{"msg": "event failed; will retry", "event_id": envl.ID, "error_class": "other"})
	dl := e.logs.lines(map[string]string{"msg": "event dead-lettered after its last allowed receive", "event_id": envl.ID, "receive_count": "3"})
	if len(retries) != 2 || len(dl) != 1 {
		t.Errorf("log lines: %d retries and %d dead-letterings, want 2 and 1", len(retries), len(dl))
	}
}

func TestFailingTwiceThenSucceeding(t *testing.T) {
	e := newEnv(t, map[string]string{"MaxReceiveCount": "3"})
	e.effect.fail = func(_ event.Record, n int) error {
		if n <= 2 {
			return fmt.Errorf("attempt %d: timeout: %w", n, context.DeadlineExceeded)
		}
		return nil
	}
	p := e.processor(t, nil)
	envl, _ := e.ingest(t, build(t, "checkout.session.completed", stripefixture.Options{Customer: "cus_retry"}))
	if n := e.drain(t, p); n != 3 {
		t.Errorf("invocations: got %d, want 3", n)
	}
	r := e.record(t, envl.ID)
	if r.Status != event.StatusProcessed || r.Attempts != 3 || r.Outcome != outcome.Applied {
		t.Errorf("record: %s %s attempts %d; want processed, applied, 3", r.Status, r.Outcome, r.Attempts)
	}
	if !strings.Contains(r.LastError, "attempt 2") {
		t.Errorf("last error: got %q, want the second attempt's, kept for the record", r.LastError)
	}
	if calls, commits := e.effect.callsOf(envl.ID), e.commits(t, envl.ID); calls != 3 || commits != 1 {
		t.Errorf("effect: %d calls, %d commits; want 3 calls, 1 commit", calls, commits)
	}
	// Every attempt hands the effect the same key for its external calls.
	e.effect.mu.Lock()
	keys := e.effect.keys[envl.ID]
	e.effect.mu.Unlock()
	if want := envl.ID + ":count"; fmt.Sprint(keys) != fmt.Sprint([]string{want, want, want}) {
		t.Errorf("idempotency keys: got %v, want %s on each of the 3 attempts", keys, want)
	}
	if n := len(e.logs.lines(map[string]string{"msg": "event failed; will retry", "event_id": envl.ID, "error_class": "timeout"})); n != 2 {
		t.Errorf("retries logged as timeouts: got %d, want 2", n)
	}
	if dead := e.receive(t, e.dlq); len(dead) != 0 {
		t.Errorf("DLQ: %d messages, want none", len(dead))
	}
}

func TestPermanentFailuresAreAcknowledged(t *testing.T) {
	e := newEnv(t, nil)
	e.effect.fail = func(r event.Record, _ int) error {
		if r.Type == "invoice.voided" {
			return &fault.Permanent{Err: errors.New("invoice belongs to no known account")}
		}
		return nil
	}
	p := e.processor(t, nil)
	byEffect, _ := e.ingest(t, build(t, "invoice.voided", stripefixture.Options{Customer: "cus_perm"}))
	// A payload the mirror can never read: data.object without an id.
	byPayload, _ := e.ingest(
		t,
		[]byte(`{"id":"evt_no_object_id","object":"event","type":"invoice.paid","created":1700000000,"data":{"object":{"object":"invoice"}}}`),
	)
	if n := e.drain(t, p); n != 1 {
		t.Errorf("invocations: got %d, want 1 (no retries)", n)
	}
	for _, envl := range []event.Envelope{byEffect, byPayload} {
		r := e.record(t, envl.ID)
		if r.Status != event.StatusFailedPermanent || r.Attempts != 1 || r.LastError == "" {
			t.Errorf("%s: %s attempts %d error %q; want failed_permanent, 1, the error", envl.ID, r.Status, r.Attempts, r.LastError)
		}
		if n := len(e.logs.lines(map[string]string{"msg": "event failed permanently", "event_id": envl.ID, "error_class": "permanent"})); n != 1 {
			t.Errorf("%s: permanent failure logged %d times, want 1", envl.ID, n)
		}
	}
	if dead := e.receive(t, e.dlq); len(dead) != 0 {
		t.Errorf("DLQ: %d messages, want none", len(dead))
	}
}

func TestOneBadRecordNeverFailsTheBatchAndOrderIsKeptPerObject(t *testing.T) {
	e := newEnv(t, nil)
	e.effect.fail = func(r event.Record, _ int) error {
		if r.ObjectID == "in_bad" {
			return errors.New("downstream 500")
		}
		return nil
	}
	p := e.processor(t, nil)
	ctx := context.Background()
	mk := func(eventType, objectID string, created int64) events.SQSMessage {
		return message(e.store(t, build(t, eventType, stripefixture.Options{ObjectID: objectID, Customer: "cus_batch", Created: created})), 1)
	}
	// Arrival order, interleaved across objects and not chronological.
	msgs := []events.SQSMessage{
		mk("customer.subscription.updated", "sub_a", 1700000300),
		mk("invoice.paid", "in_bad", 1700000000),
		mk("customer.subscription.created", "sub_a", 1700000100),
		mk("invoice.created", "in_ok", 1700000000),
		mk("customer.subscription.updated", "sub_a", 1700000200),
		mk("invoice.finalized", "in_ok", 1700000100),
	}
	resp, err := p.Handle(ctx, batch(msgs...))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != msgs[1].MessageId {
		t.Errorf("batchItemFailures: got %+v, want only the bad record's message", resp.BatchItemFailures)
	}
	for i, m := range msgs {
		ptr, _ := queue.Decode(m.Body)
		r := e.record(t, ptr.ID)
		want := event.StatusProcessed
		if i == 1 {
			want = event.StatusFailed
		}
		if r.Status != want {
			t.Errorf("message %d (%s): %s, want %s", i, ptr.ObjectID, r.Status, want)
		}
	}
	for object, idx := range map[string][]int{"sub_a": {0, 2, 4}, "in_ok": {3, 5}} {
		var want []string
		for _, i := range idx {
			ptr, _ := queue.Decode(msgs[i].Body)
			want = append(want, ptr.ID)
		}
		e.effect.mu.Lock()
		got := e.effect.order[object]
		e.effect.mu.Unlock()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("order of %s: got %v, want arrival order %v", object, got, want)
		}
	}
	// Arrival order is not chronological; the guard still ends on the newest.
	snap, err := e.reader.Object(ctx, "sub_a")
	if err != nil {
		t.Fatal(err)
	}
	if ptr, _ := queue.Decode(msgs[0].Body); snap.LastEventID != ptr.ID {
		t.Errorf("sub_a snapshot from %s, want the newest event %s", snap.LastEventID, ptr.ID)
	}
}

// TestAGzipBombFailsItsEventAlone stores an event whose payload inflates
// past store.MaxPayloadBytes (valid JSON, padded with whitespace: a few
// dozen KB gzipped). Processing it fails that event for good, with an error
// naming it and the limit; the other event of the batch is processed.
func TestAGzipBombFailsItsEventAlone(t *testing.T) {
	e := newEnv(t, nil)
	p := e.processor(t, nil)
	ctx := context.Background()
	body := build(t, "invoice.paid", stripefixture.Options{ID: "evt_bomb", Customer: "cus_bomb"})
	padded := append(append([]byte("{"), bytes.Repeat([]byte(" "), 2*store.MaxPayloadBytes)...), body[1:]...)
	bomb := e.store(t, padded)
	fine := e.store(t, build(t, "invoice.paid", stripefixture.Options{ID: "evt_beside_bomb", Customer: "cus_bomb"}))

	msgs := []events.SQSMessage{message(bomb, 1), message(fine, 1)}
	resp, err := p.Handle(ctx, batch(msgs...))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("batchItemFailures: got %+v, want none (retrying cannot fix stored bytes)", resp.BatchItemFailures)
	}
	got, err := e.events.Get(ctx, event.ProviderStripe, "evt_bomb")
	var pe *store.PayloadError
	if errors.As(err, &pe) {
		got, err = pe.Record, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != event.StatusFailedPermanent || !strings.Contains(got.LastError, "evt_bomb") ||
		!strings.Contains(got.LastError, strconv.Itoa(store.MaxPayloadBytes)) {
		t.Errorf("bomb: %s, last error %q; want failed_permanent and an error naming the event and the limit", got.Status, got.LastError)
	}
	if n := len(e.logs.lines(map[string]string{"msg": "event failed permanently", "event_id": "evt_bomb", "error_class": "permanent"})); n != 1 {
		t.Errorf("bomb: permanent failure logged %d times, want 1", n)
	}
	if r := e.record(t, "evt_beside_bomb"); r.Status != event.StatusProcessed {
		t.Errorf("the other event of the batch: %s, want processed", r.Status)
	}
	if n := e.effect.callsOf("evt_bomb"); n != 0 {
		t.Errorf("effects run for the bomb: %d, want 0", n)
	}
}

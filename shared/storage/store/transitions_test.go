package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// The writer's lease owner in the cases below, and another worker's.
const (
	writer = "w-writer"
	other  = "w-other"
)

// startState is a record's state before a write: none, a status, and
// for processing whose lease, live or run out.
type startState struct {
	name    string
	status  event.Status
	owner   string
	expired bool
}

func startStates() []startState {
	out := []startState{{name: "no record", status: event.NoRecord}}
	for _, st := range event.Statuses {
		if st != event.StatusProcessing {
			out = append(out, startState{name: string(st), status: st})
			continue
		}
		for _, owner := range []string{writer, other} {
			for _, expired := range []bool{false, true} {
				out = append(
					out,
					startState{name: fmt.Sprintf("processing, %s's lease, expired %t", owner, expired), status: st, owner: owner, expired: expired},
				)
			}
		}
	}
	return out
}

// reach makes record id be in state s at now, by the store's own writes.
func reach(t *testing.T, ev *store.Events, id string, s startState, now time.Time) {
	t.Helper()
	ctx := context.Background()
	if s.status == event.NoRecord {
		return
	}
	first := event.StatusReceived
	if s.status == event.StatusIgnored {
		first = event.StatusIgnored
	}
	r := record(id, now)
	r.Status = first
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	if first == s.status {
		return
	}
	owner, claimedAt, until := writer, now.Add(-time.Second), now.Add(time.Minute)
	if s.status == event.StatusProcessing {
		owner = s.owner
		if s.expired {
			claimedAt, until = now.Add(-2*time.Minute), now.Add(-time.Minute)
		}
	}
	claimed, err := ev.Claim(ctx, r.Provider, id, owner, claimedAt, until)
	if err != nil {
		t.Fatal(err)
	}
	switch s.status {
	case event.StatusProcessing:
	case event.StatusProcessed:
		err = ev.Complete(ctx, claimed, owner, now, store.Completion{Outcome: outcome.Applied})
	default:
		err = ev.Fail(ctx, claimed, owner, s.status, "boom", now, time.Time{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// writes are the store's conditional writes of a record's status, by the
// name Transitions gives them, each as the pipeline calls it at now.
var writes = []struct {
	name string
	do   func(ev *store.Events, id string, now time.Time) error
}{
	{"Create", func(ev *store.Events, id string, now time.Time) error {
		r := record(id, now)
		_, err := ev.Create(context.Background(), &r)
		return err
	}},
	{"Create", func(ev *store.Events, id string, now time.Time) error {
		r := record(id, now)
		r.Status = event.StatusIgnored
		_, err := ev.Create(context.Background(), &r)
		return err
	}},
	{"TwinWrite", func(ev *store.Events, id string, now time.Time) error {
		thin := record("evtthin_"+id, now)
		_, err := ev.DB.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{ev.TwinWrite(thin, id, "customer.subscription.updated", now)},
		})
		return err
	}},
	{"Claim", func(ev *store.Events, id string, now time.Time) error {
		_, err := ev.Claim(context.Background(), "stripe", id, "w-new", now, now.Add(time.Minute))
		return err
	}},
	{"Complete", func(ev *store.Events, id string, now time.Time) error {
		return ev.Complete(context.Background(), record(id, now), writer, now, store.Completion{Outcome: outcome.Applied})
	}},
	{"Fail", func(ev *store.Events, id string, now time.Time) error {
		return ev.Fail(context.Background(), record(id, now), writer, event.StatusFailed, "boom", now, now.Add(time.Minute))
	}},
	{"Fail", func(ev *store.Events, id string, now time.Time) error {
		return ev.Fail(context.Background(), record(id, now), writer, event.StatusFailedPermanent, "boom", now, time.Time{})
	}},
	{"Fail", func(ev *store.Events, id string, now time.Time) error {
		return ev.Fail(context.Background(), record(id, now), writer, event.StatusDeadLettered, "boom", now, time.Time{})
	}},
	{"Reopen", func(ev *store.Events, id string, now time.Time) error {
		_, err := ev.Reopen(context.Background(), "stripe", id, now)
		return err
	}},
	{"Discard", func(ev *store.Events, id string, now time.Time) error {
		_, err := ev.Discard(context.Background(), "stripe", id, "a test", now)
		return err
	}},
}

// notStatusWrites are the methods of *store.Events that change no
// record's status: reads, writes of a payload alone, and a body's claim
// (an item of its own). A new method must be one of these or a write
// above.
var notStatusWrites = []string{
	"ByCustomer",
	"ByObject",
	"ClaimBody",
	"ErasePayload",
	"Existing",
	"ExistingConsistent",
	"Get",
	"Health",
	"Held",
	"List",
	"Mentioning",
	"Payload",
	"ReadTwinClaim",
	"StorePayload",
	"Stuck",
	// It writes a twin claim, never a record.
	"TwinClaimWrite",
}

// TestEveryConditionalWriteAllowsExactlyTheTableTransitions runs every
// conditional write of a record's status from every state a record can be
// in (none; each status; processing under the writer's lease or another's,
// live or run out) and reads what changed: every change is a transition
// of event.Transitions, made by the write the table names, under the
// condition the table names; and every transition of the table is made by
// some write. A write that would allow one transition more (a claim of a
// live lease, a commit under another's) fails here.
func TestEveryConditionalWriteAllowsExactlyTheTableTransitions(t *testing.T) {
	var methods []string
	typ := reflect.TypeOf(&store.Events{})
	for i := range typ.NumMethod() {
		methods = append(methods, typ.Method(i).Name)
	}
	for _, m := range methods {
		if !slices.Contains(notStatusWrites, m) && !slices.ContainsFunc(writes, func(w struct {
			name string
			do   func(ev *store.Events, id string, now time.Time) error
		}) bool {
			return w.name == m
		}) {
			t.Errorf("store.Events.%s is neither a status write this test runs nor listed as changing no status", m)
		}
	}

	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	seen := map[event.Transition]bool{}
	n := 0
	for _, s := range startStates() {
		for _, w := range writes {
			n++
			id := fmt.Sprintf("evt_transition_%03d", n)
			reach(t, ev, id, s, now)
			before, err := ev.Get(ctx, "stripe", id)
			if s.status == event.NoRecord && !errors.Is(err, store.ErrNotFound) || s.status != event.NoRecord && (err != nil || before.Status != s.status) {
				t.Fatalf("%s: start state read %s, %v", s.name, before.Status, err)
			}
			_ = w.do(ev, id, now)
			after, err := ev.Get(ctx, "stripe", id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if after.Status == before.Status && after.LeaseOwner == before.LeaseOwner && s.status != event.NoRecord {
				continue // nothing changed
			}
			cond := event.Unconditional
			switch {
			case s.status != event.StatusProcessing:
			case s.owner == writer && w.name != "Claim" && w.name != "Discard":
				cond = event.LeaseOwned
			case s.expired:
				cond = event.LeaseExpired
			default:
				cond = "another's live lease"
			}
			got := event.Transition{From: s.status, To: after.Status, Cond: cond, Write: w.name}
			found := false
			for _, tr := range event.Transitions {
				if tr.From == got.From && tr.To == got.To && tr.Cond == got.Cond && tr.Write == got.Write {
					seen[tr] = true
					found = true
				}
			}
			if !found {
				t.Errorf("%s from %q: it made %s → %s (%s), which event.Transitions does not allow", w.name, s.name, got.From, got.To, got.Cond)
			}
		}
	}
	var missing []string
	for _, tr := range event.Transitions {
		if !seen[tr] {
			missing = append(missing, fmt.Sprintf("%s: %q → %s (%s)", tr.Write, tr.From, tr.To, tr.Cond))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no write made the table's transition %s", m)
	}
}

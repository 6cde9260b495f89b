package event_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// The model: one event, its sender with two deliveries, the receiver's
// ingest, a queue of messages with SQS's receive counts and the DLQ move,
// two workers that claim, commit and fail (and crash), the lease's expiry,
// the stuck sweep, and the reconciler's one repair (a redelivery or a
// listing) of an event the store does not hold whole. Up to maxFaults
// faults anywhere: an AWS call that fails, an answer lost after its write
// took effect, a read-back that fails too, a worker that crashes, the
// team's application refusing the effect. Every status change goes through
// event.Transitions; the explorer visits every reachable state once, and
// checks the invariants in each state and in each state where nothing is
// left to happen.
const (
	maxFaults   = 3
	maxReceives = 3 // the queue's maxReceiveCount
	workers     = 2
	deliveries  = 2
	slots       = 4
)

// rules are the pipeline's decisions the model takes from the code; a
// test mutates one to show the explorer finds what it breaks.
type rules struct {
	// storesPayload: whether a delivery finding a record in st stores its
	// payload (shared/pipeline/ingest).
	storesPayload func(st event.Status) bool
	// readBack: a write whose answer was lost is read back (shared/storage/store).
	readBack bool
	// countsPermanentSeen: a message meeting a failed_permanent record
	// counts it (shared/pipeline/processor).
	countsPermanentSeen bool
}

var todays = rules{
	storesPayload:       event.Status.NeedsPayload,
	readBack:            true,
	countsPermanentSeen: true,
}

type record struct {
	exists, payload bool
	status          event.Status
	// owner is the claim holding the lease, from message ownerMsg; live
	// while its time has not run out.
	owner, ownerMsg int8
	live            bool
}

type message struct {
	id, receives int8
	held         int8 // the worker holding it, 0 when in the queue
}

// Phases of a worker.
const (
	idle int8 = iota
	received
	claimed
)

type worker struct {
	phase, msg, claim int8
}

type state struct {
	r        record
	msgs     [slots]message
	dlq      int8
	w        [workers]worker
	sent     int8
	retryDue bool // the sender owes a retry: its last attempt was not 2xx
	acked    bool
	repaired bool
	faults   int8
	commits  int8
	// Counted by a metric an alarm watches.
	permanentCounted, deadCounted bool
	nextClaim, nextMsg            int8
}

type step struct {
	action string
	next   state
}

// canon sorts the messages, so that states equal but for the slots'
// order are one.
func (s state) canon() state {
	m := s.msgs[:]
	slices.SortFunc(m, func(a, b message) int {
		if a.id != b.id {
			return int(b.id) - int(a.id) // empty slots (id 0) last
		}
		return 0
	})
	return s
}

func (s *state) fault() bool {
	if s.faults >= maxFaults {
		return false
	}
	s.faults++
	return true
}

// set changes the record's status, as only event.Transitions allows.
func (s *state) set(t *testing.T, to event.Status, cond event.Condition) {
	from := s.r.status
	if !s.r.exists {
		from = event.NoRecord
	}
	if !event.Allowed(from, to, cond) {
		t.Fatalf("the model made %q → %s (%s), which event.Transitions does not allow", from, to, cond)
	}
	s.r.exists, s.r.status = true, to
	if to != event.StatusProcessing {
		s.r.owner, s.r.ownerMsg, s.r.live = 0, 0, false
	}
}

func (s *state) enqueue() {
	for i := range s.msgs {
		if s.msgs[i].id == 0 {
			s.nextMsg++
			s.msgs[i] = message{id: s.nextMsg}
			return
		}
	}
	panic("no slot left: raise slots")
}

func (s *state) msg(id int8) *message {
	for i := range s.msgs {
		if s.msgs[i].id == id {
			return &s.msgs[i]
		}
	}
	return nil
}

func (s *state) anyMessage() bool {
	for _, m := range s.msgs {
		if m.id != 0 {
			return true
		}
	}
	return false
}

// settle ends worker i's handling of its message: deleted, or given back
// to the queue.
func (s *state) settle(i int, del bool) {
	w := &s.w[i]
	if m := s.msg(w.msg); m != nil {
		if del {
			*m = message{}
		} else {
			m.held = 0
		}
	}
	*w = worker{}
}

// ingest is one delivery through the receiver: every outcome of its calls.
func ingest(t *testing.T, s state, r rules, name string) []step {
	var out []step
	answer := func(s state, ok bool, how string) {
		s.acked = s.acked || ok
		if !s.repaired || strings.HasPrefix(name, "delivery") {
			s.retryDue = !ok
		}
		out = append(out, step{name + ": " + how, s})
	}
	if !s.r.exists {
		if f := s; f.fault() {
			answer(f, false, "the record's put fails")
		}
		s.set(t, event.StatusReceived, event.Unconditional)
		if f := s; f.fault() {
			answer(f, false, "the payload's put fails, after the record's")
		}
		s.r.payload = true
		if f := s; f.fault() {
			answer(f, false, "the send fails, after both puts")
		}
		s.enqueue()
		answer(s, true, "stored")
		return out
	}
	if r.storesPayload(s.r.status) && !s.r.payload {
		if f := s; f.fault() {
			answer(f, false, "the payload's put fails")
		}
		s.r.payload = true
	}
	if s.r.status.NeedsEnqueue() {
		if f := s; f.fault() {
			answer(f, false, "the send fails")
		}
		s.enqueue()
		answer(s, true, "requeued")
		return out
	}
	answer(s, true, "duplicate")
	return out
}

// fail records a failed attempt of worker i in status st, then settles its
// message as the processor does.
func fail(t *testing.T, s state, r rules, i int, st event.Status, name string) []step {
	var out []step
	ours := s.r.status == event.StatusProcessing && s.r.owner == s.w[i].claim
	if !ours {
		s.settle(i, false) // ErrLeaseLost: retried
		return append(out, step{name + ": lease lost, retried", s})
	}
	if f := s; f.fault() {
		f.settle(i, false) // the write failed: retried
		out = append(out, step{name + ": the failure's write fails", f})
	}
	s.set(t, st, event.LeaseOwned)
	settleAs := func(s state, how string) {
		switch st {
		case event.StatusFailedPermanent:
			s.permanentCounted = true
			s.settle(i, true)
		case event.StatusDeadLettered:
			s.deadCounted = true
			s.settle(i, false) // visible at once: to the DLQ on its next receive
		default:
			s.settle(i, false)
		}
		out = append(out, step{name + how, s})
	}
	if f := s; f.fault() {
		// It took effect, and its answer was lost.
		if r.readBack {
			settleAs(f, ": answer lost, read back")
			if g := f; g.fault() {
				g.settle(i, false)
				out = append(out, step{name + ": answer lost, and its read-back fails: retried", g})
			}
		} else {
			f.settle(i, false)
			out = append(out, step{name + ": answer lost: retried", f})
		}
	}
	settleAs(s, "")
	return out
}

// successors are every step the world can take from s.
func successors(t *testing.T, s state, r rules) []step {
	var out []step
	// The sender's deliveries: the first, and a retry after a non-2xx.
	if s.sent == 0 || (s.retryDue && s.sent < deliveries) {
		n := s
		n.sent++
		out = append(out, ingest(t, n, r, fmt.Sprintf("delivery %d", n.sent))...)
	}
	// The reconciler's one repair of an event the store does not hold
	// whole: GitHub's redelivery, Stripe's listing.
	whole := s.r.exists && (s.r.payload || !s.r.status.NeedsPayload())
	if !whole && !s.repaired && (s.sent == deliveries || !s.retryDue) {
		n := s
		n.repaired = true
		out = append(out, ingest(t, n, r, "the reconciler's repair")...)
	}
	// The lease's time runs out.
	if s.r.status == event.StatusProcessing && s.r.live {
		n := s
		n.r.live = false
		out = append(out, step{"the lease expires", n})
	}
	// The stuck sweep: a record still pending, no message for it, no live
	// lease: its pointer is sent again.
	if s.r.exists && s.r.status.Pending() && !s.anyMessage() && !(s.r.status == event.StatusProcessing && s.r.live) {
		n := s
		n.enqueue()
		out = append(out, step{"the stuck sweep sends it again", n})
	}
	for i := range s.w {
		w := s.w[i]
		name := fmt.Sprintf("worker %d", i+1)
		if w.phase != idle {
			if n := s; n.fault() {
				// Crashed: the message comes back after its visibility
				// timeout; the lease stays until it expires.
				n.settle(i, false)
				out = append(out, step{name + " crashes", n})
			}
		}
		switch w.phase {
		case idle:
			for _, m := range s.msgs {
				if m.id == 0 || m.held != 0 {
					continue
				}
				n := s
				nm := n.msg(m.id)
				if nm.receives >= maxReceives {
					*nm = message{}
					n.dlq++
					out = append(out, step{fmt.Sprintf("message %d moves to the DLQ", m.id), n})
					continue
				}
				nm.receives++
				nm.held = int8(i + 1)
				n.w[i] = worker{phase: received, msg: m.id}
				out = append(out, step{fmt.Sprintf("%s receives message %d", name, m.id), n})
			}
		case received:
			out = append(out, claim(t, s, r, i, name)...)
		case claimed:
			out = append(out, apply(t, s, r, i, name)...)
		}
	}
	return out
}

func claim(t *testing.T, s state, r rules, i int, name string) []step {
	var out []step
	w := s.w[i]
	switch {
	case !s.r.exists:
		s.settle(i, true)
		return append(out, step{name + ": no record, message deleted", s})
	case !event.Claimable(s.r.status, !s.r.live):
		switch {
		case s.r.status == event.StatusProcessing && s.r.ownerMsg == w.msg:
			s.settle(i, false)
			out = append(out, step{name + ": leased by this message's earlier receive: back when the lease ends", s})
		case s.r.status == event.StatusProcessing:
			s.settle(i, true)
			out = append(out, step{name + ": leased from another message: deleted", s})
		case s.r.status == event.StatusFailedPermanent:
			s.permanentCounted = s.permanentCounted || r.countsPermanentSeen
			s.settle(i, true)
			out = append(out, step{name + ": failed_permanent, counted, deleted", s})
		default:
			s.settle(i, true)
			out = append(out, step{name + ": duplicate, deleted", s})
		}
		return out
	}
	if f := s; f.fault() {
		f.settle(i, false)
		out = append(out, step{name + ": the claim fails", f})
	}
	cond := event.Unconditional
	if s.r.status == event.StatusProcessing {
		cond = event.LeaseExpired
	}
	s.set(t, event.StatusProcessing, cond)
	s.nextClaim++
	s.r.owner, s.r.ownerMsg, s.r.live = s.nextClaim, w.msg, true
	won := s
	won.w[i].phase, won.w[i].claim = claimed, s.nextClaim
	if f := s; f.fault() {
		// The claim took effect, its answer was lost.
		if r.readBack {
			g := f
			g.w[i].phase, g.w[i].claim = claimed, s.nextClaim
			out = append(out, step{name + ": claims, answer lost, read back", g})
		}
		if g := f; !r.readBack || g.fault() {
			g.settle(i, false)
			out = append(out, step{name + ": claims, answer lost (and its read-back): the message is given back", g})
		}
	}
	return append(out, step{name + " claims", won})
}

func apply(t *testing.T, s state, r rules, i int, name string) []step {
	var out []step
	m := s.msg(s.w[i].msg)
	last := m != nil && m.receives >= maxReceives
	retryable := event.StatusFailed
	if last {
		retryable = event.StatusDeadLettered
	}
	if !s.r.payload {
		return fail(t, s, r, i, retryable, name+": no payload to read, fails")
	}
	if f := s; f.fault() {
		out = append(out, fail(t, f, r, i, retryable, name+": the effect fails")...)
	}
	if f := s; f.fault() {
		out = append(out, fail(t, f, r, i, event.StatusFailedPermanent, name+": the application refuses the effect")...)
	}
	if s.r.status != event.StatusProcessing || s.r.owner != s.w[i].claim {
		s.settle(i, true)
		return append(out, step{name + ": the commit finds its lease taken over: lease_lost, deleted", s})
	}
	s.set(t, event.StatusProcessed, event.LeaseOwned)
	s.commits++
	done := s
	done.settle(i, true)
	if f := s; f.fault() {
		// Committed, its answer lost: read back, or taken for a failure.
		if r.readBack {
			g := f
			g.settle(i, true)
			out = append(out, step{name + ": commits, answer lost, read back", g})
		}
		if g := f; !r.readBack || g.fault() {
			out = append(out, fail(t, g, r, i, retryable, name+": commits, answer lost (and its read-back), taken for a failure")...)
		}
	}
	return append(out, step{name + " commits", done})
}

// violation says which invariant s breaks, if any; quiet says nothing is
// left to happen.
func violation(s state, quiet bool) string {
	if s.commits > 1 {
		return fmt.Sprintf("doubled: the effects committed %d times", s.commits)
	}
	if !quiet {
		return ""
	}
	dead := s.r.exists && s.r.status == event.StatusDeadLettered
	switch {
	case s.r.exists && s.r.status.Pending():
		return fmt.Sprintf("silent: left %s with nothing to move it", s.r.status)
	case dead && s.dlq == 0:
		return "the store and the DLQ disagree: dead_lettered, no message in the DLQ"
	case s.dlq > 0 && (!s.r.exists || !dead && !final(s.r.status)):
		// A stale copy in the DLQ of a record that is final is harmless:
		// a redrive of it is a duplicate (or counted permanent again).
		return fmt.Sprintf("the store and the DLQ disagree: a message in the DLQ, the record %s", s.r.status)
	case !s.acked:
		return ""
	case !s.r.exists:
		return "lost: acknowledged, and no record"
	case s.r.status == event.StatusProcessed:
		return ""
	case s.r.status == event.StatusFailedPermanent || dead:
		switch {
		case !s.r.payload:
			return fmt.Sprintf("lost: %s without a payload to redrive", s.r.status)
		case s.r.status == event.StatusFailedPermanent && !s.permanentCounted,
			dead && !s.deadCounted && s.dlq == 0:
			return fmt.Sprintf("silent: %s, counted by no metric an alarm watches", s.r.status)
		}
		return ""
	}
	return fmt.Sprintf("lost: acknowledged, left %s", s.r.status)
}

// final reports whether a record in st needs nothing more from the
// pipeline: processed, ignored, failed_permanent.
func final(st event.Status) bool {
	return st == event.StatusProcessed || st == event.StatusIgnored || st == event.StatusFailedPermanent
}

// explore visits every state reachable under r, breadth first, and
// returns the number of states and the shortest trace to a violation.
func explore(t *testing.T, r rules) (int, []string, string) {
	type from struct {
		parent state
		action string
	}
	start := state{}
	seen := map[state]from{start: {}}
	queue := []state{start}
	trace := func(s state) []string {
		var out []string
		for s != start {
			f := seen[s]
			out = append(out, f.action)
			s = f.parent
		}
		slices.Reverse(out)
		return out
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		next := successors(t, s, r)
		if v := violation(s, len(next) == 0); v != "" {
			return len(seen), trace(s), v
		}
		for _, st := range next {
			n := st.next.canon()
			if _, ok := seen[n]; ok {
				continue
			}
			seen[n] = from{parent: s, action: st.action}
			queue = append(queue, n)
		}
	}
	return len(seen), nil, ""
}

// TestTheStatusMachineKeepsItsPromises explores every interleaving of the
// model's world under today's rules: no state breaks an invariant. When
// one does, the test names the shortest trace to it.
func TestTheStatusMachineKeepsItsPromises(t *testing.T) {
	n, trace, v := explore(t, todays)
	if v != "" {
		t.Fatalf("%s, after %d steps (of %d states explored):\n  %s", v, len(trace), n, strings.Join(trace, "\n  "))
	}
	t.Logf("%d states explored, every invariant holds", n)
}

// TestTheExplorerFindsTheLossPathsOfEarlierRules: the rules the pipeline
// had before (a retry stored a payload only for a received record; a lost
// answer was guessed, not read back; a message meeting failed_permanent was
// a plain duplicate) each break an invariant, and the explorer says how in
// the fewest steps.
func TestTheExplorerFindsTheLossPathsOfEarlierRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    rules
		want string
	}{
		{"a retry stores the payload of a received record only",
			rules{storesPayload: func(st event.Status) bool { return st == event.StatusReceived }, readBack: true, countsPermanentSeen: true}, "lost"},
		{"lost answers are guessed, and failed_permanent met is a duplicate",
			rules{storesPayload: event.Status.NeedsPayload, readBack: false, countsPermanentSeen: false}, "silent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, trace, v := explore(t, tc.r)
			if !strings.HasPrefix(v, tc.want) {
				t.Fatalf("got %q, want a %s event", v, tc.want)
			}
			t.Logf("%s, in %d steps:\n  %s", v, len(trace), strings.Join(trace, "\n  "))
		})
	}
}

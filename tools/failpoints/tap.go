package failpoints

import (
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
)

// Kind is a kind of fault.
type Kind string

// The fault kinds every failure point is tried with.
const (
	// Fail: the call fails before taking effect, and every retry the
	// caller's client makes of it fails too: a 5xx, throttling or no
	// answer at all (a timeout's shape), chosen by the site.
	Fail Kind = "fail"
	// Lost: the call takes effect but its answer is lost, and so is the
	// answer of every retry the client makes of it: the caller never
	// learns what happened.
	Lost Kind = "lost"
	// Kill: the call takes effect and its answer arrives, then the
	// process is killed: the function makes no further call, and its own
	// answer (to the courier, to the event source) is never given.
	Kill Kind = "kill"
	// Refuse: the team's application refuses the call (a 4xx), which
	// fails the effect, and its event, for good. Only calls to the
	// application are refused: without it no event would ever need a
	// person, and the paths that make one would go unenumerated.
	Refuse Kind = "refuse"
)

// Kinds are the fault kinds, in the report's order.
var Kinds = []Kind{Fail, Lost, Kill, Refuse}

// Point is one failure point: the N-th call of a site in a case.
type Point struct {
	Site Site `json:"site"`
	N    int  `json:"n"`
}

// Fault is a fault of a kind at a point.
type Fault struct {
	Point
	Kind Kind `json:"kind"`
}

func (f Fault) String() string {
	s := string(f.Kind) + " at " + f.Site.String()
	if f.N > 1 {
		s += " #" + strconv.Itoa(f.N)
	}
	return s
}

// applies reports whether kind k is a fault of its own at s: an answer
// lost after a call that changes nothing is the same as a failed call,
// and the event source's process is not ours to kill.
func applies(k Kind, s Site) bool {
	switch k {
	case Lost:
		return !s.readOnly()
	case Kill:
		return s.Function != functionESM
	case Refuse:
		return s.Service == serviceApp
	}
	return true
}

// Call is one call a case recorded.
type Call struct {
	Point
	// At is when it was made, from the case's start.
	At time.Duration `json:"at"`
	// Injected is the fault injected into it, if any.
	Injected Kind `json:"injected,omitempty"`
}

// tap watches every call of a case's functions (each function's AWS
// clients and outside calls go through their own proxy, whose Decide is
// the tap's), records them, injects the planned faults, and keeps a
// killed function's calls from reaching anything until its invocation
// ends.
type tap struct {
	prefix string
	start  time.Time

	mu     sync.Mutex
	calls  []Call
	counts map[Site]int
	plan   []Fault
	fired  []bool
	// sticky holds the fault of an AWS call, by the SDK's invocation id,
	// so that its retries meet it too.
	sticky map[string]Kind
	// stickyHTTP holds the fault of an outside call for a moment, so that
	// the client's own retries (stripe-go's) meet it too.
	stickyHTTP map[Site]stickyWindow
	killed     map[string]bool
	// onFault, when set, is called once, as the first planned fault
	// strikes (before the faulted call goes on): a case's second event is
	// sent then. It must not call the tap.
	onFault func()
}

type stickyWindow struct {
	kind  Kind
	until time.Time
}

// stickyFor is how long an outside call's fault outlasts it.
const stickyFor = 1500 * time.Millisecond

func newTap(prefix string, plan []Fault) *tap {
	return &tap{prefix: prefix, start: time.Now(), counts: map[Site]int{}, plan: plan, fired: make([]bool, len(plan)),
		sticky: map[string]Kind{}, stickyHTTP: map[Site]stickyWindow{}, killed: map[string]bool{}}
}

// unrecorded are the calls that are no failure point: the event source's
// polls, whose number depends on timing alone (the event source is
// AWS's; a failed poll is retried by it).
var unrecorded = []string{"ReceiveMessage"}

// decider returns the Decide of function's proxies.
func (t *tap) decider(function string) func(faultproxy.Request) faultproxy.Verdict {
	return func(r faultproxy.Request) faultproxy.Verdict {
		if slices.Contains(unrecorded, r.Operation) {
			return faultproxy.Verdict{}
		}
		call := r.Operation
		if r.Invocation != "" || isAWS(r.Service) {
			call = awsCall(t.prefix, r.Operation, r.Body)
		}
		site := Site{Function: function, Service: r.Service, Call: call}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.killed[function] {
			return faultproxy.Verdict{Action: faultproxy.Refuse}
		}
		if k, ok := t.sticky[r.Invocation]; ok && r.Invocation != "" {
			// A retry of a faulted call: the same fault, no new call.
			return t.verdict(function, site, k)
		}
		if w, ok := t.stickyHTTP[site]; ok && time.Now().Before(w.until) {
			return t.verdict(function, site, w.kind)
		}
		t.counts[site]++
		c := Call{Point: Point{Site: site, N: t.counts[site]}, At: time.Since(t.start)}
		for i, f := range t.plan {
			if t.fired[i] || f.Point != c.Point {
				continue
			}
			t.fired[i] = true
			c.Injected = f.Kind
			if t.onFault != nil {
				t.onFault()
				t.onFault = nil
			}
			switch {
			case f.Kind == Kill:
			case r.Invocation != "":
				t.sticky[r.Invocation] = f.Kind
			default:
				t.stickyHTTP[site] = stickyWindow{kind: f.Kind, until: time.Now().Add(stickyFor)}
			}
			break
		}
		t.calls = append(t.calls, c)
		if c.Injected == "" {
			return faultproxy.Verdict{}
		}
		return t.verdict(function, site, c.Injected)
	}
}

// whenFault sets the tap's onFault.
func (t *tap) whenFault(fn func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onFault = fn
}

// verdict is the proxy's action for a fault of kind k at site.
func (t *tap) verdict(function string, site Site, k Kind) faultproxy.Verdict {
	switch k {
	case Lost:
		return faultproxy.Verdict{Action: faultproxy.DropAfter}
	case Refuse:
		return faultproxy.Verdict{Action: faultproxy.Refuse}
	case Kill:
		return faultproxy.Verdict{After: func() {
			t.mu.Lock()
			t.killed[function] = true
			t.mu.Unlock()
		}}
	}
	return faultproxy.Verdict{Action: failShape(site)}
}

// failShape is the shape of a Fail at site: a 5xx, throttling, or no
// answer, the same for a site in every run.
func failShape(s Site) faultproxy.Action {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s.String()))
	return []faultproxy.Action{faultproxy.Error, faultproxy.Throttle, faultproxy.Drop}[h.Sum32()%3]
}

// ended ends an invocation of function and reports whether its process
// was killed during it; a new invocation starts with a new process.
func (t *tap) ended(function string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.killed[function]
	delete(t.killed, function)
	return k
}

// injected counts the faults injected so far.
func (t *tap) injected() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, f := range t.fired {
		if f {
			n++
		}
	}
	return n
}

// recorded returns the calls so far.
func (t *tap) recorded() []Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.calls)
}

// unfired returns the planned faults never injected (their point was not
// reached).
func (t *tap) unfired() []Fault {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Fault
	for i, f := range t.plan {
		if !t.fired[i] {
			out = append(out, f)
		}
	}
	return out
}

func isAWS(service string) bool {
	return service == "dynamodb" || service == "sqs" || service == "ssm"
}

package failpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestEveryWorldsFaultFreeRunIsDiscovered runs each world once without a
// fault (the enumeration's discovery): every world's event ends processed,
// and its recorded calls hold the pipeline's writes by site, each a
// failure point. A provider in event.Providers is a world without an edit
// here.
func TestEveryWorldsFaultFreeRunIsDiscovered(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Emulators: []emulator.Endpoints{testenv.Endpoints(t)}, Root: root, DiscoverOnly: true, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range rep.Worlds {
		names = append(names, w.Name)
	}
	for _, p := range event.Providers {
		if !slices.Contains(names, p) {
			t.Errorf("provider %s is no world of the enumeration (worlds: %v)", p, names)
		}
	}
	want := []string{
		"receiver dynamodb PutItem Events.record",
		"receiver dynamodb PutItem Events.payload",
		"receiver sqs SendMessage WebhookQueue",
		"processor dynamodb UpdateItem Events.record →processing",
		"processor dynamodb GetItem Events.payload",
		"event-source sqs DeleteMessageBatch WebhookQueue",
		"reconciler dynamodb Query Events.unprocessed/pending",
	}
	for _, d := range rep.Discovery {
		if d.Outcome != OutcomeProcessed || !d.OK() {
			t.Errorf("%s: the fault-free run ended %q (%s %s)", d.World.Name, d.Outcome, d.Why, d.Err)
		}
		var got []string
		for _, s := range sites(d.Calls) {
			got = append(got, s.String())
		}
		wantHere := want
		if d.World.Bridge {
			// The bridge ingests what the receiver would, then records the
			// connected account; the event source deletes its message.
			wantHere = nil
			for _, w := range want {
				wantHere = append(wantHere, strings.Replace(w, "receiver ", "bridge ", 1))
			}
			wantHere = append(wantHere, "bridge dynamodb PutItem Events.connect_account", "event-source sqs DeleteMessageBatch IngressQueue")
		}
		for _, w := range wantHere {
			if !slices.Contains(got, w) {
				t.Errorf("%s: no call %q among the failure points discovered:\n  %s", d.World.Name, w, strings.Join(got, "\n  "))
			}
		}
		commit := slices.ContainsFunc(got, func(s string) bool {
			return strings.HasPrefix(s, "processor dynamodb TransactWriteItems") && strings.HasSuffix(s, "Events.record →processed")
		})
		if !commit {
			t.Errorf("%s: no commit among the failure points discovered", d.World.Name)
		}
	}
}

// TestACallIsNamedByItsShape: a call's site is read from its request, the
// same for every event and every case.
func TestACallIsNamedByItsShape(t *testing.T) {
	for _, tc := range []struct {
		op, body, want string
	}{
		{"PutItem", `{"TableName":"fpx-EventsTable","Item":{"pk":{"S":"stripe#evt_1"},"lane":{"S":"stripe#pending#03"}}}`, "PutItem Events.record"},
		{"PutItem", `{"TableName":"fpx-EventsTable","Item":{"pk":{"S":"payload#github#g"},"payload":{"B":"eA=="}}}`, "PutItem Events.payload"},
		{"UpdateItem", `{"TableName":"fpx-EventsTable","Key":{"pk":{"S":"shopify#1"}},"UpdateExpression":"SET #st = :status","ExpressionAttributeValues":{":status":{"S":"failed_permanent"}}}`, "UpdateItem Events.record →failed_permanent"},
		{"Query", `{"TableName":"fpx-EventsTable","IndexName":"unprocessed","ExpressionAttributeValues":{":k":{"S":"stripe#pending#07"},":lo":{"N":"0"}}}`, "Query Events.unprocessed/pending"},
		{"Query", `{"TableName":"fpx-EventsTable","IndexName":"by_day","ExpressionAttributeValues":{":k":{"S":"stripe#2026-12-01#07"}}}`, "Query Events.by_day"},
		{"SendMessage", `{"QueueUrl":"http://127.0.0.1:1/000000000000/fpx-WebhookQueue"}`, "SendMessage WebhookQueue"},
		{"GetParameter", `{"Name":"/webhook-inbox/dev/failpoints/stripe/webhook-secrets"}`, "GetParameter stripe/webhook-secrets"},
		{"BatchGetItem", `{"RequestItems":{"fpx-EventsTable":{"Keys":[{"pk":{"S":"github#a"}},{"pk":{"S":"payload#github#a"}}]}}}`, "BatchGetItem Events.payload + Events.record"},
	} {
		if got := awsCall("fpx", tc.op, []byte(tc.body)); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.op, tc.body, got, tc.want)
		}
	}
	// Every shape is some site's: the sites of a world meet 5xx,
	// throttling and no answer alike.
	shapes := map[string]bool{}
	for _, call := range []string{"PutItem Events.record", "PutItem Events.payload", "SendMessage WebhookQueue", "GetItem Events.payload",
		"UpdateItem Events.record →processing", "Query Events.unprocessed", "DeleteMessageBatch WebhookQueue", "GetItem Events.checkpoint"} {
		shapes[string(failShape(Site{Function: "f", Service: "dynamodb", Call: call}))] = true
	}
	if len(shapes) != 3 {
		t.Errorf("fail shapes of 8 sites: got %v, want all three", shapes)
	}
}

// TestPairsAreTheCallsAfterTheFirstFault: a pair's second fault is a call
// the single fault's case made after it, its first occurrence there, each
// kind that applies; those on a site the fault-free run never called come
// apart (an error path).
func TestPairsAreTheCallsAfterTheFirstFault(t *testing.T) {
	w := World{Name: "w"}
	claim := Site{Function: functionProcessor, Service: "dynamodb", Call: "UpdateItem Events.record →processing"}
	fail := Site{Function: functionProcessor, Service: "dynamodb", Call: "UpdateItem Events.record →failed"}
	first := Fault{Point: Point{Site: claim, N: 1}, Kind: Fail}
	single := Result{Spec: Spec{World: w, Faults: []Fault{first}}, Calls: []Call{
		{Point: Point{Site: claim, N: 1}, At: time.Second, Injected: Fail},
		{Point: Point{Site: claim, N: 2}, At: 2 * time.Second},
		{Point: Point{Site: fail, N: 1}, At: 3 * time.Second},
		{Point: Point{Site: fail, N: 2}, At: 4 * time.Second},
	}}
	faultPath, others := pairs([]Result{single}, map[string]map[Site]bool{"w": {claim: true}})
	if len(others) != 3 || len(faultPath) != 3 {
		t.Fatalf("got %d pairs on known sites and %d on the fault's path, want 3 and 3 (fail, lost, kill each)", len(others), len(faultPath))
	}
	for _, p := range append(others, faultPath...) {
		if p.Faults[0] != first || p.Faults[1].N != map[Site]int{claim: 2, fail: 1}[p.Faults[1].Site] {
			t.Errorf("pair %v: want the first fault, then the first call of a site after it", p.Faults)
		}
	}
}

// TestTheSecondEventIsOfTheSameObjectAndNewer: a Stripe world's second
// event is a newer state of the first one's object (one second later,
// the same object, customer and account, another id), a thin one's too
// (with its object as the API serves it); another provider's is a
// distinct event whose body differs from the first's (the same body
// again would be a replay).
func TestTheSecondEventIsOfTheSameObjectAndNewer(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	for _, w := range Worlds() {
		t.Run(w.Name, func(t *testing.T) {
			first, err := w.sample(root, newEventID(w.Provider), now)
			if err != nil {
				t.Fatal(err)
			}
			second, err := w.second(root, first, newEventID(w.Provider), now)
			if err != nil {
				t.Fatal(err)
			}
			if second.id == first.id || bytes.Equal(second.body, first.body) || second.typ != first.typ {
				t.Fatalf("got second %s (%s), first %s (%s); want another id and body, the same type", second.id, second.typ, first.id, first.typ)
			}
			if w.Provider != event.ProviderStripe {
				return
			}
			a, err := stripeHeadOf(first.body)
			if err != nil {
				t.Fatal(err)
			}
			b, err := stripeHeadOf(second.body)
			if err != nil {
				t.Fatal(err)
			}
			if b.Object != a.Object || b.Account != a.Account || b.Created != a.Created+1 || b.ID != second.id || a.Object == "" {
				t.Errorf("got second %+v, first %+v; want the same object and account, created one second later", b, a)
			}
			if w.Connect != "" && b.Account != w.Connect {
				t.Errorf("got account %q, want %q", b.Account, w.Connect)
			}
			if w.Thin {
				var obj struct{ ID, Customer, Status string }
				if err := json.Unmarshal(second.object, &obj); err != nil || obj.ID != a.Object || obj.Customer == "" || obj.Status != secondStatus {
					t.Errorf("the second thin event's object: got %+v (%v), want %s, its customer, %s", obj, err, a.Object, secondStatus)
				}
			}
		})
	}
}

// TestTheSecondEventIsSentAsTheFaultStrikes: the tap calls its hook once,
// when the planned fault's call is made, before the call goes on; not on
// the calls before it, nor again.
func TestTheSecondEventIsSentAsTheFaultStrikes(t *testing.T) {
	site := Site{Function: functionProcessor, Service: "stripe", Call: "GET /v1/events"}
	tp := newTap("fpx", []Fault{{Point: Point{Site: site, N: 2}, Kind: Fail}})
	calls := 0
	tp.whenFault(func() { calls++ })
	decide := tp.decider(functionProcessor)
	req := faultproxy.Request{Service: "stripe", Operation: "GET /v1/events"}
	decide(req)
	if calls != 0 {
		t.Fatalf("after the call before the fault's: got %d calls of the hook, want 0", calls)
	}
	if v := decide(req); v.Action == "" {
		t.Fatalf("the fault's call: got no fault")
	}
	if calls != 1 {
		t.Fatalf("at the fault: got %d calls of the hook, want 1", calls)
	}
	time.Sleep(stickyFor + 100*time.Millisecond)
	decide(req)
	if calls != 1 {
		t.Errorf("after the fault: got %d calls of the hook, want 1", calls)
	}
}

// TestTheMirrorMustEndInTheNewestProcessedState: after two events of an
// object, the mirror holds the newest of those processed, whichever was
// applied last; an older state, or a state with no event processed, is
// wrong.
func TestTheMirrorMustEndInTheNewestProcessedState(t *testing.T) {
	older := stripeHead{ID: "evt_1", Object: "sub_1", Created: 100}
	newer := stripeHead{ID: "evt_2", Object: "sub_1", Created: 101}
	processed := &event.Record{Status: event.StatusProcessed}
	person := &event.Record{Status: event.StatusFailedPermanent}
	snap := func(h stripeHead) mirror.Snapshot {
		return mirror.Snapshot{ID: h.Object, LastEventID: h.ID, LastEventCreated: h.Created}
	}
	olderObj := json.RawMessage(`{"id":"sub_1","object":"subscription","customer":"cus_1","status":"active"}`)
	newerObj := json.RawMessage(`{"id":"sub_1","object":"subscription","customer":"cus_1","status":"past_due"}`)
	// audited is the snapshot an audit's repair to obj leaves, its
	// version the page's second.
	audited := func(at int64, obj json.RawMessage) mirror.Snapshot {
		return mirror.Snapshot{ID: "sub_1", Customer: "cus_1", LastEventID: "audit_1", LastEventCreated: at, SettledBy: mirror.SourceAudit, Data: obj}
	}
	for _, tc := range []struct {
		name  string
		recs  []*event.Record
		snap  mirror.Snapshot
		found bool
		ok    bool
	}{
		{"both processed, the newer's state", []*event.Record{processed, processed}, snap(newer), true, true},
		{"both processed, the older's state", []*event.Record{processed, processed}, snap(older), true, false},
		{"both processed, no state", []*event.Record{processed, processed}, mirror.Snapshot{}, false, false},
		{"the newer needs a person, the older's state", []*event.Record{processed, person}, snap(older), true, true},
		{"the newer needs a person, its state", []*event.Record{processed, person}, snap(newer), true, false},
		{"the older not stored, the newer's state", []*event.Record{nil, processed}, snap(newer), true, true},
		{"none processed, no state", []*event.Record{person, nil}, mirror.Snapshot{}, false, true},
		{"none processed, a state", []*event.Record{person, nil}, snap(older), true, false},
		{"none processed, the world's own state (an audit's)", []*event.Record{person, nil}, audited(102, newerObj), true, true},
		{"both processed, an audit's repair to the newer's state after it", []*event.Record{processed, processed}, audited(102, newerObj), true, true},
		{"both processed, an audit's repair to the older's state after the newer", []*event.Record{processed, processed}, audited(102, olderObj), true, false},
		{"both processed, an audit's repair to the newer's state before it", []*event.Record{processed, processed}, audited(100, newerObj), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := mirrorWhy([]stripeHead{older, newer}, []json.RawMessage{olderObj, newerObj}, tc.recs, tc.snap, tc.found)
			if (why == "") != tc.ok {
				t.Errorf("got %q, want ok %t", why, tc.ok)
			}
		})
	}
}

// TestSecondEventCasesAreCountedAndReportedApart: the cases with a second
// event count in the totals line, and the report shows them in a section
// of their own, each broken one listed.
func TestSecondEventCasesAreCountedAndReportedApart(t *testing.T) {
	w := World{Name: "stripe", Retry: RetryPolicies[event.ProviderStripe]}
	site := Site{Function: functionProcessor, Service: "dynamodb", Call: "UpdateItem Events.record →processing"}
	f := Fault{Point: Point{Site: site, N: 1}, Kind: Kill}
	rep := &Report{
		Worlds:    []World{w},
		Discovery: []Result{{Spec: Spec{World: w}, Outcome: OutcomeProcessed, Calls: []Call{{Point: f.Point}}}},
		Singles:   []Result{{Spec: Spec{World: w, Faults: []Fault{f}}, Outcome: OutcomeProcessed}},
		Seconds: []Result{
			{Spec: Spec{World: w, Faults: []Fault{f}, Second: true}, Outcome: OutcomeProcessed, SecondOutcome: OutcomeProcessed},
			{Spec: Spec{World: w, Faults: []Fault{{Point: f.Point, Kind: Fail}}, Second: true}, Outcome: OutcomeProcessed, SecondOutcome: OutcomeProcessed,
				Lost: true, Why: "the mirror holds evt_1's state"},
		},
	}
	cases, lost, _, _, _ := rep.Totals()
	if cases != 3 || lost != 1 {
		t.Errorf("totals: got %d cases, %d lost; want 3 and 1", cases, lost)
	}
	var buf bytes.Buffer
	rep.Markdown(&buf)
	md := buf.String()
	for _, want := range []string{
		"With a second event of the same object in flight",
		"| stripe | 2 | 1 processed / processed |",
		"- stripe, a second event at fail at processor dynamodb UpdateItem Events.record →processing: **LOST**: the mirror holds evt_1's state",
		"3 cases, 1 lost, 0 doubled, 0 silent.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report has no %q:\n%s", want, md)
		}
	}
}

// TestASecondEventMeetsEveryFault runs one fault of the Stripe world
// with a second event of its object sent as it strikes: both events are
// settled, each with its effects once, and the mirror ends in the newer
// one's state.
func TestASecondEventMeetsEveryFault(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	var stripe []World
	for _, w := range Worlds() {
		if w.Name == event.ProviderStripe {
			stripe = append(stripe, w)
		}
	}
	rep, err := Run(context.Background(), Options{Emulators: []emulator.Endpoints{testenv.Endpoints(t)}, Root: root, Worlds: stripe, Workers: 2, SinglesOnly: true, Second: true,
		Only: func(s Spec) bool {
			return s.Faults[0].Kind == Kill && s.Faults[0].Site.Call == "UpdateItem Events.record →processing"
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Singles) != 1 || len(rep.Seconds) != 1 {
		t.Fatalf("got %d single cases and %d with a second event, want 1 and 1", len(rep.Singles), len(rep.Seconds))
	}
	c := rep.Seconds[0]
	if !c.OK() || !c.Second || c.Outcome != OutcomeProcessed || c.SecondOutcome != OutcomeProcessed || len(c.Unfired) > 0 {
		t.Errorf("got %q then %q (ok %t, unfired %v): %s%s; want both events processed, every invariant held", c.Outcome, c.SecondOutcome, c.OK(), c.Unfired, c.Why, c.Err)
	}
}

// TestEachEventNeedingAPersonIsCounted: two events failed_permanent need
// two counts of a metric an alarm watches; one count for the two is
// silent about one.
func TestEachEventNeedingAPersonIsCounted(t *testing.T) {
	e := &env{alarms: alarms{metrics: map[string]bool{functionProcessor + "/failed_permanent": true}, queues: map[string]bool{}}}
	recs := []*event.Record{{ID: "a", Status: event.StatusFailedPermanent}, {ID: "b", Status: event.StatusFailedPermanent}}
	for _, tc := range []struct {
		counts int
		silent bool
	}{{1, true}, {2, false}} {
		s := &stack{logs: map[string]*logs{functionProcessor: {}}}
		for range tc.counts {
			fmt.Fprintln(s.logs[functionProcessor], `{"_aws":{},"failed_permanent":1}`)
		}
		if why := e.countedEach(s, recs, nil); (why != "") != tc.silent {
			t.Errorf("%d counts of 2 events: got %q, want silent %t", tc.counts, why, tc.silent)
		}
	}
}

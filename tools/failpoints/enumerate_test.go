package failpoints

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// The unit tests of what the enumeration counts and reports: no emulator.

var (
	siteRecord  = Site{Function: functionReceiver, Service: "dynamodb", Call: "PutItem Events.record"}
	siteSecret  = Site{Function: functionReceiver, Service: "ssm", Call: "GetParameter stripe/webhook-secrets"}
	siteForward = Site{Function: functionProcessor, Service: serviceApp, Call: "POST /forward"}
	siteDelete  = Site{Function: functionESM, Service: "sqs", Call: "DeleteMessageBatch WebhookQueue"}
	siteList    = Site{Function: functionReconciler, Service: "stripe", Call: "GET /v1/events"}
)

// TestSitesAreDistinctInTheOrderFirstCalled: a site called again (another
// occurrence) is the same failure point, listed where first called.
func TestSitesAreDistinctInTheOrderFirstCalled(t *testing.T) {
	calls := []Call{
		{Point: Point{Site: siteSecret, N: 1}},
		{Point: Point{Site: siteRecord, N: 1}},
		{Point: Point{Site: siteSecret, N: 2}},
		{Point: Point{Site: siteDelete, N: 1}},
		{Point: Point{Site: siteRecord, N: 2}},
	}
	got := sites(calls)
	want := []Site{siteSecret, siteRecord, siteDelete}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := sites(nil); len(got) != 0 {
		t.Errorf("no calls: got %v, want no site", got)
	}
}

// TestAFaultKindAppliesWhereItIsAFaultOfItsOwn: a lost answer only after a
// call that changes something, no kill of the event source's process, a
// refusal only from the team's application; a failure everywhere.
func TestAFaultKindAppliesWhereItIsAFaultOfItsOwn(t *testing.T) {
	for _, tc := range []struct {
		site                    Site
		fail, lost, kill, refus bool
	}{
		{siteRecord, true, true, true, false},
		{siteSecret, true, false, true, false}, // a read
		{siteList, true, false, true, false},   // GET changes nothing
		{siteForward, true, true, true, true},  // the application
		{siteDelete, true, true, false, false}, // the event source's
		{Site{Function: functionProcessor, Service: "dynamodb", Call: "Query Events.unprocessed/pending"}, true, false, true, false},
		{Site{Function: functionProcessor, Service: "dynamodb", Call: "TransactWriteItems update:Events.record →processed"}, true, true, true, false},
	} {
		got := []bool{applies(Fail, tc.site), applies(Lost, tc.site), applies(Kill, tc.site), applies(Refuse, tc.site)}
		want := []bool{tc.fail, tc.lost, tc.kill, tc.refus}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got fail/lost/kill/refuse %v, want %v", tc.site, got, want)
		}
	}
}

// TestSinglesAreEachSiteWithEachKindThatApplies: the cases of one fault
// are, per world, each site its fault-free run called with each kind
// that applies there, at the site's first occurrence.
func TestSinglesAreEachSiteWithEachKindThatApplies(t *testing.T) {
	a, b := World{Name: "a"}, World{Name: "b"}
	discovery := []Result{
		{Spec: Spec{World: a}, Calls: []Call{{Point: Point{Site: siteRecord, N: 1}}, {Point: Point{Site: siteSecret, N: 1}}, {Point: Point{Site: siteRecord, N: 2}}}},
		{Spec: Spec{World: b}, Calls: []Call{{Point: Point{Site: siteForward, N: 1}}, {Point: Point{Site: siteDelete, N: 1}}}},
	}
	var got []string
	for _, s := range singlesOf(discovery) {
		if len(s.Faults) != 1 || s.Faults[0].N != 1 || s.Second {
			t.Errorf("%s: got faults %v (second %t), want one at the first occurrence", s.World.Name, s.Faults, s.Second)
		}
		got = append(got, s.World.Name+": "+s.Faults[0].String())
	}
	want := []string{
		// a: the record's put 3 kinds, the secret's read 2.
		"a: fail at receiver dynamodb PutItem Events.record",
		"a: lost at receiver dynamodb PutItem Events.record",
		"a: kill at receiver dynamodb PutItem Events.record",
		"a: fail at receiver ssm GetParameter stripe/webhook-secrets",
		"a: kill at receiver ssm GetParameter stripe/webhook-secrets",
		// b: the application's 4, the event source's delete 2.
		"b: fail at processor app POST /forward",
		"b: lost at processor app POST /forward",
		"b: kill at processor app POST /forward",
		"b: refuse at processor app POST /forward",
		"b: fail at event-source sqs DeleteMessageBatch WebhookQueue",
		"b: lost at event-source sqs DeleteMessageBatch WebhookQueue",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	known := knownSites(discovery)
	if len(known) != 2 || len(known["a"]) != 2 || !known["a"][siteSecret] || !known["b"][siteDelete] || known["b"][siteRecord] {
		t.Errorf("known sites: got %v, want a's 2 and b's 2", known)
	}
}

// TestWithSecondMarksEveryCaseAndLeavesTheInput: the cases with a second
// event are the same cases, each marked; the singles stay single.
func TestWithSecondMarksEveryCaseAndLeavesTheInput(t *testing.T) {
	specs := []Spec{
		{World: World{Name: "a"}, Faults: []Fault{{Point: Point{Site: siteRecord, N: 1}, Kind: Fail}}},
		{World: World{Name: "b"}, Faults: []Fault{{Point: Point{Site: siteForward, N: 1}, Kind: Refuse}}},
	}
	got := withSecond(specs)
	if len(got) != 2 {
		t.Fatalf("got %d cases, want 2", len(got))
	}
	for i, s := range got {
		if !s.Second || s.World.Name != specs[i].World.Name || s.Faults[0] != specs[i].Faults[0] {
			t.Errorf("case %d: got %+v, want %+v with a second event", i, s, specs[i])
		}
		if specs[i].Second {
			t.Errorf("case %d: the input was marked too", i)
		}
	}
}

// TestPairsRunLongestFirstByTheirFirstFaultsSingle: a pair's estimate is
// its first fault's single case's time (half again with a second event);
// the longest start first, equal ones and a nil estimate keep their order.
func TestPairsRunLongestFirstByTheirFirstFaultsSingle(t *testing.T) {
	fast := Fault{Point: Point{Site: siteRecord, N: 1}, Kind: Fail}
	slow := Fault{Point: Point{Site: siteForward, N: 1}, Kind: Refuse}
	second := Fault{Point: Point{Site: siteRecord, N: 2}, Kind: Fail}
	w := World{Name: "a"}
	singles := []Result{
		{Spec: Spec{World: w, Faults: []Fault{fast}}, Elapsed: 2 * time.Second},
		{Spec: Spec{World: w, Faults: []Fault{slow}}, Elapsed: 80 * time.Second},
	}
	specs := []Spec{
		{World: w, Faults: []Fault{fast, second}},
		{World: w, Faults: []Fault{slow, second}},
		{World: w, Faults: []Fault{fast, second}, Second: true},
		{World: w, Faults: []Fault{fast, slow}},
		{World: World{Name: "unknown"}, Faults: []Fault{slow, second}},
	}
	est := singleTook(singles)
	if got, want := est(specs[2]), 3*time.Second; got != want {
		t.Errorf("a pair with a second event: estimate %v, want %v", got, want)
	}
	if got, want := fmt.Sprint(longestFirst(specs, est)), "[1 2 0 3 4]"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(longestFirst(specs, nil)), "[0 1 2 3 4]"; got != want {
		t.Errorf("with no estimate: order %s, want %s", got, want)
	}
}

// TestARaceWorldsSitesAreTheUnionOfItsRuns: a world's discovery is its
// first run, with the sites only its other runs called as RaceSites (in
// the order first called, each once); another world's runs add nothing.
func TestARaceWorldsSitesAreTheUnionOfItsRuns(t *testing.T) {
	a, b := World{Name: "a", Audit: true}, World{Name: "b"}
	call := func(s Site) Call { return Call{Point: Point{Site: s, N: 1}} }
	firsts := []Result{
		{Spec: Spec{World: a}, Calls: []Call{call(siteRecord), call(siteList)}},
		{Spec: Spec{World: b}, Calls: []Call{call(siteRecord)}},
	}
	others := []Result{
		{Spec: Spec{World: a}, Calls: []Call{call(siteRecord), call(siteForward)}},
		{Spec: Spec{World: b}, Calls: []Call{call(siteSecret)}},
		{Spec: Spec{World: a}, Calls: []Call{call(siteForward), call(siteDelete), call(siteList)}},
	}
	got := unionSites(firsts, others)
	if want := []Site{siteForward, siteDelete}; !slices.Equal(got[0].RaceSites, want) {
		t.Errorf("a's race sites: %v, want %v", got[0].RaceSites, want)
	}
	if want := []Site{siteRecord, siteList, siteForward, siteDelete}; !slices.Equal(got[0].Sites(), want) {
		t.Errorf("a's sites: %v, want %v", got[0].Sites(), want)
	}
	if want := []Site{siteRecord, siteSecret}; !slices.Equal(got[1].Sites(), want) {
		t.Errorf("b's sites: %v, want %v", got[1].Sites(), want)
	}
	if len(firsts[0].RaceSites) != 0 {
		t.Error("the input was changed")
	}
	specs := singlesOf(got[:1])
	for _, sp := range specs {
		if sp.Faults[0].Site == siteForward {
			return
		}
	}
	t.Errorf("no single fault at a race site: %v", specs)
}

// specsNamed are n cases of world name, told apart by their occurrence.
func specsNamed(name string, n int) []Spec {
	var out []Spec
	for i := range n {
		out = append(out, Spec{World: World{Name: name}, Faults: []Fault{{Point: Point{Site: siteRecord, N: i + 1}, Kind: Fail}}})
	}
	return out
}

// TestPairsAreSampledTwoThirdsFromTheFaultPath: of a budget, two thirds
// are pairs whose second fault is on a call only the first one reaches,
// the rest others; what one side lacks the other fills; -1 takes all.
// The draw is a subset in the given order, the same for the same seed.
func TestPairsAreSampledTwoThirdsFromTheFaultPath(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		fault, others        int
		budget               int
		wantFault, wantTotal int
	}{
		{"both plenty", 30, 30, 9, 6, 9},
		{"the docs' run: 100 of 1489 and 31087", 1489, 31087, 100, 66, 100},
		{"few on the fault path: the others fill", 2, 30, 9, 2, 9},
		{"few others: the fault path fills", 30, 1, 9, 8, 9},
		{"too few of both", 2, 3, 9, 2, 5},
		{"every pair", 4, 7, -1, 4, 11},
		{"none", 4, 7, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fault, others := specsNamed("fault", tc.fault), specsNamed("other", tc.others)
			chosen, nf := choosePairs(rand.New(rand.NewPCG(1, 2)), fault, others, tc.budget)
			if nf != tc.wantFault || len(chosen) != tc.wantTotal {
				t.Fatalf("got %d pairs, %d on the fault path; want %d, %d", len(chosen), nf, tc.wantTotal, tc.wantFault)
			}
			for i, s := range chosen {
				if want := map[bool]string{true: "fault", false: "other"}[i < nf]; s.World.Name != want {
					t.Errorf("pair %d: from %s, want %s (the fault path's first)", i, s.World.Name, want)
				}
				if i > 0 && s.World.Name == chosen[i-1].World.Name && s.Faults[0].N <= chosen[i-1].Faults[0].N {
					t.Errorf("pair %d: not in the given order", i)
				}
			}
			again, _ := choosePairs(rand.New(rand.NewPCG(1, 2)), specsNamed("fault", tc.fault), specsNamed("other", tc.others), tc.budget)
			if len(again) != len(chosen) {
				t.Fatalf("the same seed drew %d, then %d", len(chosen), len(again))
			}
			for i := range again {
				if again[i].World.Name != chosen[i].World.Name || again[i].Faults[0] != chosen[i].Faults[0] {
					t.Errorf("the same seed drew another pair %d", i)
				}
			}
		})
	}
}

// handReport is a report built by hand: one world of three sites, its
// singles, two pairs and a case with a second event.
func handReport() *Report {
	w := World{Name: "stripe", Retry: RetryPolicies[event.ProviderStripe]}
	single := func(s Site, k Kind, outcome string) Result {
		return Result{Spec: Spec{World: w, Faults: []Fault{{Point: Point{Site: s, N: 1}, Kind: k}}}, Outcome: outcome}
	}
	person := OutcomePerson + " (" + string(event.StatusFailedPermanent) + ")"
	pair := func(outcome string) Result {
		return Result{Spec: Spec{World: w, Faults: []Fault{{Point: Point{Site: siteRecord, N: 1}, Kind: Fail}, {Point: Point{Site: siteForward, N: 1}, Kind: Refuse}}}, Outcome: outcome}
	}
	return &Report{
		Worlds: []World{w},
		Seed:   7,
		Discovery: []Result{{Spec: Spec{World: w}, Outcome: OutcomeProcessed, Calls: []Call{
			{Point: Point{Site: siteRecord, N: 1}}, {Point: Point{Site: siteForward, N: 1}},
			{Point: Point{Site: siteDelete, N: 1}}, {Point: Point{Site: siteDelete, N: 2}},
		}}},
		Singles: []Result{
			single(siteRecord, Fail, OutcomeProcessed), single(siteRecord, Lost, OutcomeProcessed), single(siteRecord, Kill, OutcomeProcessed),
			single(siteForward, Fail, OutcomeProcessed), single(siteForward, Lost, OutcomeProcessed), single(siteForward, Kill, OutcomeProcessed),
			single(siteForward, Refuse, person),
			single(siteDelete, Fail, OutcomeProcessed), single(siteDelete, Lost, OutcomeProcessed),
		},
		Pairs:            []Result{pair(person), pair(OutcomeProcessed), pair(OutcomeProcessed)},
		FaultPathPairs:   4,
		OtherPairs:       6,
		SampledFaultPath: 2,
		Seconds: []Result{{Spec: Spec{World: w, Faults: []Fault{{Point: Point{Site: siteRecord, N: 1}, Kind: Kill}}, Second: true},
			Outcome: OutcomeProcessed, SecondOutcome: OutcomeProcessed}},
		Elapsed: 61 * time.Second,
	}
}

// TestTheReportRendersTheTableTheDocsShow: a report built by hand renders
// the header, the world's row, one row per site with each kind's outcome
// (– where it does not apply), the pairs' outcomes and the totals line,
// in docs/reliability.md's shape.
func TestTheReportRendersTheTableTheDocsShow(t *testing.T) {
	rep := handReport()
	if cases, lost, doubled, silent, disagree := rep.Totals(); cases != 13 || lost+doubled+silent+disagree != 0 {
		t.Errorf("totals: got %d cases, %d lost, %d doubled, %d silent, %d disagree; want 13 and none broken", cases, lost, doubled, silent, disagree)
	}
	if got, want := rep.TotalsLine(), "13 cases, 0 lost, 0 doubled, 0 silent"; got != want {
		t.Errorf("totals line: got %q, want %q", got, want)
	}
	if got := rep.Failed(); len(got) != 0 {
		t.Errorf("failed: got %d cases, want none", len(got))
	}
	var buf bytes.Buffer
	rep.Markdown(&buf)
	md := buf.String()
	for _, want := range []string{
		"3 failure points discovered in 1 worlds (an audit world's from three fault-free runs: its audit racing the event, first, and after it). 9 cases of one fault; 3 of two, sampled with seed 7 from the 10 pairs on one event's path: 2 of the 4 whose second fault is on a call only the first one reaches, 1 of the other 6. Run in 1m1s.\n",
		"| stripe | " + RetryPolicies[event.ProviderStripe].Says + " | 3 | 4 |\n",
		"**stripe**\n\n| function | service | call | fail | lost | kill | refuse |\n|---|---|---|---|---|---|---|\n",
		"| receiver | dynamodb | `PutItem Events.record` | processed | processed | processed | – |\n",
		"| processor | app | `POST /forward` | processed | processed | processed | needs a person (failed_permanent) |\n",
		"| event-source | sqs | `DeleteMessageBatch WebhookQueue` | processed | processed | – | – |\n",
		"Pairs of faults (3 run of 10): 1 needs a person (failed_permanent); 2 processed;\n",
		"| stripe | 1 | 1 processed / processed |\n",
		"\n13 cases, 0 lost, 0 doubled, 0 silent.\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report has no %q:\n%s", want, md)
		}
	}
	if !strings.HasSuffix(md, "13 cases, 0 lost, 0 doubled, 0 silent.\n") {
		t.Errorf("the report does not end with the totals line:\n%s", md)
	}
}

// TestABrokenCaseIsCountedAndListed: a lost pair, an error, a doubled
// single and a disagreeing one count in the totals (an error as lost),
// are listed, and the totals line names the disagreement.
func TestABrokenCaseIsCountedAndListed(t *testing.T) {
	rep := handReport()
	rep.Pairs[1].Lost, rep.Pairs[1].Why = true, "no record after 1 attempts (acknowledged: true)"
	rep.Pairs[2].Err = "read the record: boom"
	rep.Singles[0].Doubled, rep.Singles[0].Why = true, "the ledger counts 2 commits"
	rep.Singles[1].Disagree, rep.Singles[1].Why = true, "dead_lettered, and its message is not in the DLQ"
	cases, lost, doubled, silent, disagree := rep.Totals()
	if cases != 13 || lost != 2 || doubled != 1 || silent != 0 || disagree != 1 {
		t.Errorf("totals: got %d cases, %d lost, %d doubled, %d silent, %d disagree; want 13, 2, 1, 0, 1", cases, lost, doubled, silent, disagree)
	}
	if n := len(rep.Failed()); n != 4 {
		t.Errorf("failed: got %d cases, want 4", n)
	}
	var buf bytes.Buffer
	rep.Markdown(&buf)
	md := buf.String()
	for _, want := range []string{
		"| receiver | dynamodb | `PutItem Events.record` | **DOUBLED**: the ledger counts 2 commits | **DLQ DISAGREES**: dead_lettered, and its message is not in the DLQ | processed | – |\n",
		"Pairs of faults (3 run of 10): 1 needs a person (failed_permanent);\n",
		"- stripe: fail at receiver dynamodb PutItem Events.record then refuse at processor app POST /forward: **LOST**: no record after 1 attempts (acknowledged: true)\n",
		"- stripe: fail at receiver dynamodb PutItem Events.record then refuse at processor app POST /forward: **ERROR**: read the record: boom\n",
		"\n13 cases, 2 lost, 1 doubled, 0 silent, 1 where the store and the DLQ disagree.\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report has no %q:\n%s", want, md)
		}
	}
}

// TestACellNamesTheFirstBrokenInvariant: an error, then lost, doubled,
// silent and a disagreement, in that order; an unreached point says so.
func TestACellNamesTheFirstBrokenInvariant(t *testing.T) {
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{Result{Outcome: OutcomeProcessed}, "processed"},
		{Result{Outcome: OutcomeProcessed, Unfired: []Fault{{Kind: Fail}}}, "processed (point not reached)"},
		{Result{Err: "e", Lost: true, Why: "w"}, "**ERROR**: e"},
		{Result{Lost: true, Doubled: true, Why: "w"}, "**LOST**: w"},
		{Result{Doubled: true, Silent: true, Why: "w"}, "**DOUBLED**: w"},
		{Result{Silent: true, Disagree: true, Why: "w"}, "**SILENT**: w"},
		{Result{Disagree: true, Why: "w"}, "**DLQ DISAGREES**: w"},
	} {
		if got := cell(tc.r); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.r, got, tc.want)
		}
	}
}

// TestJudgingOneEvent feeds judge what the check observed of an event, by
// hand: each invariant's decision, and the outcome when all held.
func TestJudgingOneEvent(t *testing.T) {
	stripe := World{Name: "stripe", Provider: event.ProviderStripe, APIKey: true, Retry: RetryPolicies[event.ProviderStripe]}
	noKey := World{Name: "stripe-no-api-key", Provider: event.ProviderStripe, Retry: RetryPolicies[event.ProviderStripe]}
	thin := World{Name: "stripe-thin", Provider: event.ProviderStripe, APIKey: true, Thin: true, Retry: RetryPolicies[event.ProviderStripe]}
	github := World{Name: "github", Provider: "github", Retry: RetryPolicy{Redelivers: true}}
	shopify := World{Name: "shopify", Provider: "shopify"}
	rec := func(st event.Status) event.Record {
		return event.Record{Status: st, Payload: []byte(`{}`), Attempts: 2, LastError: "boom"}
	}
	processed, pending := rec(event.StatusProcessed), rec(event.StatusReceived)
	permanent, dead := rec(event.StatusFailedPermanent), rec(event.StatusDeadLettered)
	omitted := rec(event.StatusFailedPermanent)
	omitted.Payload, omitted.PayloadOmitted = nil, true
	discarded := rec(event.StatusDeadLettered)
	discarded.DiscardedAt = time.Unix(1, 0)
	person := func(st event.Status) string { return OutcomePerson + " (" + string(st) + ")" }
	left := `left received (attempts 2, last error "boom")`

	for _, tc := range []struct {
		name string
		w    World
		o    observed
		want Result
	}{
		{"processed, its effect once", stripe, observed{rec: processed, found: true, commits: 1, keys: []string{"evt_1:forward"}}, Result{Outcome: OutcomeProcessed}},
		{"ignored, no effect", shopify, observed{rec: rec(event.StatusIgnored), found: true}, Result{Outcome: OutcomeProcessed}},
		{"processed, no effect committed", stripe, observed{rec: processed, found: true}, Result{Outcome: OutcomeProcessed, Lost: true, Why: "processed, but its effects never committed"}},
		{"an effect committed twice", stripe, observed{rec: processed, found: true, commits: 2}, Result{Outcome: OutcomeProcessed, Doubled: true, Why: "the ledger counts 2 commits"}},
		{"two keys for one effect", shopify, observed{rec: processed, found: true, commits: 1, keys: []string{"shopify#1:a:notify", "shopify#1:b:notify", "shopify#1:ledger"}}, Result{Outcome: OutcomeProcessed, Doubled: true, Why: "two idempotency keys for one effect"}},
		{"no record, acknowledged", shopify, observed{acked: true, attempts: 3}, Result{Lost: true, Why: "no record after 3 attempts (acknowledged: true)"}},
		{"no record, unacknowledged, the reconciler lists it", stripe, observed{attempts: 9}, Result{Lost: true, Why: "no record after 9 attempts (acknowledged: false)"}},
		{"no record, unacknowledged, GitHub redelivers it", github, observed{attempts: 1}, Result{Lost: true, Why: "no record after 1 attempts (acknowledged: false)"}},
		{"no record, unacknowledged, nothing would repair it", shopify, observed{attempts: 8}, Result{Outcome: OutcomeUnacked}},
		{"no record, unacknowledged, no key", noKey, observed{attempts: 8}, Result{Outcome: OutcomeUnacked}},
		{"no record, unacknowledged, thin (never listed)", thin, observed{attempts: 8}, Result{Outcome: OutcomeUnacked}},
		{"failed_permanent, counted by an alarm's metric", stripe, observed{rec: permanent, found: true, alarmed: true}, Result{Outcome: person(event.StatusFailedPermanent)}},
		{"failed_permanent, no alarm", stripe, observed{rec: permanent, found: true}, Result{Outcome: person(event.StatusFailedPermanent), Silent: true,
			Why: string(event.StatusFailedPermanent) + ", and no metric an alarm watches counted it"}},
		{"failed_permanent, no payload", shopify, observed{rec: event.Record{Status: event.StatusFailedPermanent}, found: true, alarmed: true}, Result{Outcome: person(event.StatusFailedPermanent), Lost: true,
			Why: string(event.StatusFailedPermanent) + " without a payload to redrive"}},
		{"failed_permanent, payload omitted, readable from Stripe", stripe, observed{rec: omitted, found: true, alarmed: true}, Result{Outcome: person(event.StatusFailedPermanent)}},
		{"failed_permanent, payload omitted, no key", noKey, observed{rec: omitted, found: true, alarmed: true}, Result{Outcome: person(event.StatusFailedPermanent), Lost: true,
			Why: string(event.StatusFailedPermanent) + " without a payload to redrive"}},
		{"dead-lettered, in the DLQ", stripe, observed{rec: dead, found: true, inDLQ: 1, alarmed: true}, Result{Outcome: person(event.StatusDeadLettered)}},
		{"dead-lettered, not in the DLQ", stripe, observed{rec: dead, found: true, alarmed: true}, Result{Outcome: person(event.StatusDeadLettered), Disagree: true,
			Why: "dead_lettered, and its message is not in the DLQ"}},
		{"dead-lettered and discarded, not in the DLQ", stripe, observed{rec: discarded, found: true, alarmed: true}, Result{Outcome: person(event.StatusDeadLettered)}},
		{"in the DLQ, its record processed (a stale copy)", stripe, observed{rec: processed, found: true, commits: 1, inDLQ: 1}, Result{Outcome: OutcomeProcessed}},
		{"in the DLQ, its record not final", shopify, observed{rec: pending, found: true, inDLQ: 1}, Result{Disagree: true, Silent: true, Why: left}},
		{"in the DLQ, no record", shopify, observed{inDLQ: 2}, Result{Outcome: OutcomeUnacked, Disagree: true, Why: "its message is in the DLQ, its record missing"}},
		{"left unfinished, acknowledged", shopify, observed{rec: pending, found: true, acked: true}, Result{Lost: true, Why: left}},
		{"left unfinished, unacknowledged, nothing would repair it", shopify, observed{rec: pending, found: true}, Result{Silent: true, Why: left}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judge(tc.w, tc.o)
			g := [6]any{got.Outcome, got.Lost, got.Doubled, got.Silent, got.Disagree, got.Why}
			w := [6]any{tc.want.Outcome, tc.want.Lost, tc.want.Doubled, tc.want.Silent, tc.want.Disagree, tc.want.Why}
			if g != w {
				t.Errorf("got outcome, lost, doubled, silent, disagree, why %q\nwant %q", g, w)
			}
		})
	}
}

// TestAnEventsKeysAreItsProvidersAndIts: a Stripe event's keys start
// with its id, another provider's with the provider and its id.
func TestAnEventsKeysAreItsProvidersAndIts(t *testing.T) {
	if got := keyPrefix(event.ProviderStripe, "evt_1"); got != "evt_1:" {
		t.Errorf("stripe: got %q, want evt_1:", got)
	}
	if got := keyPrefix("github", "g-1"); got != "github#g-1:" {
		t.Errorf("github: got %q, want github#g-1:", got)
	}
}

package cost

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// plain is the meter's plain run against the emulator (no consumed
// capacity asked for), measured once for every test that reads it: a run
// is most of this package's time.
var plain struct {
	once sync.Once
	rep  *Report
	err  error
}

// measured returns the plain run's report.
func measured(t *testing.T) *Report {
	t.Helper()
	opts := Options{Endpoints: testenv.Endpoints(t), Template: testenv.TemplatePath(t), Samples: 3}
	plain.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		plain.rep, plain.err = Measure(ctx, opts)
	})
	if plain.err != nil {
		t.Fatal(plain.err)
	}
	return plain.rep
}

// The meter, run against the emulator, gives a non-zero table whose figures
// agree with each other. It prints figures; it asserts no timing.
func TestMeterAgainstTheEmulator(t *testing.T) {
	rep := measured(t)

	for _, size := range rep.Sizes {
		newEvent := rep.Scenario(ScenarioNew, size)
		if newEvent.WRU() == 0 || newEvent.RRU() == 0 {
			t.Fatalf("%s: a new event: got %d WRU and %v RRU, want both above zero", size.Name, newEvent.WRU(), newEvent.RRU())
		}
		for _, sc := range []string{ScenarioDupDeliver, ScenarioDupMessage} {
			if got := rep.Scenario(sc, size).WRU(); got == 0 || got >= newEvent.WRU() {
				t.Errorf("%s: %s: got %d WRU, want more than 0 and fewer than a new event's %d", size.Name, sc, got, newEvent.WRU())
			}
		}
		if got := rep.Scenario(ScenarioRetried, size).WRU(); got <= newEvent.WRU() {
			t.Errorf("%s: a failed-then-retried event: got %d WRU, want more than a new event's %d", size.Name, got, newEvent.WRU())
		}
		if got := rep.Scenario(ScenarioSuperseded, size).WRU(); got == 0 {
			t.Errorf("%s: a superseded event: got 0 WRU", size.Name)
		}
		total := 0.0
		for _, l := range rep.Money[size.Name] {
			total += l.USD
		}
		if rep.PerMillion[size.Name] <= 0 || total != rep.PerMillion[size.Name] {
			t.Errorf("%s: $ per million: got total %v, lines summing to %v", size.Name, rep.PerMillion[size.Name], total)
		}
	}
	// GitHub signs the body only: the receiver claims each body before it
	// stores the event, one small write, and a replay costs that write
	// alone (its failed condition).
	receiverWrites := func(sc *ScenarioCost) (n, wru int) {
		for _, st := range sc.Steps {
			if st.Function == "receiver" && st.Key != "" {
				n++
				wru += st.WRU
			}
		}
		return n, wru
	}
	if n, wru := receiverWrites(rep.GitHub[ScenarioGitHubNew]); n != 3 || wru != 3 {
		t.Errorf("a new GitHub delivery: the receiver wrote %d items, %d WRU; want 3 and 3 (the body's claim, the record, its payload)", n, wru)
	}
	if n, wru := receiverWrites(rep.GitHub[ScenarioGitHubRedelivery]); n != 2 || wru != 2 {
		t.Errorf("a GitHub redelivery: the receiver wrote %d items, %d WRU; want 2 and 2 (the claim and the record, both failed conditions)", n, wru)
	}
	if got := rep.GitHub[ScenarioGitHubReplay]; got.WRU() != 1 || len(got.Steps) != 1 {
		t.Errorf("a replayed GitHub body: got %d WRU in %d steps, want 1 in 1 (the claim's failed condition)", got.WRU(), len(got.Steps))
	}
	// The EventBridge route: the same ingest writes and processing as a
	// webhook, by the bridge; priced with the partner event and the
	// ingress queue's requests, beside the API Gateway route.
	for _, size := range rep.Sizes {
		eb := rep.Scenario(ScenarioEventBridge, size)
		bridged := false
		for _, st := range eb.Steps {
			bridged = bridged || st.Function == "bridge"
		}
		if !bridged || eb.WRU() == 0 {
			t.Errorf("%s: a new event by EventBridge: %d WRU, steps %+v; want the bridge's writes", size.Name, eb.WRU(), eb.Steps)
		}
		lines := map[string]float64{}
		total := 0.0
		for _, l := range rep.EventBridgeMoney[size.Name] {
			lines[strings.Fields(l.What)[0]] += l.USD
			total += l.USD
		}
		if lines["EventBridge"] != price("eventbridge.partner") || lines["SQS"] <= 0 || lines["Lambda"] <= 0 || lines["DynamoDB"] <= 0 ||
			total != rep.EventBridgePerMillion[size.Name] {
			t.Errorf(
				"%s: the EventBridge route's lines %v (total %v, reported %v): want the partner event, SQS, Lambda and DynamoDB, summing to the total",
				size.Name,
				lines,
				total,
				rep.EventBridgePerMillion[size.Name],
			)
		}
	}
	if small, large := rep.Scenario(ScenarioNew, Small).WRU(), rep.Scenario(ScenarioNew, Large).WRU(); small >= large {
		t.Errorf("a new 2.6 KB event: got %d WRU, a 7.3 KB one %d: want fewer", small, large)
	}

	// Every index the template defines is written by new events.
	tmpl, err := template.Load(testenv.TemplatePath(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := LoadSchema(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]int{}
	for _, size := range rep.Sizes {
		for ix, u := range rep.Scenario(ScenarioNew, size).IndexWRU() {
			written[ix] += u
		}
	}
	// The accounts' index is written by a connected account's first
	// event: its item, 1 WRU, and its index entry, 1, beside a new event's.
	for ix, u := range rep.Connect.IndexWRU() {
		written[ix] += u
	}
	if got, want := rep.Connect.WRU(), rep.Scenario(ScenarioNew, Small).WRU()+2; got != want {
		t.Errorf("a connected account's first event: got %d WRU, want %d (a new event's and the account's item and index entry)", got, want)
	}
	for _, name := range schema.Names() {
		for _, ix := range schema.Tables[name].Indexes {
			if written[ix.Name] == 0 {
				t.Errorf("index %s of %s: no write units recorded for new events (got %v)", ix.Name, name, written)
			}
		}
	}

	// The hottest key of the events table is one event's own: it receives
	// exactly that event's table writes.
	// The units of each of the event's own keys: the record's and its
	// payload's, in the events table.
	keyWRU := map[string]int{}
	tableWRU := map[string]int{}
	for _, st := range rep.Scenario(ScenarioNew, Small).Steps {
		if st.Key != "" {
			keyWRU[st.Table+" "+st.Key] += st.WRU
			tableWRU[st.Table] = max(tableWRU[st.Table], keyWRU[st.Table+" "+st.Key])
		}
	}
	hot := map[string]HotKey{}
	for _, h := range rep.Hot {
		hot[h.Target] = h
	}
	for _, name := range schema.Names() {
		h, ok := hot[name]
		if !ok {
			t.Errorf("no hot key for table %s", name)
			continue
		}
		if h.Shared == 1 && int(h.UnitsPerSecond) != tableWRU[name] {
			t.Errorf(
				"%s: its hottest key is one event's, receiving %v units; the event wrote %d units to its busiest key of the table",
				name,
				h.UnitsPerSecond,
				tableWRU[name],
			)
		}
	}
	if rep.Hottest().UnitsPerSecond <= 0 {
		t.Error("no hottest key")
	}
	if rep.ReconcilerRuns < 1 || len(rep.Metrics) == 0 || len(rep.Fixed) == 0 {
		t.Errorf("got %.1f reconciler runs per event, %d metrics, %d fixed lines; want all above zero", rep.ReconcilerRuns, len(rep.Metrics), len(rep.Fixed))
	}

	var out bytes.Buffer
	rep.Print(&out)
	if !strings.Contains(out.String(), "API Gateway 2.6 KB  EventBridge 2.6 KB") {
		t.Errorf("the report sets no EventBridge route beside the API Gateway one:\n%s", out.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	last := lines[len(lines)-3:]
	for i, re := range []*regexp.Regexp{
		regexp.MustCompile(`^WRU per processed event \(2\.6 KB\): [1-9][0-9]*$`),
		regexp.MustCompile(`^total per million events \(2\.6 KB\): \$[0-9]+\.[0-9]{2}$`),
		regexp.MustCompile(`^hottest key at 3000 events/s: [1-9][0-9]* write units/s$`),
	} {
		if !re.MatchString(last[i]) {
			t.Errorf("line %d from the end: got %q, want it to match %s", 3-i, last[i], re)
		}
	}
}

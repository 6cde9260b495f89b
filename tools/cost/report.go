package cost

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// secondsPerMonth is a 30-day month, the month the monthly figures use.
const secondsPerMonth = 30 * 24 * 3600

// Volumes are the monthly volumes the fixed cost and the alternatives are
// shown at.
var Volumes = []float64{1e6, 10e6}

// Report is what Measure found.
type Report struct {
	// Against names what was measured: the emulator, or AWS.
	Against string
	// Consumed compares the meter's units with the reported ones, per
	// scenario, when Options.Consumed asked for them.
	Consumed []Consumption
	Rate     float64
	Samples  int
	// TieRate is the share of events priced as ties (Options.TieRate);
	// TieReads each size's reads of Stripe's API in ScenarioTie.
	TieRate  float64
	TieReads map[string]int
	// Audit is what a daily audit run costs (AuditCost).
	Audit AuditCost
	// TieWaitUSD is the processor's Lambda duration while one read of
	// Stripe's API is in flight, at TieRoundTrip.
	TieWaitUSD float64
	Sizes      []EventSize
	// Bytes is each size's payload, in bytes.
	Bytes map[string]int
	// Scenarios holds each scenario's steps, by label(scenario, size).
	Scenarios map[string]*ScenarioCost
	// GitHub holds each GitHub scenario's steps (GitHubScenarios), by
	// scenario.
	GitHub map[string]*ScenarioCost
	// Connect is ScenarioConnectFirst's steps.
	Connect *ScenarioCost
	// ReconcilerRuns is how many scheduled runs compare each event, on
	// average: its overlap plus one period, over its period (1.2 for a
	// 2-minute overlap every 10 minutes: a fifth of the events are listed
	// by two runs).
	ReconcilerRuns float64
	reconcilerWhy  string
	// Money is each size's dollars per million events, line by line.
	Money map[string][]MoneyLine
	// PerMillion is each size's total dollars per million events.
	PerMillion map[string]float64
	// Fixed is the monthly cost that does not grow with events.
	Fixed []MoneyLine
	// Monthly is the all-in monthly cost at each of Volumes (2.6 KB).
	Monthly []float64
	// Hot is the hottest key of each table and index at Rate.
	Hot []HotKey
	// Durations are the functions' measured durations, ms.
	ReceiverMs, ProcessorMs, ReconcilerMs float64
	// Metrics are the custom metrics the code emitted.
	Metrics []string
	// ObjectBytes is what the items without TTL (ObjectTables) store per
	// object, index entries included: they grow with objects, not events.
	ObjectBytes  float64
	ObjectTables []string
	// EventBridgeMoney is each size's dollars per million events arriving
	// by Stripe's EventBridge destination (ScenarioEventBridge), line by
	// line, and EventBridgePerMillion its total; both without X-Ray, as
	// RoutesNoXray gives the webhook route's.
	EventBridgeMoney      map[string][]MoneyLine
	EventBridgePerMillion map[string]float64
	// BridgeMs is the bridge's measured duration, ms an event.
	BridgeMs float64
	// BridgeMetrics are the custom metrics the bridge emitted, and
	// EventBridgeFixed what the destination adds to the monthly fixed cost
	// when it is on (Fixed is the default template's).
	BridgeMetrics    []string
	EventBridgeFixed []MoneyLine
	// ProcessorMB is the processor's memory, for the consumer of the
	// EventBridge route.
	ProcessorMB   int
	ProcessorArch string
	// XRayActive is what X-Ray costs per million events (at 1M and at 10M
	// a month) when every function's Tracing is Active, whatever the
	// template says: the price of turning it on.
	XRayActive     [2]float64
	TracingActive  bool
	notes          []string
	xray           func(events float64) float64
	perEventNoXray map[string]float64
}

// ScenarioCost is one scenario's requests, priced.
type ScenarioCost struct {
	Steps []Step
}

// Step is one priced request (one row per table it wrote).
type Step struct {
	N int
	// Key is the partition-key value of the base table's item a write
	// wrote ("pk=stripe#evt_1"); empty for a read.
	Key       string
	Function  string
	Operation string
	Table     string
	Outcome   Outcome
	Before    int // item bytes before the write (or read)
	After     int // item bytes after (or the would-be item)
	WRU       int
	Index     map[string]int
	RRU       float64
	Note      string
}

// WRU is the scenario's write units, tables and indexes.
func (s *ScenarioCost) WRU() int {
	n := 0
	for _, st := range s.Steps {
		n += st.WRU
		for _, u := range st.Index {
			n += u
		}
	}
	return n
}

// RRU is the scenario's read units.
func (s *ScenarioCost) RRU() float64 {
	var n float64
	for _, st := range s.Steps {
		n += st.RRU
	}
	return n
}

// IndexWRU is the scenario's write units on each index.
func (s *ScenarioCost) IndexWRU() map[string]int {
	out := map[string]int{}
	for _, st := range s.Steps {
		for ix, u := range st.Index {
			out[ix] += u
		}
	}
	return out
}

// MoneyLine is one line of a cost.
type MoneyLine struct {
	What string
	USD  float64
	How  string
}

// HotKey is the busiest partition-key value of a table or index.
type HotKey struct {
	Target string
	Key    string
	// UnitsPerSecond is the write units a second the key receives at Rate.
	UnitsPerSecond float64
	// Shared is how many of the sampled events wrote it.
	Shared int
}

// Scenario returns a scenario's cost for a size.
func (r *Report) Scenario(scenario string, size EventSize) *ScenarioCost {
	return r.Scenarios[label(scenario, size)]
}

// Hottest is the hottest key of all.
func (r *Report) Hottest() HotKey {
	var h HotKey
	for _, k := range r.Hot {
		if k.UnitsPerSecond > h.UnitsPerSecond {
			h = k
		}
	}
	return h
}

// TieRoundTrip is the time a read of Stripe's API is assumed to take from
// Lambda: the stand-in answers on the loopback in well under a
// millisecond, so the meter cannot measure it; Stripe's API answers a
// retrieve in a few hundred milliseconds at worst, typically less.
const TieRoundTrip = 300 * time.Millisecond

// TieCost is what ties add per million events of size at r.TieRate: the
// write and read units of ScenarioTie beyond ScenarioNew's, in dollars
// with the processor's wait for Stripe, and the reads of Stripe's API
// (Stripe charges nothing for them; they count against its rate limit).
func (r *Report) TieCost(size EventSize) (wru int, rru, usd, reads float64) {
	tie, fresh := r.Scenario(ScenarioTie, size), r.Scenario(ScenarioNew, size)
	wru, rru = tie.WRU()-fresh.WRU(), tie.RRU()-fresh.RRU()
	perTie := float64(wru)*price("ddb.write")/1e6 + rru*price("ddb.read")/1e6 + r.TieWaitUSD
	reads = r.TieRate * 1e6 * float64(r.TieReads[size.Name])
	return wru, rru, r.TieRate * 1e6 * perTie, reads
}

// fill prices what the meter recorded.
func (m *meter) fill(rep *Report, run reconcilerRun) error {
	rep.Bytes = map[string]int{}
	rep.TieReads = m.apiReads
	rep.TieWaitUSD = price("lambda."+m.arch(devstack.ProcessorID)) * float64(m.memoryMB(devstack.ProcessorID)) / 1024 * TieRoundTrip.Seconds()
	rep.Scenarios = map[string]*ScenarioCost{}
	rep.Money = map[string][]MoneyLine{}
	rep.PerMillion = map[string]float64{}
	rep.perEventNoXray = map[string]float64{}
	rep.ReceiverMs, rep.ProcessorMs, rep.ReconcilerMs = median(m.recvMs), median(m.procMs), run.ms
	rep.ProcessorMB, rep.ProcessorArch = m.memoryMB(devstack.ProcessorID), m.arch(devstack.ProcessorID)

	var err error
	rep.ReconcilerRuns, rep.reconcilerWhy, err = m.reconcilerRuns()
	if err != nil {
		return err
	}
	m.scenarioCosts(rep)
	for name, n := range m.bytes {
		rep.Bytes[name] = n
	}
	rep.Metrics, rep.BridgeMetrics = metricsOf(m.logs.Lines(""))

	rep.xray = m.xray(false)
	active := m.xray(true)
	rep.XRayActive = [2]float64{active(1e6), active(10e6) / 10}
	rep.TracingActive = rep.xray(1e6) > 0
	for _, size := range rep.Sizes {
		lines := m.money(rep, size)
		rep.Money[size.Name] = lines
		rep.PerMillion[size.Name] = total(lines)
	}
	rep.BridgeMs = median(m.bridgeMs)
	rep.EventBridgeMoney = map[string][]MoneyLine{}
	rep.EventBridgePerMillion = map[string]float64{}
	for _, size := range rep.Sizes {
		lines := m.moneyEventBridge(rep, size)
		rep.EventBridgeMoney[size.Name] = lines
		rep.EventBridgePerMillion[size.Name] = total(lines)
	}
	rep.Fixed = m.fixed(rep, run)
	rep.EventBridgeFixed = m.fixedEventBridge(rep)
	fixed := total(rep.Fixed)
	for _, v := range Volumes {
		rep.Monthly = append(rep.Monthly, fixed+rep.perEventNoXray[Small.Name]*v/1e6+rep.xray(v))
	}
	rep.Hot = m.hotKeys(rep)
	return nil
}

// total is the sum of lines' dollars, in order.
func total(lines []MoneyLine) float64 {
	t := 0.0
	for _, l := range lines {
		t += l.USD
	}
	return t
}

// scenarioCosts prices each scenario's recorded calls, with the
// reconciler's comparisons of the records it created.
func (m *meter) scenarioCosts(rep *Report) {
	compared := m.rec.Calls(labelReconcile)
	for _, size := range rep.Sizes {
		for _, sc := range Scenarios {
			l := label(sc, size)
			rep.Scenarios[l] = m.scenarioCost(m.rec.Calls(l), compared, rep.ReconcilerRuns)
		}
	}
	rep.GitHub = map[string]*ScenarioCost{}
	for _, sc := range GitHubScenarios {
		rep.GitHub[sc] = m.scenarioCost(m.rec.Calls(sc), compared, rep.ReconcilerRuns)
	}
	rep.Connect = m.scenarioCost(m.rec.Calls(ScenarioConnectFirst), compared, rep.ReconcilerRuns)
}

// metricsOf are the custom metrics the log lines declared, sorted: every
// metric a line declared, in any scenario but GitHub's and Connect's (the
// fixed cost is a Stripe-only deployment's, and each outcome another
// provider adds is one more, as the report says); the bridge's apart, as
// it runs only with the EventBridge destination on.
func metricsOf(lines []LogLine) (metrics, bridge []string) {
	seen, bridged := map[string]bool{}, map[string]bool{}
	for _, l := range lines {
		if slices.Contains(GitHubScenarios, l.Label) || l.Label == ScenarioConnectFirst {
			continue
		}
		for _, id := range l.Metrics {
			if l.Function == "bridge" {
				bridged[id] = true
			} else {
				seen[id] = true
			}
		}
	}
	for id := range seen {
		metrics = append(metrics, id)
	}
	sort.Strings(metrics)
	for id := range bridged {
		bridge = append(bridge, id)
	}
	sort.Strings(bridge)
	return metrics, bridge
}

// reconcilerRuns is how many scheduled runs list each event: a run lists
// from its previous window's end less the overlap up to now (less the
// settling time), so an event is listed by the runs within one period plus
// the overlap after it.
func (m *meter) reconcilerRuns() (float64, string, error) {
	f, err := m.tmpl.Function(devstack.ReconcilerID)
	if err != nil {
		return 0, "no reconciler in the template", nil
	}
	expr, ok := f.Schedule()
	if !ok {
		return 0, "the reconciler has no schedule", nil
	}
	every, err := devstack.ScheduleInterval(expr)
	if err != nil {
		return 0, "", fmt.Errorf("cost: reconciler schedule: %w", err)
	}
	overlap := reconcile.DefaultOverlap
	if v := m.env[devstack.ReconcilerID]["RECONCILE_OVERLAP"]; v != "" {
		if overlap, err = time.ParseDuration(v); err != nil {
			return 0, "", fmt.Errorf("cost: RECONCILE_OVERLAP=%q: %w", v, err)
		}
	}
	runs := (overlap + every).Seconds() / every.Seconds()
	return runs, fmt.Sprintf("overlap %s + period %s, every %s", overlap, every, every), nil
}

// scenarioCost turns a scenario's calls into steps, and adds the
// reconciler's comparisons of the event records the scenario created.
func (m *meter) scenarioCost(calls, compared []Call, runs float64) *ScenarioCost {
	sc := &ScenarioCost{}
	created := map[string]bool{}
	n := 0
	for _, c := range calls {
		if c.Service != "DynamoDB" {
			continue
		}
		n++
		for _, w := range c.Writes {
			st := Step{N: n, Function: c.Function, Operation: c.Operation, Table: w.Table, Outcome: w.Outcome, Key: firstKey(w.Charge),
				Before: ItemSize(w.Before), After: ItemSize(w.After), WRU: w.Charge.Table, Index: map[string]int{}}
			for ix, u := range w.Charge.Index {
				st.Index[ix] = u
			}
			if w.Outcome == Cancelled {
				st.Note = "cancelled transaction: billed once per item (assumption)"
			}
			sc.Steps = append(sc.Steps, st)
			if w.Outcome == Applied && w.Before == nil && len(w.Charge.Keys) > 0 {
				created[w.Charge.Keys[0].Target+" "+w.Charge.Keys[0].Key] = true
			}
		}
		reads := map[string]*Step{}
		var order []string
		for _, r := range c.Reads {
			st, ok := reads[r.Target]
			if !ok {
				st = &Step{N: n, Function: c.Function, Operation: c.Operation, Table: r.Target}
				reads[r.Target] = st
				order = append(order, r.Target)
			}
			st.Before += r.Size
			st.RRU += r.Units
		}
		for _, t := range order {
			sc.Steps = append(sc.Steps, *reads[t])
		}
	}
	// Every scheduled run whose window covers an event compares it again.
	per := map[string]float64{}
	var order []string
	for _, c := range compared {
		for _, r := range c.Reads {
			if r.Key != "" && created[r.Target+" "+r.Key] {
				if _, ok := per[r.Target]; !ok {
					order = append(order, r.Target)
				}
				per[r.Target] += r.Units
			}
		}
	}
	for _, t := range order {
		n++
		sc.Steps = append(sc.Steps, Step{N: n, Function: "reconciler", Operation: "BatchGetItem", Table: t,
			RRU: per[t] * runs, Note: fmt.Sprintf("× %.1f scheduled runs", runs)})
	}
	return sc
}

// memoryMB is a function's MemorySize (Lambda's default, 128, when the
// template sets none).
func (m *meter) memoryMB(id string) int {
	if mb, ok := template.Int(m.functionProperty(id, "MemorySize")); ok {
		return mb
	}
	return 128
}

// arch is a function's architecture in the template: arm64 or x86_64
// (Lambda's default).
func (m *meter) arch(id string) string {
	if archs, ok := m.functionProperty(id, "Architectures").([]any); ok && len(archs) > 0 && archs[0] == "arm64" {
		return "arm64"
	}
	return "x86_64"
}

// hotKeys finds, from the sampled new events, the write units a second the
// busiest partition-key value of each table and index receives at Rate.
//
// The samples take the same path, so their writes line up: the k-th key
// write of each sample is the same write of the code. A write whose key
// value differs in every sample lands on a key of one event (an event id,
// an object): that key receives that event's units, once. A write whose
// key value repeats across the samples lands on a key events share (a
// day, a provider, a shard): its values share the Rate between them, so
// each receives Rate × units / (distinct values seen); for a key all
// events share, all of the Rate.
func (m *meter) hotKeys(rep *Report) []HotKey {
	var samples []keySample
	for i := range rep.Samples {
		var s keySample
		for _, c := range m.rec.Calls(fmt.Sprintf("%s%d", labelSample, i)) {
			for _, w := range c.Writes {
				s = append(s, w.Charge.Keys...)
			}
		}
		samples = append(samples, s)
	}
	hot, left := estimateHotKeys(samples, rep.Rate)
	if left > 0 {
		rep.notes = append(rep.notes, fmt.Sprintf("hot keys: %d of %d sampled events took another path and were left out", left, len(samples)))
	}
	return hot
}

// estimateHotKeys is hotKeys' estimate from the samples' key writes. It
// uses the samples that took the most common path, and returns how many
// it left out.
func estimateHotKeys(samples []keySample, rate float64) ([]HotKey, int) {
	sig := map[string]int{}
	signature := func(s keySample) string {
		var b strings.Builder
		for _, k := range s {
			b.WriteString(k.Target + "/" + k.Role + ";")
		}
		return b.String()
	}
	for _, s := range samples {
		sig[signature(s)]++
	}
	best, bestN := "", 0
	for s, n := range sig {
		if n > bestN || (n == bestN && s < best) {
			best, bestN = s, n
		}
	}
	var same []keySample
	for _, s := range samples {
		if signature(s) == best {
			same = append(same, s)
		}
	}
	if len(same) == 0 {
		return nil, len(samples)
	}
	type kv struct{ target, key string }
	perSecond := map[kv]float64{}
	sharedBy := map[kv]map[int]bool{}
	k := len(same)
	for pos := range same[0] {
		distinct := map[string]bool{}
		units := 0
		for _, s := range same {
			distinct[s[pos].Key] = true
			units += s[pos].Units
		}
		avg := float64(units) / float64(k)
		for i, s := range same {
			x := kv{s[pos].Target, s[pos].Key}
			if sharedBy[x] == nil {
				sharedBy[x] = map[int]bool{}
			}
			sharedBy[x][i] = true
			if len(distinct) == k && k > 1 {
				perSecond[x] += float64(s[pos].Units) // one event's key
				continue
			}
			// Shared by several: the value's share of the rate, counted
			// once per value, not once per sample that wrote it.
			if firstWith(same, pos, s[pos].Key) == i {
				perSecond[x] += rate * avg / float64(len(distinct))
			}
		}
	}
	hottest := map[string]HotKey{}
	for x, r := range perSecond {
		h := hottest[x.target]
		if r > h.UnitsPerSecond || (r == h.UnitsPerSecond && x.key < h.Key) {
			hottest[x.target] = HotKey{Target: x.target, Key: x.key, UnitsPerSecond: r, Shared: len(sharedBy[x])}
		}
	}
	var out []HotKey
	for _, h := range hottest {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out, len(samples) - len(same)
}

// keySample is one sampled event's key writes, in the order made.
type keySample []KeyWrite

func firstWith(samples []keySample, pos int, key string) int {
	for i, s := range samples {
		if s[pos].Key == key {
			return i
		}
	}
	return -1
}

// firstKey is the base table's partition-key value a charge names.
func firstKey(c Charge) string {
	if len(c.Keys) == 0 {
		return ""
	}
	return c.Keys[0].Key
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

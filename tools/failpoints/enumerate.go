package failpoints

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// Options configure an enumeration.
type Options struct {
	// Emulators are the AWS emulators' endpoints, one or more: each case
	// runs on one of them, the workers spread evenly over them. An
	// emulator serializes its DynamoDB requests (tools/emulator/motoserver.py), so one
	// per core lets a many-core machine run more cases at once.
	Emulators []emulator.Endpoints
	// Root is the repository's root (template.yaml, the samples).
	Root string
	// Worlds are the worlds enumerated; Worlds() when nil.
	Worlds []World
	// Pairs is how many pairs of faults are run, sampled with Seed from
	// every pair on one event's path (the calls a single fault's case made
	// after it); 0 runs none, a negative number all of them.
	Pairs int
	Seed  uint64
	// Second adds, for each single fault, the case where a second event
	// of the same object is in flight as the fault strikes (Spec.Second);
	// SecondPairs is how many pairs of faults are run with one too,
	// sampled with Seed from the pairs' whole set (0: none; a negative
	// number: every pair).
	Second      bool
	SecondPairs int
	// SecondSingles, when positive, runs the second event with that many
	// single faults only, sampled uniformly with Seed from all of them
	// (each world about its share): a bounded run, such as CI's, that
	// still meets faults of every world with a second event; the whole
	// dimension is the default (zero or negative: every single fault).
	SecondSingles int
	// Workers is how many cases run at once.
	Workers int
	// SinglesOnly stops after the single faults; DiscoverOnly after the
	// fault-free runs.
	SinglesOnly, DiscoverOnly bool
	// Only, when set, keeps the cases it accepts (the fault-free runs are
	// always run).
	Only func(Spec) bool
	// Progress, when set, is called after each case.
	Progress func(done, total int, r Result)
}

// Report is what an enumeration ran and found.
type Report struct {
	Worlds []World
	// Discovery is each world's fault-free run.
	Discovery []Result
	// Singles are the cases of one fault: every discovered failure point
	// with every kind that applies to it.
	Singles []Result
	// Pairs are the cases of two faults run, sampled with Seed from every
	// pair on one event's path: SampledFaultPath of the FaultPathPairs
	// whose second fault is on a call only the first fault reaches (a site
	// the fault-free run never called: an error path), and the rest of the
	// OtherPairs.
	Pairs                                        []Result
	FaultPathPairs, OtherPairs, SampledFaultPath int
	Seed                                         uint64
	Elapsed                                      time.Duration

	// Seconds are the single faults' cases again, each with a second
	// event of the same object in flight as its fault strikes
	// (Options.Second); SecondPairs the sampled pairs with one.
	Seconds, SecondPairs []Result
}

// Totals counts the cases and the broken invariants, over singles and
// pairs (the fault-free runs are the discovery, not cases).
func (r *Report) Totals() (cases, lost, doubled, silent, disagree int) {
	for _, set := range [][]Result{r.Singles, r.Pairs, r.Seconds, r.SecondPairs} {
		for _, c := range set {
			cases++
			if c.Lost || c.Err != "" {
				lost++
			}
			if c.Doubled {
				doubled++
			}
			if c.Silent {
				silent++
			}
			if c.Disagree {
				disagree++
			}
		}
	}
	return
}

// Failed returns the cases whose invariants broke, the fault-free runs
// included.
func (r *Report) Failed() []Result {
	var out []Result
	for _, set := range [][]Result{r.Discovery, r.Singles, r.Pairs, r.Seconds, r.SecondPairs} {
		for _, c := range set {
			if !c.OK() {
				out = append(out, c)
			}
		}
	}
	return out
}

// Run enumerates: it runs each world once without a fault, recording
// every call of every function (the failure points: nothing lists them
// but the code's own calls), then each failure point with each fault
// kind, then pairs of faults, and checks the invariants after each case.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	if o.Worlds == nil {
		o.Worlds = Worlds()
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	e, err := newLanes(ctx, o)
	if err != nil {
		return nil, err
	}
	rep := &Report{Worlds: o.Worlds, Seed: o.Seed}
	if err := e.discover(ctx, rep, o); err != nil {
		return rep, err
	}
	if o.DiscoverOnly {
		rep.Elapsed = time.Since(start)
		return rep, ctx.Err()
	}

	singles := keep(singlesOf(rep.Discovery), o.Only)
	var seconds []Spec
	if o.Second {
		chosen := singles
		if o.SecondSingles > 0 {
			chosen = sample(rand.New(rand.NewPCG(o.Seed^0x2ec0, o.Seed)), singles, o.SecondSingles)
		}
		seconds = withSecond(chosen)
	}
	total := len(singles) + len(seconds) + max(o.Pairs, 0) + max(o.SecondPairs, 0)
	rep.Seconds, rep.Singles = e.runBoth(ctx, seconds, singles, nil, o, 0, total)
	if ctx.Err() != nil || o.SinglesOnly {
		rep.Elapsed = time.Since(start)
		return rep, ctx.Err()
	}
	e.runPairs(ctx, rep, o, len(singles)+len(seconds), total)
	rep.Elapsed = time.Since(start)
	return rep, ctx.Err()
}

// newLanes readies one lane of cases on each of o's emulators.
func newLanes(ctx context.Context, o Options) (lanes, error) {
	if len(o.Emulators) == 0 {
		return nil, errors.New("failpoints: no emulator")
	}
	tmpl, err := template.Load(filepath.Join(o.Root, "template.yaml"), nil)
	if err != nil {
		return nil, err
	}
	var e lanes
	for _, endpoints := range o.Emulators {
		l, err := newEnv(ctx, endpoints, o.Root, loadAlarms(tmpl))
		if err != nil {
			return nil, err
		}
		e = append(e, l)
	}
	return e, nil
}

// discover runs each world once without a fault, into rep.Discovery: a
// world's run, with the sites only its other runs called as its
// RaceSites. An Audit world's order is a race (the audit run as the case
// starts against the event in flight): one run takes one order, and the
// calls of the other (the processor's effects when the event comes first,
// the superseded event's when the audit does) would go unenumerated, so it
// runs twice more, the audit first, then the event (Spec.Order). Each
// must end processed.
func (e lanes) discover(ctx context.Context, rep *Report, o Options) error {
	var discovery []Spec
	for _, w := range o.Worlds {
		discovery = append(discovery, Spec{World: w})
	}
	var again []Spec
	for _, w := range o.Worlds {
		if w.Audit {
			again = append(again, Spec{World: w, Order: OrderAuditFirst}, Spec{World: w, Order: OrderEventFirst})
		}
	}
	runs := e.runAll(ctx, append(discovery, again...), o, 0, len(discovery)+len(again))
	// Kept whatever the runs' ends: a report shows a failed discovery.
	rep.Discovery = unionSites(runs[:len(discovery)], runs[len(discovery):])
	for _, r := range runs {
		if !r.OK() || r.Outcome != OutcomeProcessed {
			return fmt.Errorf("failpoints: the fault-free run of %s%s did not end processed: %s %s %s", r.World.Name, orderOf(r.Order), r.Outcome, r.Why, r.Err)
		}
	}
	return nil
}

// orderOf names a run's order for a message: nothing for the race.
func orderOf(o Order) string {
	if o == "" {
		return ""
	}
	return " (" + string(o) + ")"
}

// unionSites gives each of firsts, as RaceSites, the sites the runs of
// its world in others called that it did not, in the order first called.
func unionSites(firsts, others []Result) []Result {
	out := append([]Result(nil), firsts...)
	for i := range out {
		seen := map[Site]bool{}
		for _, s := range sites(out[i].Calls) {
			seen[s] = true
		}
		for _, r := range others {
			if r.World.Name != out[i].World.Name {
				continue
			}
			for _, s := range sites(r.Calls) {
				if !seen[s] {
					seen[s] = true
					out[i].RaceSites = append(out[i].RaceSites, s)
				}
			}
		}
	}
	return out
}

// singlesOf is one case for each site the fault-free runs called and
// each fault kind that applies to it.
func singlesOf(discovery []Result) []Spec {
	var singles []Spec
	for _, d := range discovery {
		for _, site := range d.Sites() {
			for _, k := range Kinds {
				if applies(k, site) {
					singles = append(singles, Spec{World: d.World, Faults: []Fault{{Point: Point{Site: site, N: 1}, Kind: k}}})
				}
			}
		}
	}
	return singles
}

// knownSites are the sites each world's fault-free run called.
func knownSites(discovery []Result) map[string]map[Site]bool {
	known := map[string]map[Site]bool{}
	for _, d := range discovery {
		known[d.World.Name] = map[Site]bool{}
		for _, s := range d.Sites() {
			known[d.World.Name][s] = true
		}
	}
	return known
}

// choosePairs draws budget pairs (all when budget < 0): two thirds of it
// from the pairs whose second fault is on an error path (fault), the
// rest, and what they leave, from the others. nf counts those of fault.
func choosePairs(rng *rand.Rand, fault, others []Spec, budget int) (chosen []Spec, nf int) {
	if budget < 0 {
		budget = len(fault) + len(others)
	}
	nf = min(len(fault), budget*2/3)
	no := min(len(others), budget-nf)
	nf = min(len(fault), budget-no)
	return append(sample(rng, fault, nf), sample(rng, others, no)...), nf
}

// runPairs runs the pairs of faults the singles' calls give, sampled
// (choosePairs), and, with o.Second, pairs with a second event; done of
// total cases ran before.
func (e lanes) runPairs(ctx context.Context, rep *Report, o Options, done, total int) {
	fault, others := pairs(rep.Singles, knownSites(rep.Discovery))
	fault, others = keep(fault, o.Only), keep(others, o.Only)
	rep.FaultPathPairs, rep.OtherPairs = len(fault), len(others)
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	chosen, nf := choosePairs(rng, fault, others, o.Pairs)
	rep.SampledFaultPath = nf
	var seconds []Spec
	if o.Second && o.SecondPairs != 0 {
		// Drawn from every pair, apart from the draw above.
		all := append(append([]Spec(nil), fault...), others...)
		n := len(all)
		if o.SecondPairs > 0 {
			n = min(n, o.SecondPairs)
		}
		rng2 := rand.New(rand.NewPCG(o.Seed^0x5eed5eed, o.Seed))
		seconds = withSecond(sample(rng2, all, n))
	}
	rep.SecondPairs, rep.Pairs = e.runBoth(ctx, seconds, chosen, singleTook(rep.Singles), o, done, total)
}

// runBoth runs seconds and specs as one batch, longest first by est (nil:
// seconds first), and returns each one's results, in their own order (nil
// for none). A batch ends with a tail in which most workers wait on its
// longest cases (a dead-lettered event's are minutes of the world's time):
// the cases with a second event need nothing from the others' results, so
// they share the others' batch rather than adding a tail of their own, and
// the cases expected to run longest start first, so that the tail is short.
func (e lanes) runBoth(ctx context.Context, seconds, specs []Spec, est func(Spec) time.Duration, o Options, done, total int) (secondsOut, specsOut []Result) {
	all := append(append([]Spec(nil), seconds...), specs...)
	order := longestFirst(all, est)
	run := make([]Spec, len(all))
	for i, j := range order {
		run[i] = all[j]
	}
	res := e.runAll(ctx, run, o, done, total)
	out := make([]Result, len(all))
	for i, j := range order {
		out[j] = res[i]
	}
	if len(seconds) > 0 {
		secondsOut = out[:len(seconds)]
	}
	return secondsOut, out[len(seconds):]
}

// longestFirst is the order in which to run specs: by est, longest first,
// equal estimates (and every spec, for a nil est) in their own order.
func longestFirst(specs []Spec, est func(Spec) time.Duration) []int {
	order := make([]int, len(specs))
	for i := range order {
		order[i] = i
	}
	if est != nil {
		sort.SliceStable(order, func(a, b int) bool { return est(specs[order[a]]) > est(specs[order[b]]) })
	}
	return order
}

// singleTook estimates a pair's time by its first fault's single case
// (the longer for a second event): the pair runs that case's course, and
// more.
func singleTook(singles []Result) func(Spec) time.Duration {
	took := map[string]time.Duration{}
	for _, r := range singles {
		if len(r.Faults) == 1 {
			took[r.World.Name+"|"+r.Faults[0].String()] = r.Elapsed
		}
	}
	return func(s Spec) time.Duration {
		d := took[s.World.Name+"|"+s.Faults[0].String()]
		if s.Second {
			d += d / 2
		}
		return d
	}
}

// withSecond returns specs, each with a second event (Spec.Second).
func withSecond(specs []Spec) []Spec {
	out := make([]Spec, len(specs))
	for i, s := range specs {
		s.Second = true
		out[i] = s
	}
	return out
}

// Sites are the failure points a fault-free run found: the distinct sites
// of its calls, then its RaceSites.
func (r Result) Sites() []Site { return append(sites(r.Calls), r.RaceSites...) }

// sites returns the distinct sites of calls, in the order first called.
func sites(calls []Call) []Site {
	var out []Site
	seen := map[Site]bool{}
	for _, c := range calls {
		if !seen[c.Site] {
			seen[c.Site] = true
			out = append(out, c.Site)
		}
	}
	return out
}

// pairs are the cases of two faults on one event's path: for each single
// fault's case, every call it made after its fault (a site and its
// occurrence there), with every kind that applies. Those whose second
// site is not among its world's known sites (the fault-free run's) are
// on a path only the first fault opened: fault; the rest: others.
func pairs(singles []Result, known map[string]map[Site]bool) (fault, others []Spec) {
	seen := map[string]bool{}
	for _, r := range singles {
		if len(r.Faults) != 1 || len(r.Unfired) > 0 {
			continue
		}
		first := r.Faults[0]
		var at time.Duration = -1
		for _, c := range r.Calls {
			if c.Point == first.Point {
				at = c.At
			}
		}
		if at < 0 {
			continue
		}
		after := map[Site]bool{}
		for _, c := range r.Calls {
			if c.At <= at || c.Point == first.Point || after[c.Site] {
				continue
			}
			// The first call of each site after the fault: a later one of
			// the same site is the same failure point met again.
			after[c.Site] = true
			for _, k := range Kinds {
				if !applies(k, c.Site) {
					continue
				}
				second := Fault{Point: c.Point, Kind: k}
				key := r.World.Name + "|" + first.String() + "|" + second.String()
				if seen[key] {
					continue
				}
				seen[key] = true
				spec := Spec{World: r.World, Faults: []Fault{first, second}}
				if known[r.World.Name][c.Site] {
					others = append(others, spec)
				} else {
					fault = append(fault, spec)
				}
			}
		}
	}
	return fault, others
}

// keep returns the specs only accepts (all when only is nil).
func keep(specs []Spec, only func(Spec) bool) []Spec {
	if only == nil {
		return specs
	}
	var out []Spec
	for _, s := range specs {
		if only(s) {
			out = append(out, s)
		}
	}
	return out
}

// sample returns n of specs drawn by rng, in their order.
func sample(rng *rand.Rand, specs []Spec, n int) []Spec {
	if n >= len(specs) {
		return specs
	}
	idx := rng.Perm(len(specs))[:n]
	sort.Ints(idx)
	out := make([]Spec, n)
	for i, j := range idx {
		out[i] = specs[j]
	}
	return out
}

// newEnv readies one emulator for cases: it waits until each of its
// services answers and stores the world's secrets there.
func newEnv(ctx context.Context, endpoints emulator.Endpoints, root string, al alarms) (*env, error) {
	e := &env{endpoints: endpoints, root: root, template: filepath.Join(root, "template.yaml"), alarms: al}
	var err error
	if e.direct, err = emulator.Config(ctx, endpoints); err != nil {
		return nil, err
	}
	if err := e.warm(ctx); err != nil {
		return nil, err
	}
	if err := e.seed(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// lanes are the emulators an enumeration runs its cases on, each with its
// own setup.
type lanes []*env

// runAll runs specs on o.Workers workers, in order of results; worker i
// runs its cases on emulator i modulo their number.
func (e lanes) runAll(ctx context.Context, specs []Spec, o Options, done0, total int) []Result {
	out := make([]Result, len(specs))
	work := make(chan int)
	var mu sync.Mutex
	done := done0
	var wg sync.WaitGroup
	for w := range min(o.Workers, max(len(specs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = e[w%len(e)].run(ctx, specs[i])
				if o.Progress != nil {
					mu.Lock()
					done++
					o.Progress(done, total, out[i])
					mu.Unlock()
				}
			}
		}()
	}
	for i := range specs {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// warm waits until each service of the emulator answers: its first
// request of a service loads that service, which on a busy machine takes
// longer than a client waits.
func (e *env) warm(ctx context.Context) error {
	db, q, p := dynamodb.NewFromConfig(e.direct), sqs.NewFromConfig(e.direct), ssm.NewFromConfig(e.direct)
	calls := []func() error{
		func() error { _, err := db.ListTables(ctx, &dynamodb.ListTablesInput{}); return err },
		func() error { _, err := q.ListQueues(ctx, &sqs.ListQueuesInput{}); return err },
		func() error { _, err := p.DescribeParameters(ctx, &ssm.DescribeParametersInput{}); return err },
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, call := range calls {
		for {
			err := call()
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("failpoints: the emulator does not answer: %w", err)
			}
			time.Sleep(time.Second)
		}
	}
	return nil
}

// seed stores the world's secrets where the template's parameters (as the
// cases override them) name them.
func (e *env) seed(ctx context.Context) error {
	c := ssm.NewFromConfig(e.direct)
	put := func(name, value string) error {
		_, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)})
		return err
	}
	errs := []error{put(secretsParameter(event.ProviderStripe), stripeSecret), put(connectSecretsParameter, connectSecret), put(apiKeyParameter, apiKey)}
	for _, p := range event.Providers {
		if p != event.ProviderStripe {
			errs = append(errs, put(secretsParameter(p), secretOf(p)))
		}
	}
	for _, w := range DeclaredWorlds {
		errs = append(errs, put(sendersPath+"/"+w.Provider, secretOf(w.Provider)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("failpoints: store the secrets: %w", err)
	}
	return nil
}

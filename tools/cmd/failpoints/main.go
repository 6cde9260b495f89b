// Command failpoints runs the failure-point enumeration (make failpoints,
// package failpoints): every call of every function, discovered from a
// fault-free run per world, with every fault kind, and sampled pairs of
// faults. It prints the report, and with -write replaces it in
// docs/reliability.md; it exits non-zero when an invariant broke.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/failpoints"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

func main() {
	os.Exit(run())
}

// cli is the command's flags beyond the enumeration's Options.
type cli struct {
	emulators                             int
	write, discover, singles, calls, verb bool
	only, match, jsonOut                  string
}

func parseFlags() (failpoints.Options, cli) {
	var o failpoints.Options
	var c cli
	flag.IntVar(&o.Pairs, "pairs", 100, "pairs of faults to run, sampled with -seed (-1: every pair)")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed of the pairs' sample")
	flag.BoolVar(&o.Second, "second", true, "run each single fault again with a second event of the same object sent as the fault strikes")
	flag.IntVar(&o.SecondSingles, "second-singles", -1, "single faults run again with a second event, sampled with -seed (-1: every one)")
	flag.IntVar(&o.SecondPairs, "second-pairs", 20, "pairs of faults run with a second event, sampled with -seed from every pair (-1: every pair)")
	flag.IntVar(&o.Workers, "workers", 0, "cases run at once (0: 12 per emulator)")
	// One emulator per core: each runs its DynamoDB requests one at a
	// time, on one core (tools/emulator/motoserver.py).
	flag.IntVar(&c.emulators, "emulators", min(runtime.NumCPU(), 4), "AWS emulators the cases are spread over: the environment's (AWS_ENDPOINT_URL, or one started) and moto servers started beside it")
	flag.BoolVar(&c.write, "write", false, "replace the report in docs/reliability.md")
	flag.StringVar(&c.only, "worlds", "", "comma-separated worlds to run (default: every world)")
	flag.BoolVar(&c.discover, "discover", false, "run the fault-free runs only and print their calls")
	flag.BoolVar(&c.singles, "singles", false, "run the cases of one fault only")
	flag.StringVar(&c.match, "only", "", "run only the cases whose faults' description contains this")
	flag.BoolVar(&c.calls, "calls", false, "with -v, print each case's calls")
	flag.StringVar(&c.jsonOut, "json", "", "write every case's result to this file")
	flag.BoolVar(&c.verb, "v", false, "print each case as it ends")
	flag.Parse()
	return o, c
}

func run() int {
	o, c := parseFlags()
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failpoints:", err)
		return 1
	}
	o.Root = root
	if o.Workers <= 0 {
		o.Workers = 12 * max(c.emulators, 1)
	}
	if c.only != "" {
		if o.Worlds = worlds(c.only); len(o.Worlds) == 0 {
			fmt.Fprintf(os.Stderr, "failpoints: -worlds %q names no world\n", c.only)
			return 2
		}
	}
	o.DiscoverOnly, o.SinglesOnly = c.discover, c.singles
	if c.match != "" {
		o.Only = func(s failpoints.Spec) bool { return strings.Contains(faultsOf(s.Faults), c.match) }
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stopEmulators, err := startEmulators(ctx, &o, c.emulators)
	defer stopEmulators()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failpoints:", err)
		return 1
	}
	o.Progress = progress(time.Now(), c)
	rep, err := failpoints.Run(ctx, o)
	if rep != nil && c.discover {
		printDiscovery(rep)
	}
	if rep != nil && !c.discover {
		rep.Markdown(os.Stdout)
		if c.write {
			if werr := rep.Write(filepath.Join(root, "docs", "reliability.md")); werr != nil {
				fmt.Fprintln(os.Stderr, "failpoints:", werr)
				return 1
			}
		}
		if c.jsonOut != "" {
			b, _ := json.MarshalIndent(rep, "", "  ")
			_ = os.WriteFile(c.jsonOut, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "failpoints:", err)
		return 1
	}
	if rep != nil && len(rep.Failed()) > 0 {
		fmt.Fprintf(os.Stderr, "failpoints: %d cases broke an invariant\n", len(rep.Failed()))
		return 1
	}
	return 0
}

// worlds are the worlds named in only, a comma-separated list.
func worlds(only string) []failpoints.World {
	var out []failpoints.World
	for _, w := range failpoints.Worlds() {
		for _, name := range strings.Split(only, ",") {
			if w.Name == strings.TrimSpace(name) {
				out = append(out, w)
			}
		}
	}
	return out
}

// faultsOf describes a case's faults, in order.
func faultsOf(faults []failpoints.Fault) string {
	var fs []string
	for _, f := range faults {
		fs = append(fs, f.String())
	}
	return strings.Join(fs, ", then ")
}

// startEmulators puts n emulators in o: the environment's (or one
// started) and n-1 moto servers started beside it. The function it
// returns stops those it started.
func startEmulators(ctx context.Context, o *failpoints.Options, n int) (func(), error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	emu, err := emulator.FromEnv(ctx, emulator.Options{})
	if err != nil {
		return stopAll, err
	}
	stops = append(stops, emu.Stop)
	o.Emulators = append(o.Emulators, emu.Endpoints)
	for range n - 1 {
		more, err := emulator.Start(ctx, emulator.Options{})
		if err != nil {
			return stopAll, err
		}
		stops = append(stops, more.Stop)
		// Services with their own endpoint in the environment keep it.
		more.Endpoints.Services = emu.Endpoints.Services
		o.Emulators = append(o.Emulators, more.Endpoints)
	}
	return stopAll, nil
}

// progress prints each case as it ends (-v) or when it broke an
// invariant, with its calls (-calls).
func progress(start time.Time, c cli) func(done, total int, r failpoints.Result) {
	return func(done, total int, r failpoints.Result) {
		if !c.verb && r.OK() {
			return
		}
		faults := "no fault"
		if len(r.Faults) > 0 {
			faults = faultsOf(r.Faults)
		}
		if r.Second {
			faults += " (a second event sent as it strikes)"
		}
		status := r.Outcome
		if r.SecondOutcome != "" {
			status += "; second: " + r.SecondOutcome
		}
		if !r.OK() {
			status = "FAILED: " + r.Why + r.Err
		}
		fmt.Fprintf(
			os.Stderr,
			"[%d/%d %s] %s: %s: %s (%s)\n",
			done,
			total,
			time.Since(start).Round(time.Second),
			r.World.Name,
			faults,
			status,
			r.Elapsed.Round(100*time.Millisecond),
		)
		if c.calls {
			for _, call := range r.Calls {
				if call.Site.Call != "Query Events.unprocessed/pending" || call.N%16 == 1 {
					fmt.Fprintf(os.Stderr, "    %7s %s #%d %s\n", call.At.Round(10*time.Millisecond), call.Site, call.N, call.Injected)
				}
			}
		}
	}
}

// printDiscovery prints each world's fault-free run's calls.
func printDiscovery(rep *failpoints.Report) {
	for _, d := range rep.Discovery {
		fmt.Printf("== %s (%s, %d failure points)\n", d.World.Name, d.Outcome, len(d.Sites()))
		for _, c := range d.Calls {
			fmt.Printf("  %6s  %s #%d\n", c.At.Round(10*time.Millisecond), c.Site, c.N)
		}
		for _, s := range d.RaceSites {
			fmt.Printf("  %6s  %s (another fault-free run's: the audit first or after the event)\n", "", s)
		}
	}
}

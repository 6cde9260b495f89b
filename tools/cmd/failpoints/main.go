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

func run() int {
	var o failpoints.Options
	flag.IntVar(&o.Pairs, "pairs", 100, "pairs of faults to run, sampled with -seed (-1: every pair)")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed of the pairs' sample")
	flag.BoolVar(&o.Second, "second", true, "run each single fault again with a second event of the same object sent as the fault strikes")
	flag.IntVar(&o.SecondSingles, "second-singles", -1, "single faults run again with a second event, sampled with -seed (-1: every one)")
	flag.IntVar(&o.SecondPairs, "second-pairs", 20, "pairs of faults run with a second event, sampled with -seed from every pair (-1: every pair)")
	flag.IntVar(&o.Workers, "workers", 0, "cases run at once (0: 12 per emulator)")
	// One emulator per core: each runs its DynamoDB requests one at a
	// time, on one core (tools/emulator/motoserver.py).
	emulators := flag.Int("emulators", min(runtime.NumCPU(), 4), "AWS emulators the cases are spread over: the environment's (AWS_ENDPOINT_URL, or one started) and moto servers started beside it")
	write := flag.Bool("write", false, "replace the report in docs/reliability.md")
	only := flag.String("worlds", "", "comma-separated worlds to run (default: every world)")
	discover := flag.Bool("discover", false, "run the fault-free runs only and print their calls")
	singles := flag.Bool("singles", false, "run the cases of one fault only")
	match := flag.String("only", "", "run only the cases whose faults' description contains this")
	calls := flag.Bool("calls", false, "with -v, print each case's calls")
	jsonOut := flag.String("json", "", "write every case's result to this file")
	verbose := flag.Bool("v", false, "print each case as it ends")
	flag.Parse()

	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failpoints:", err)
		return 1
	}
	o.Root = root
	if o.Workers <= 0 {
		o.Workers = 12 * max(*emulators, 1)
	}
	if *only != "" {
		for _, w := range failpoints.Worlds() {
			for _, name := range strings.Split(*only, ",") {
				if w.Name == strings.TrimSpace(name) {
					o.Worlds = append(o.Worlds, w)
				}
			}
		}
		if len(o.Worlds) == 0 {
			fmt.Fprintf(os.Stderr, "failpoints: -worlds %q names no world\n", *only)
			return 2
		}
	}
	o.DiscoverOnly, o.SinglesOnly = *discover, *singles
	if *match != "" {
		o.Only = func(s failpoints.Spec) bool {
			var fs []string
			for _, f := range s.Faults {
				fs = append(fs, f.String())
			}
			return strings.Contains(strings.Join(fs, ", then "), *match)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	emu, err := emulator.FromEnv(ctx, emulator.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "failpoints:", err)
		return 1
	}
	defer emu.Stop()
	o.Emulators = append(o.Emulators, emu.Endpoints)
	for range *emulators - 1 {
		more, err := emulator.Start(ctx, emulator.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "failpoints:", err)
			return 1
		}
		defer more.Stop()
		// Services with their own endpoint in the environment keep it.
		more.Endpoints.Services = emu.Endpoints.Services
		o.Emulators = append(o.Emulators, more.Endpoints)
	}
	start := time.Now()
	o.Progress = func(done, total int, r failpoints.Result) {
		if *verbose || !r.OK() {
			faults := "no fault"
			if len(r.Faults) > 0 {
				var fs []string
				for _, f := range r.Faults {
					fs = append(fs, f.String())
				}
				faults = strings.Join(fs, ", then ")
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
			if *calls {
				for _, c := range r.Calls {
					if c.Site.Call != "Query Events.unprocessed/pending" || c.N%16 == 1 {
						fmt.Fprintf(os.Stderr, "    %7s %s #%d %s\n", c.At.Round(10*time.Millisecond), c.Site, c.N, c.Injected)
					}
				}
			}
		}
	}
	rep, err := failpoints.Run(ctx, o)
	if rep != nil && *discover {
		for _, d := range rep.Discovery {
			fmt.Printf("== %s (%s)\n", d.World.Name, d.Outcome)
			for _, c := range d.Calls {
				fmt.Printf("  %6s  %s #%d\n", c.At.Round(10*time.Millisecond), c.Site, c.N)
			}
		}
	}
	if rep != nil && !*discover {
		rep.Markdown(os.Stdout)
		if *write {
			if werr := rep.Write(filepath.Join(root, "docs", "reliability.md")); werr != nil {
				fmt.Fprintln(os.Stderr, "failpoints:", werr)
				return 1
			}
		}
		if *jsonOut != "" {
			b, _ := json.MarshalIndent(rep, "", "  ")
			_ = os.WriteFile(*jsonOut, b, 0o644)
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

// Command loadtest drives the local stack with duplicated, reordered and
// missing deliveries and injected AWS faults, then checks that every event
// was processed exactly once, none was lost, and the mirror matches the
// chronological ground truth (make loadtest). It prints one table and exits
// non-zero when an invariant breaks.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/loadtest"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

func main() {
	os.Exit(run())
}

func run() int {
	c := loadtest.Config{}
	flag.IntVar(&c.Deliveries, "n", 2000, "deliveries to make, duplicates included")
	flag.IntVar(&c.Concurrency, "c", 16, "concurrent deliveries")
	flag.Float64Var(&c.Duplicate, "dup", 0.30, "share of events delivered twice")
	flag.Float64Var(&c.Reorder, "reorder", 0.20, "share of events delivered after newer ones")
	flag.Float64Var(&c.Missing, "missing", 0.05, "share of events never delivered (left to the reconciler)")
	flag.Float64Var(&c.FaultRate, "faults", 0.02, "probability of a fault on each AWS write")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed, to rerun a run)")
	flag.DurationVar(&c.Timeout, "timeout", 15*time.Minute, "give up after this long")
	flag.Parse()
	c.Seed = *seed

	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		return 1
	}
	c.Template = filepath.Join(root, "template.yaml")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	emu, err := emulator.FromEnv(ctx, emulator.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		return 1
	}
	defer emu.Stop()
	c.Endpoints = emu.Endpoints

	if term.IsTerminal(int(os.Stderr.Fd())) {
		var bar *progressbar.ProgressBar
		c.Progress = func(done, total int) {
			if bar == nil {
				bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("deliver, then process"), progressbar.OptionShowCount(),
					progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
			}
			_ = bar.Set(done)
		}
	}
	fmt.Fprintf(os.Stderr, "loadtest: %d deliveries, concurrency %d, seed %d\n", c.Deliveries, c.Concurrency, c.Seed)
	res, err := loadtest.Run(ctx, c)
	table(os.Stdout, c, res)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		return 1
	}
	if !res.OK() {
		fmt.Fprintln(os.Stderr, "loadtest: INVARIANT BROKEN: see lost, double effects and mirror mismatches above")
		return 1
	}
	return 0
}

func table(w io.Writer, c loadtest.Config, r loadtest.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\t\n", k, v) }
	fmt.Fprintln(tw, "metric\tvalue\t")
	row("events", r.Events)
	row("deliveries", r.Deliveries)
	row("duplicates absorbed", r.DuplicatesAbsorbed)
	row("delivered late (reordered)", r.Reordered)
	row("never delivered", r.NeverDelivered)
	row("found by the reconciler", r.FoundByReconciler)
	row("stuck, sent again by the reconciler", r.StuckRequeued)
	row(fmt.Sprintf("faults injected (rate %.3f)", c.FaultRate), r.FaultsInjected)
	row("delivery retries", r.Retries)
	row("dead-lettered", r.DeadLettered)
	row("lost (must be 0)", r.Lost)
	row("double effects (must be 0)", r.DoubleEffects)
	row("mirror mismatches (must be 0)", r.MirrorMismatches)
	row("repeated calls, same idempotency key", r.RepeatedCalls)
	row("throughput (events/s)", fmt.Sprintf("%.1f", r.Throughput))
	row("receiver latency p50", r.LatencyP50.Round(100*time.Microsecond))
	row("receiver latency p99", r.LatencyP99.Round(100*time.Microsecond))
	row("elapsed", r.Elapsed.Round(time.Millisecond))
	_ = tw.Flush()
}

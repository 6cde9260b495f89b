// Command benchtable prints the project's one benchmark table (make bench).
// It reads `go test -bench` output on stdin (the receiver's, the
// processor's and the cold-start benchmarks), copies it through, measures
// the pipeline itself through an in-process local stack (AWS calls per event
// counted with an SDK middleware, end-to-end events/s beside the emulator's
// raw rate), and prints one table in which every ratio compares figures of
// the same run. The cost per million events is the cost meter's
// (tools/cost, make cost), run against the same emulator and printed
// after the table.
//
// It reports; it does not fail on a figure: a threshold on timings would be
// a timed assertion.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/cost"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

func main() {
	n := flag.Int("n", 200, "events for the pipeline measurements")
	c := flag.Int("c", 8, "concurrent deliveries")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *n, *c); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, n, c int) error {
	res, err := read(in, out)
	if err != nil {
		return err
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	ctx := context.Background()
	emu, err := emulator.FromEnv(ctx, emulator.Options{})
	if err != nil {
		return err
	}
	defer emu.Stop()
	fmt.Fprintf(os.Stderr, "benchtable: measuring the pipeline with %d events...\n", n)
	p, err := measure(ctx, emu.Endpoints, filepath.Join(root, "template.yaml"), n, c)
	if err != nil {
		return err
	}
	table(out, res, p)
	fmt.Fprintln(os.Stderr, "benchtable: the cost meter...")
	rep, err := cost.Measure(ctx, cost.Options{Endpoints: emu.Endpoints, Template: filepath.Join(root, "template.yaml")})
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	rep.Print(out)
	return nil
}

func table(out io.Writer, r results, p pipeline) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(out)
	fmt.Fprintf(
		out,
		"webhook-inbox benchmark table (%s/%s, %d CPUs, %s; every ratio from this run)\n",
		runtime.GOOS,
		runtime.GOARCH,
		runtime.NumCPU(),
		time.Now().UTC().Format(time.DateOnly),
	)
	fmt.Fprintln(w, "measure\tvalue\thow")
	t := rows{w: w, r: r}
	t.receiver()
	t.calls(p)
	t.throughput(p)
	t.coldStart()
	_ = w.Flush()
}

// rows writes the table's rows from one run's results.
type rows struct {
	w io.Writer
	r results
}

func (t rows) row(k, v, how string) { fmt.Fprintf(t.w, "%s\t%s\t%s\n", k, v, how) }

// num is a benchmark's value in unit, formatted, or "not run".
func (t rows) num(bench, unit, format string) string {
	if v, ok := t.r.get(bench, unit); ok {
		return fmt.Sprintf(format, v)
	}
	return "not run"
}

// micros is a benchmark's ns/op in microseconds, or "not run".
func (t rows) micros(bench string) string {
	if v, ok := t.r.get(bench, "ns/op"); ok {
		return fmt.Sprintf("%.1f µs", v/1000)
	}
	return "not run"
}

// receiver is the receiver's compute and allocations per event.
func (t rows) receiver() {
	r := t.r
	t.row("receiver compute per event, 2.6 KB", t.micros("BenchmarkReceiver/2.6KB/receiver"), "AWS clients faked; target <= 1 ms on this machine's CPU")
	t.row("receiver compute per event, 16 KB", t.micros("BenchmarkReceiver/16KB/receiver"), "")
	t.row("receiver allocations per event, 2.6 KB", t.num("BenchmarkReceiver/2.6KB/receiver", "allocs/op", "%.0f"), "")
	t.row("receiver allocations per event, 16 KB", t.num("BenchmarkReceiver/16KB/receiver", "allocs/op", "%.0f"), "")
	decode := "not run"
	if d, ok := r.get("BenchmarkReceiver/2.6KB/stripe_event_decode", "ns/op"); ok {
		if rc, ok := r.get("BenchmarkReceiver/2.6KB/receiver", "ns/op"); ok && rc > 0 {
			decode = fmt.Sprintf("%.1fx", d/rc)
		}
	}
	t.row("json.Unmarshal into stripe.Event / receiver, 2.6 KB", decode, "what decoding the whole event would cost alone, beside the receiver's whole request")
}

// calls is each function's AWS calls, counted through the local stack.
func (t rows) calls(p pipeline) {
	t.row(
		"AWS calls, receiver, new event",
		fmt.Sprintf("%.2f", p.ReceiverNew),
		"counted by SDK middleware through the local stack: PutItem (record) + PutItem (payload) + SendMessage",
	)
	t.row("AWS calls, receiver, duplicate", fmt.Sprintf("%.2f", p.ReceiverDuplicate), "the conditional put returns the record it lost to")
	t.row(
		"AWS calls, processor, per event",
		fmt.Sprintf("%.2f DynamoDB + %.2f SQS", p.ProcessorDynamo, p.ProcessorSQS),
		fmt.Sprintf("claim + payload read + transaction; receive/delete per batch (mean batch %.1f)", p.BatchSize),
	)
	t.row(
		"AWS calls, reconciler, per 100 events",
		fmt.Sprintf("%d AWS + %d Stripe", p.ReconcilerPer100, p.StripePer100),
		"one list page and one BatchGetItem per 100, plus checkpoint and the stuck sweep (a Query per shard of its lane: 16)",
	)
}

// throughput is the pipeline end to end against the emulator raw.
func (t rows) throughput(p pipeline) {
	ratio := p.EndToEnd / p.Raw
	t.row("end to end, events/s", fmt.Sprintf("%.1f", p.EndToEnd), fmt.Sprintf("%d events through gateway, queue and processor to processed", p.Events))
	t.row(
		"emulator raw 2 PutItem+SendMessage, events/s",
		fmt.Sprintf("%.1f", p.Raw),
		"the receiver's three calls sent raw: same concurrency, same emulator, same run",
	)
	t.row(
		"end to end / raw",
		fmt.Sprintf("%.2f", ratio),
		"end to end adds the processor's claim, payload read and transaction on the same emulator, and the 1 s batching window",
	)
	t.row(
		"processor events/s / raw replay",
		t.num("BenchmarkProcessor", "processor/raw", "%.2f"),
		"shared/pipeline/processor benchmark: its own DynamoDB requests replayed raw",
	)
}

// coldStart is each function's package, init and first answer.
func (t rows) coldStart() {
	r := t.r
	initAllocs := func(fn string) string {
		kb, ok1 := r.get("BenchmarkColdStart", fn+"-init-KB")
		n, ok2 := r.get("BenchmarkColdStart", fn+"-init-allocs")
		if !ok1 || !ok2 {
			return "not run"
		}
		return fmt.Sprintf("%.0f KB, %.0f allocs", kb, n)
	}
	for _, fn := range []string{"receiver", "processor", "reconciler"} {
		t.row(fn+" package, zipped", t.num("BenchmarkColdStart", fn+"-zip-MB", "%.2f MB"), "linux/arm64, as SAM zips it; goal <= 4 MB")
		target := ""
		if fn != "reconciler" {
			target = "; target <= 1.6x"
		}
		t.row(
			fn+" init / hello world",
			t.num("BenchmarkColdStart", fn+"-init-x-hello", "%.2fx"),
			"process start to the runtime's first /next under the Lambda runtime emulator, medians"+target,
		)
		t.row(
			fn+" init CPU time / hello world",
			t.num("BenchmarkColdStart", fn+"-init-cpu-x-hello", "%.2fx"),
			"the CPU time the process used until then: what a busy machine's waits leave out",
		)
		t.row(fn+" package init", initAllocs(fn), "GODEBUG=inittrace=1, summed over packages")
		if fn == "reconciler" {
			// Its first answer is a whole run: about ten sequential calls
			// to the emulator and Stripe, whose noise swamps what starting
			// adds, so the run itself is shown.
			t.row(
				"reconciler warm run, empty event list",
				t.num("BenchmarkColdStart", fn+"-warm-ms", "%.1f ms"),
				"a whole scheduled run on a warm process: most of its first answer",
			)
			continue
		}
		initCost := "not run"
		cold, okCold := r.get("BenchmarkColdStart", fn+"-first-ms")
		warm, okWarm := r.get("BenchmarkColdStart", fn+"-warm-ms")
		if okCold && okWarm {
			initCost = fmt.Sprintf("%.1f ms", cold-warm)
		}
		t.row(fn+" first answer minus a warm one", initCost, "what starting costs beyond the request's own work, the emulator's start included")
	}
	t.row("hello world init", t.num("BenchmarkColdStart", "hello-init-ms", "%.2f ms"), "aws-lambda-go, built the same way")
	t.row("hello world init CPU time", t.num("BenchmarkColdStart", "hello-init-cpu-ms", "%.2f ms"), "")
	t.row("hello world package init", initAllocs("hello"), "")
}

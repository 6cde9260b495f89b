// Command benchtable prints the project's one benchmark table (make bench).
// It reads `go test -bench` output on stdin (the receiver's, the
// processor's and the cold-start benchmarks), copies it through, measures
// the pipeline itself through an in-process local stack (AWS calls per event
// counted with an SDK middleware, end-to-end events/s beside the emulator's
// raw rate), and prints one table in which every ratio compares figures of
// the same run, with an estimated AWS cost per million events.
//
// It reports; it does not fail on a figure: a threshold on timings would be
// a timed assertion.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/emulator"
	"github.com/webhook-inbox/webhook-inbox/internal/repo"
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
	p, err := measure(ctx, emu.URL, filepath.Join(root, "template.yaml"), n, c)
	if err != nil {
		return err
	}
	table(out, res, p)
	return nil
}

// Prices: AWS us-east-1 list prices, on-demand, as published on AWS's
// pricing pages (DynamoDB after its November 2024 on-demand reduction),
// recorded 2026-11-30. Check them before relying on the estimate.
const (
	priceHTTPAPI    = 1.00         // $ per million HTTP API requests (first 300 M a month)
	priceLambdaReq  = 0.20         // $ per million Lambda requests
	priceLambdaGBs  = 0.0000133334 // $ per GB-second, arm64
	priceWRU        = 0.625        // $ per million DynamoDB write request units
	priceRRU        = 0.125        // $ per million DynamoDB read request units
	priceSQS        = 0.40         // $ per million SQS requests (64 KB chunks)
	priceLogsGB     = 0.50         // $ per GB of CloudWatch Logs ingested
	lambdaMemoryGB  = 0.25         // the template's MemorySize, 256 MB
	logBytesPerEvnt = 1200         // receiver line + processor line + a share of the batch line
)

// Hosted webhook gateways, as published on their pricing pages (transcribed
// 2026-09/10): Hookbase Business $79/month for 2 M events; Hookdeck Team
// from $39/month plus metered events (rate not on the page).
const (
	hookbasePerMillion = 79.0 / 2
	hookdeckTeamFrom   = 39.0
)

func table(out io.Writer, r results, p pipeline) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "webhook-inbox benchmark table (%s/%s, %d CPUs, %s; every ratio from this run)\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format(time.DateOnly))
	fmt.Fprintln(w, "measure\tvalue\thow")
	row := func(k, v, how string) { fmt.Fprintf(w, "%s\t%s\t%s\n", k, v, how) }
	num := func(bench, unit, format string) string {
		if v, ok := r.get(bench, unit); ok {
			return fmt.Sprintf(format, v)
		}
		return "not run"
	}

	row("receiver compute / HMAC-SHA256, 2.6 KB", num("BenchmarkReceiver/2.6KB/interleaved", "x_hmac", "%.1fx"), "interleaved in one benchmark, AWS clients faked; target <= 12x")
	row("receiver compute / HMAC-SHA256, 16 KB", num("BenchmarkReceiver/16KB/interleaved", "x_hmac", "%.1fx"), "linear in size when close to the 2.6 KB ratio")
	row("receiver allocations per event, 2.6 KB", num("BenchmarkReceiver/2.6KB/receiver", "allocs/op", "%.0f"), "")
	row("receiver allocations per event, 16 KB", num("BenchmarkReceiver/16KB/receiver", "allocs/op", "%.0f"), "")
	decode := "not run"
	if d, ok := r.get("BenchmarkReceiver/2.6KB/stripe_event_decode", "ns/op"); ok {
		if h, ok := r.get("BenchmarkReceiver/2.6KB/hmac", "ns/op"); ok && h > 0 {
			decode = fmt.Sprintf("%.1fx", d/h)
		}
	}
	row("json.Unmarshal into stripe.Event / HMAC, 2.6 KB", decode, "what decoding the whole event would cost alone (sequential medians)")

	row("AWS calls, receiver, new event", fmt.Sprintf("%.2f", p.ReceiverNew), "counted by SDK middleware through the local stack: PutItem + SendMessage")
	row("AWS calls, receiver, duplicate", fmt.Sprintf("%.2f", p.ReceiverDuplicate), "the conditional put returns the record it lost to")
	row("AWS calls, processor, per event", fmt.Sprintf("%.2f DynamoDB + %.2f SQS", p.ProcessorDynamo, p.ProcessorSQS), fmt.Sprintf("claim + transaction; receive/delete per batch (mean batch %.1f)", p.BatchSize))
	row("AWS calls, reconciler, per 100 events", fmt.Sprintf("%d AWS + %d Stripe", p.ReconcilerPer100, p.StripePer100), "one list page and one BatchGetItem per 100, plus checkpoint and stuck sweep")

	ratio := p.EndToEnd / p.Raw
	row("end to end, events/s", fmt.Sprintf("%.1f", p.EndToEnd), fmt.Sprintf("%d events through gateway, queue and processor to processed", p.Events))
	row("emulator raw PutItem+SendMessage, pairs/s", fmt.Sprintf("%.1f", p.Raw), "same concurrency, same emulator, same run")
	row("end to end / raw", fmt.Sprintf("%.2f", ratio), "end to end adds the processor's claim and transaction on the same emulator, and the 1 s batching window")
	row("processor events/s / raw replay", num("BenchmarkProcessor", "processor/raw", "%.2f"), "shared/processor benchmark: its own DynamoDB requests replayed raw")

	for _, fn := range []string{"receiver", "processor", "reconciler"} {
		row(fn+" package, zipped", num("BenchmarkColdStart", fn+"-zip-MB", "%.2f MB"), "linux/arm64, as SAM zips it; goal <= 4 MB")
		row(fn+" cold start / hello world", num("BenchmarkColdStart", fn+"-x-hello", "%.2fx"), "process start to first answer under the Lambda runtime emulator")
		if fn == "reconciler" {
			// Its first answer is a whole run: about ten sequential calls
			// to the emulator and Stripe, whose noise swamps what starting
			// adds, so the run itself is shown.
			row("reconciler warm run, empty event list", num("BenchmarkColdStart", fn+"-warm-ms", "%.1f ms"), "a whole scheduled run on a warm process: most of its first answer above")
			continue
		}
		initCost := "not run"
		cold, okCold := r.get("BenchmarkColdStart", fn+"-ms")
		warm, okWarm := r.get("BenchmarkColdStart", fn+"-warm-ms")
		if okCold && okWarm {
			initCost = fmt.Sprintf("%.1f ms", cold-warm)
		}
		row(fn+" first answer minus a warm one", initCost, "what starting costs beyond the request's own work")
	}
	row("hello world cold start", num("BenchmarkColdStart", "hello-ms", "%.1f ms"), "aws-lambda-go, built the same way")

	// Cost per million events, from the counts and sizes above.
	e := math.Ceil(float64(p.EventItemBytes) / 1024)
	m := math.Ceil(float64(p.MirrorItemBytes) / 1024)
	put := e + 3            // record + its three small index entries
	claim := e + 4          // record + two index keys moved
	tx := 2*(e+m+1) + 3 + m // transactional writes cost double; indexes not
	wru := put + claim + tx
	rru := 2 * math.Ceil(float64(p.EventItemBytes)/4096) // reconciler's consistent BatchGetItem
	batch := math.Max(p.BatchSize, 1)
	recvMs, _ := r.get("BenchmarkColdStart", "receiver-warm-ms")
	procMs, _ := r.get("BenchmarkColdStart", "processor-warm-ms")
	if recvMs == 0 {
		recvMs = 20
	}
	if procMs == 0 {
		procMs = 50
	}
	gbs := lambdaMemoryGB * (recvMs/1000 + procMs/1000/batch)
	costs := []struct {
		what string
		usd  float64
		how  string
	}{
		{"API Gateway HTTP API", priceHTTPAPI, "one request per delivery"},
		{"Lambda requests", priceLambdaReq * (1 + 1/batch), fmt.Sprintf("receiver per delivery, processor per batch of %.1f", batch)},
		{"Lambda duration", priceLambdaGBs * gbs * 1e6, fmt.Sprintf("256 MB; warm %.0f ms receiver, %.0f ms processor (measured against the emulator)", recvMs, procMs)},
		{"DynamoDB writes", priceWRU * wru, fmt.Sprintf("%.0f WRU/event: items %d B (event) and %d B (mirror)", wru, p.EventItemBytes, p.MirrorItemBytes)},
		{"DynamoDB reads", priceRRU * rru, "the reconciler's comparison"},
		{"SQS", priceSQS * (1 + p.ProcessorSQS), "send, plus the processor's receive/delete per event"},
		{"CloudWatch Logs", priceLogsGB * logBytesPerEvnt * 1e6 / 1e9, fmt.Sprintf("about %d B of JSON logs per event", logBytesPerEvnt)},
	}
	total := 0.0
	for _, c := range costs {
		total += c.usd
		row("$ per million events: "+c.what, fmt.Sprintf("%.2f", c.usd), c.how)
	}
	row("$ per million events: total", fmt.Sprintf("%.2f", total), "us-east-1 list prices recorded 2026-11-30; storage, idle polling and alarms extra")
	row("hosted gateway, per million events", fmt.Sprintf("%.2f", hookbasePerMillion), fmt.Sprintf("Hookbase Business, $79/month for 2 M events; Hookdeck Team from $%.0f/month plus metered events", hookdeckTeamFrom))
	_ = w.Flush()
}

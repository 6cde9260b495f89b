// Command cmd is make cost: the cost meter of package cost, run against the
// AWS emulator (AWS_ENDPOINT_URL, as tools/cmd/withemulator sets it, or one
// it starts), printing its report on stdout. It reports; it does not fail
// on a figure: the targets are read from its last three lines.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/webhook-inbox/webhook-inbox/tools/cost"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

func main() {
	samples := flag.Int("samples", cost.DefaultSamples, "new 2.6 KB events sampled for the hot-key estimate (more than the shards of any key)")
	rate := flag.Float64("rate", 3000, "steady events a second for the hot-key estimate")
	flag.Parse()
	if err := run(*samples, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "cost:", err)
		os.Exit(1)
	}
}

func run(samples int, rate float64) error {
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
	rep, err := cost.Measure(ctx, cost.Options{
		Endpoints: emu.Endpoints, Template: filepath.Join(root, "template.yaml"),
		Samples: samples, Rate: rate, Progress: os.Stderr,
	})
	if err != nil {
		return err
	}
	rep.Print(os.Stdout)
	return nil
}

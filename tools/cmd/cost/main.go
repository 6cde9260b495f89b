// Command cost is make cost: the cost meter of package cost, run against
// the AWS emulator (AWS_ENDPOINT_URL, as tools/cmd/withemulator sets it,
// or one it starts), printing its report on stdout. It reports; it does
// not fail on a figure: the targets are read from its last three lines.
//
// With -consumed every DynamoDB request also asks for the capacity it
// consumes (ReturnConsumedCapacity=INDEXES), and the sums DynamoDB
// reports, per scenario, table and index, are printed before the report
// beside the meter's own. With -aws it measures against AWS itself instead
// of the emulator, with the SDK's usual credentials and region (a stage's
// profile), on a copy of the template's tables and queues it creates and
// deletes: how a team checks the meter against DynamoDB's own count
// (docs/performance.md).
//
//	go run ./tools/cmd/withemulator -- go run ./tools/cmd/cost
//	AWS_PROFILE=dev go run ./tools/cmd/cost -aws -consumed
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/webhook-inbox/webhook-inbox/internal/awsconfig"
	"github.com/webhook-inbox/webhook-inbox/tools/cost"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

func main() {
	samples := flag.Int("samples", cost.DefaultSamples, "new 2.6 KB events sampled for the hot-key estimate (more than the shards of any key)")
	rate := flag.Float64("rate", 3000, "steady events a second for the hot-key estimate")
	consumed := flag.Bool("consumed", false, "ask DynamoDB for each request's ConsumedCapacity (INDEXES) and print its sums beside the meter's")
	tieRate := flag.Float64(
		"tie-rate",
		cost.DefaultTieRate,
		"share of events that tie with another of their object in the same second, each read from Stripe's API",
	)
	onAWS := flag.Bool("aws", false, "measure against AWS (the SDK's credentials and region), on tables and queues created and deleted for the run")
	flag.Parse()
	if err := run(*samples, *rate, *tieRate, *consumed, *onAWS); err != nil {
		fmt.Fprintln(os.Stderr, "cost:", err)
		os.Exit(1)
	}
}

func run(samples int, rate, tieRate float64, consumed, onAWS bool) error {
	root, err := repo.Root()
	if err != nil {
		return err
	}
	ctx := context.Background()
	opts := cost.Options{
		Template: filepath.Join(root, "template.yaml"),
		Samples:  samples, Rate: rate, TieRate: tieRate, Progress: os.Stderr, Consumed: consumed,
	}
	if onAWS {
		cfg, err := awsconfig.Load(ctx)
		if err != nil {
			return fmt.Errorf("load AWS configuration: %w", err)
		}
		if cfg.Region == "" {
			return fmt.Errorf("-aws: no region: set AWS_REGION or the profile's region")
		}
		opts.AWS = &cfg
	} else {
		emu, err := emulator.FromEnv(ctx, emulator.Options{})
		if err != nil {
			return err
		}
		defer emu.Stop()
		opts.Endpoints = emu.Endpoints
	}
	rep, err := cost.Measure(ctx, opts)
	if err != nil {
		return err
	}
	if consumed {
		rep.PrintConsumed(os.Stdout)
		fmt.Println()
	}
	rep.Print(os.Stdout)
	return nil
}

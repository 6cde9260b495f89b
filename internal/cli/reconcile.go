package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
)

// ReconcileJSON is the JSON shape of `inboxctl reconcile --json`.
type ReconcileJSON struct {
	RunID         string  `json:"run_id"`
	Since         string  `json:"since,omitempty"`
	Listed        int     `json:"listed"`
	Missing       int     `json:"missing_found"`
	Backfilled    int     `json:"backfilled"`
	Raced         int     `json:"raced"`
	Stuck         int     `json:"stuck_requeued"`
	Pages         int     `json:"pages"`
	Throttled     int     `json:"throttled"`
	Stopped       string  `json:"stopped,omitempty"`
	DurationMs    float64 `json:"duration_ms"`
	CheckpointAge string  `json:"checkpoint_age,omitempty"`
}

type reconcileOpts struct {
	since       string
	maxPages    int
	asJSON      bool
	backfill    bool
	withEffects bool
}

func (a *app) reconcileCmd() *cobra.Command {
	var o reconcileOpts
	cmd := &cobra.Command{
		Use:   "reconcile [--since 24h] [--backfill [--with-effects]]",
		Short: "Run the reconciler once: find events Stripe has that the store lacks, and re-enqueue stuck ones",
		Long: `reconcile runs one reconciliation, as the scheduled function does, from this
machine: it lists Stripe's events of the handled types, ingests those the store
has no record of (source reconciler, through the receiver's own path), and
re-enqueues records stuck unfinished.

Without --since it continues from the stored checkpoints, like a scheduled
run. With --since it sweeps that last stretch of time (at most Stripe's 30-day
retention) and leaves the checkpoints alone.

A deployment's reconciliation starts with its first run, one schedule period
back: events created before are history, which only --backfill lists (with
--since). A backfill ingests the history missing from the store with source
backfill: the processor applies each to the mirror and runs none of your
effects (outcome backfilled), unless --with-effects says to run them.
Missing events created after the start are lost webhooks, ingested as
always.

It needs a Stripe API key with read access to events: STRIPE_API_KEY, or the
SSM parameter named by STRIPE_API_KEY_PARAMETER. STRIPE_API_BASE points it at
another API (a test server: https, or http only to 127.0.0.1, ::1 or
localhost); STRIPE_MODE (test or live) selects the rate limit. With --stage,
every setting comes from the stack's parameters and none from the
environment: the key is the stage's own and goes to Stripe's API only.`,
		Example: `  inboxctl reconcile --since 24h
  inboxctl reconcile --since 30d --backfill
  inboxctl --stage prod reconcile --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.reconcile(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.since, "since", "", "sweep events created in this last stretch (like 24h or 7d) instead of continuing from the checkpoints")
	f.IntVar(&o.maxPages, "max-pages", 0, "list at most N pages of 100 events (default: the reconciler's own bound)")
	f.BoolVar(&o.backfill, "backfill", false,
		"with --since: ingest history too (events created before the deployment's reconciliation started), applied to the mirror without running effects")
	f.BoolVar(&o.withEffects, "with-effects", false, "with --backfill: run your effects for the backfilled history too")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON (ReconcileJSON in docs/cli.md)")
	return cmd
}

func (a *app) reconcile(ctx context.Context, o reconcileOpts) error {
	var since time.Duration
	if o.since != "" {
		from, err := parseSince(o.since, a.now())
		if err != nil {
			return err
		}
		since = a.now().Sub(from)
	}
	if o.maxPages < 0 {
		return usagef("--max-pages must not be negative")
	}
	if o.backfill && since == 0 {
		return usagef("--backfill needs --since (like --since 30d): how far back the history goes")
	}
	if o.withEffects && !o.backfill {
		return usagef("--with-effects goes with --backfill")
	}
	env, getenv, err := a.reconcileEnv(ctx)
	if err != nil {
		return err
	}
	cfg, err := a.aws(ctx)
	if err != nil {
		return err
	}
	s, err := a.open(ctx, withEvents|withQueue|withMirror)
	if err != nil {
		return err
	}
	env["EVENTS_TABLE"], env["MIRROR_TABLE"], env["QUEUE_URL"] = s.Events.Table, s.Mirror.Table, s.Queue
	r, err := reconcilerboot.FromEnv(ctx, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return getenv(k)
	}, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), hooks.Registry())
	if err != nil {
		return a.hint(err)
	}
	show := a.spinner("reconciling")
	progress := func(p reconcile.Progress) {
		show(fmt.Sprintf("group %d/%d  pages %d  listed %d  missing %d  backfilled %d  stuck %d",
			p.Group+1, p.Groups, p.Pages, p.Listed, p.Missing, p.Backfilled, p.Stuck))
	}
	res, err := r.Run(ctx, reconcile.RunOptions{Since: since, MaxPages: o.maxPages, Backfill: o.backfill, WithEffects: o.withEffects, Progress: progress})
	show("")
	if err != nil {
		return a.hint(fmt.Errorf("reconcile: %w", err))
	}
	return a.printReconcile(res, o, since)
}

// count renders a number, coloured when it is not zero.
func (a *app) count(n int, colour string) string {
	if n == 0 {
		return "0"
	}
	return a.paint(colour, fmt.Sprint(n))
}

// spinner returns a function that shows a status line on a terminal (an
// empty line clears it), and does nothing when stderr is piped.
func (a *app) spinner(what string) func(string) {
	if !a.bars {
		return func(string) {}
	}
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return func(status string) {
		if status == "" {
			_ = bar.Finish()
			return
		}
		bar.Describe(strings.TrimSpace(what + "  " + status))
		_ = bar.Add(1)
	}
}

// reconcileEnv is the reconciler's configuration (see stageEnv).
func (a *app) reconcileEnv(ctx context.Context) (map[string]string, func(string) string, error) {
	return a.stageEnv(ctx, map[string]string{
		"ApiKeyParameter": "STRIPE_API_KEY_PARAMETER", "StripeMode": "STRIPE_MODE", "RetentionDays": "RETENTION_DAYS", "ReconcileRate": "RECONCILE_RATE",
	}, "events")
}

// stageEnv is the deployed reconciler's environment as inboxctl's
// reconcile and audit rebuild it, for its one parser to read: with --stage
// the stage's parameters (fromStack: each parameter's variable), and
// getenv reads nothing from the shell; locally the shell's environment,
// which must name a Stripe API key (with read access to reads).
//
// With --stage nothing comes from the shell: a local STRIPE_API_KEY or
// STRIPE_MODE must not run a test key against a live stage, and a
// STRIPE_API_BASE left from local work (a plain-http stand-in, say) must
// not receive the stage's live key: the stage's reconciler talks to
// Stripe's API, so this run does too.
func (a *app) stageEnv(ctx context.Context, fromStack map[string]string, reads string) (map[string]string, func(string) string, error) {
	env := map[string]string{}
	getenv := a.getenv
	if a.deployed() {
		getenv = func(string) string { return "" }
		params, err := a.stageParameters(ctx)
		if err != nil {
			return nil, nil, err
		}
		for param, key := range fromStack {
			if v := params[param]; v != "" {
				env[key] = v
			}
		}
		if env["STRIPE_API_KEY_PARAMETER"] == "" {
			return nil, nil, fmt.Errorf("%s: stack %s has no ApiKeyParameter parameter: deploy the current template.yaml", a.target(), a.stackName())
		}
		if a.stageAPIBase != "" {
			env["STRIPE_API_BASE"] = a.stageAPIBase
		}
	} else if a.getenv("STRIPE_API_KEY") == "" && a.getenv("STRIPE_API_KEY_PARAMETER") == "" && a.getenv("STRIPE_API_BASE") == "" {
		return nil, nil, usagef("no Stripe API key: set STRIPE_API_KEY (a restricted key with read access to %s) "+
			"or STRIPE_API_KEY_PARAMETER (its SSM parameter), or use --stage", reads)
	}
	return env, getenv, nil
}

// printReconcile prints a run's result: as ReconcileJSON with --json,
// else as rows, with what a loss or a backfill means.
func (a *app) printReconcile(res reconcile.Result, o reconcileOpts, since time.Duration) error {
	out := ReconcileJSON{
		RunID: res.RunID, Since: o.since, Listed: res.Listed, Missing: res.Missing, Backfilled: res.Backfilled, Raced: res.Raced,
		Stuck: res.Stuck, Pages: res.Pages, Throttled: res.Throttled, Stopped: res.Stopped,
		DurationMs: float64(res.Duration.Microseconds()) / 1000,
	}
	if since == 0 {
		out.CheckpointAge = res.CheckpointAge.Round(time.Second).String()
	}
	if o.asJSON {
		return writeJSON(a.stdout, out)
	}
	stopped := "reached the present"
	if res.Stopped != "" {
		stopped = "stopped early: " + res.Stopped + " (the next run resumes)"
	}
	pairs := [][2]string{
		{"listed", fmt.Sprint(res.Listed)},
		{"missing_found", a.count(res.Missing, red)},
		{"backfilled", fmt.Sprint(res.Backfilled)},
		{"stuck_requeued", a.count(res.Stuck, yellow)},
		{"pages", fmt.Sprint(res.Pages)},
		{"throttled", fmt.Sprint(res.Throttled)},
		{"result", stopped},
		{"checkpoint_age", out.CheckpointAge},
		{"duration", res.Duration.Round(time.Millisecond).String()},
	}
	if err := a.rows(pairs); err != nil {
		return err
	}
	if res.Missing > 0 {
		fmt.Fprintf(a.stdout, "\n%d event(s) never arrived by webhook and were ingested now: check the endpoint in Stripe's dashboard.\n", res.Missing)
	}
	if res.Backfilled > 0 && !o.withEffects {
		fmt.Fprintf(a.stdout, "\n%d history event(s) ingested for the mirror only: no effect runs for them (outcome backfilled).\n", res.Backfilled)
	}
	return nil
}

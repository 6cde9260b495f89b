package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// AuditJSON is the JSON shape of `inboxctl audit --json`: audit.Result.
type AuditJSON = audit.Result

type auditOpts struct {
	dryRun        bool
	asJSON        bool
	maxPages      int
	startingAfter string
	runEffects    bool
}

func (a *app) auditCmd() *cobra.Command {
	var o auditOpts
	cmd := &cobra.Command{
		Use:   "audit [--dry-run] [--json]",
		Short: "Compare every Stripe subscription with the mirror and repair what differs",
		Long: `audit lists every subscription Stripe has (status=all: canceled ones too),
100 a page within the reconciler's rate limit, compares each with the mirror's
snapshot and the customer's entitlement (status, customer, price, current
period end, cancel at period end), and repairs a difference by writing
Stripe's object through the same guarded write as an event: a newer event
still wins, the snapshot records what changed (settled_by audit), and none of
your effects runs unless --run-effects says so. A subscription the mirror
lacks is written as a backfill is.

With --run-effects each repair runs your effects (shared/pipeline/hooks) as an event
applying the object would (customer.subscription.created for one the mirror
lacked, .deleted for a canceled one, .updated otherwise), with their
settings and secrets found as the processor finds them (EFFECT_SETTINGS,
EFFECT_SECRETS, or the stage's with --stage). The event's id, and so each
effect's idempotency key, comes from the subscription and the state the
repair writes: an audit run again does not run an effect twice.

Every run is kept (the last 10, with up to 50 repaired objects each) for
the console's audit page and inboxctl status.

With --dry-run nothing is written and the result says what would be
repaired. --max-pages stops after N pages and prints where to resume
(--starting-after).

It needs a Stripe API key with read access to subscriptions, found as
reconcile finds it (STRIPE_API_KEY, STRIPE_API_KEY_PARAMETER, or the stage's
with --stage).`,
		Example: `  inboxctl audit --dry-run
  inboxctl --stage prod audit --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.audit(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "change nothing: say what would be repaired")
	f.BoolVar(&o.asJSON, "json", false, "print the result as JSON (AuditJSON in docs/cli.md)")
	f.IntVar(&o.maxPages, "max-pages", 0, "stop after N pages of 100 subscriptions (default: the whole list)")
	f.StringVar(&o.startingAfter, "starting-after", "", "resume a stopped audit after this subscription id (its cursor)")
	f.BoolVar(&o.runEffects, "run-effects", false, "run your effects for each repair, as an event applying the object would (default: none)")
	return cmd
}

func (a *app) audit(ctx context.Context, o auditOpts) error {
	if o.maxPages < 0 {
		return usagef("--max-pages must not be negative")
	}
	env, getenv, err := a.auditEnv(ctx)
	if err != nil {
		return err
	}
	cfg, err := a.aws(ctx)
	if err != nil {
		return err
	}
	// The reconciler's configuration names every table and queue; the
	// audit uses the mirror's.
	s, err := a.open(ctx, withEvents|withQueue|withMirror)
	if err != nil {
		return err
	}
	env["EVENTS_TABLE"], env["MIRROR_TABLE"], env["QUEUE_URL"] = s.Events.Table, s.Mirror.Table, s.Queue
	env["AUDIT_RUN_EFFECTS"] = fmt.Sprint(o.runEffects)
	aud, err := reconcilerboot.AuditorFromEnv(ctx, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return getenv(k)
	}, cfg, hooks.Registry())
	if err != nil {
		return a.hint(err)
	}
	show := a.spinner("auditing")
	res, err := aud.Run(ctx, audit.Options{DryRun: o.dryRun, MaxPages: o.maxPages, StartingAfter: o.startingAfter})
	show("")
	if res.NotRecorded != "" {
		fmt.Fprintf(a.stderr, "warning: this run is not kept for the console and inboxctl status: %s\n", res.NotRecorded)
	}
	if err != nil {
		if res.Cursor != "" {
			fmt.Fprintf(a.stderr, "stopped after %s: resume with --starting-after %s\n", res.Cursor, res.Cursor)
		}
		return a.hint(err)
	}
	if o.asJSON {
		return writeJSON(a.stdout, res)
	}
	return a.printAudit(res, o)
}

// auditEnv is the auditor's configuration (see stageEnv), with the
// stage's effect settings and secrets, which an audit's repairs may run.
func (a *app) auditEnv(ctx context.Context) (map[string]string, func(string) string, error) {
	env, getenv, err := a.stageEnv(ctx, map[string]string{
		"ApiKeyParameter": "STRIPE_API_KEY_PARAMETER", "StripeMode": "STRIPE_MODE", "MirrorKeepFields": "MIRROR_KEEP_FIELDS",
		"EffectSettings": "EFFECT_SETTINGS", "EffectSecrets": "EFFECT_SECRETS",
	}, "subscriptions")
	if err == nil && a.deployed() && env["EFFECT_SECRETS"] != "" {
		env["STAGE"], env["EFFECT_SECRETS_PATH"] = a.stage, "/webhook-inbox/"+a.stage+"/effects/"
	}
	return env, getenv, err
}

// printAudit prints an audit's result as rows, then each repair, what
// the mirror holds that Stripe's list does not, and what drift means.
func (a *app) printAudit(res audit.Result, o auditOpts) error {
	repaired := "repaired"
	if o.dryRun {
		repaired = "would repair"
	}
	pairs := [][2]string{
		{"listed", fmt.Sprint(res.Listed)},
		{"matched", fmt.Sprint(res.Matched)},
		{repaired, a.count(res.Repaired, red)},
		{"missing_here", a.count(res.MissingHere, yellow)},
		{"unknown_there", a.count(res.UnknownThere, yellow)},
		{"raced", fmt.Sprint(res.Raced)},
		{"pages", fmt.Sprint(res.Pages)},
		{"dry_run", fmt.Sprint(res.DryRun)},
	}
	if o.runEffects {
		pairs = append(pairs, [2]string{"effects", fmt.Sprintf("%d repairs ran your effects", res.Effects)})
	}
	if res.Cursor != "" {
		pairs = append(pairs, [2]string{"resume", "--starting-after " + res.Cursor})
	}
	if err := a.rows(pairs); err != nil {
		return err
	}
	for _, r := range res.Repairs {
		fmt.Fprintf(a.stdout, "\n%s (%s): %s", mirror.Key(r.Account, r.ID), r.Customer, strings.Join(r.Changes, "; "))
	}
	if len(res.Unknown) > 0 {
		fmt.Fprintf(a.stdout, "\nin the mirror, not in Stripe's list: %s\n", strings.Join(res.Unknown, ", "))
	}
	if len(res.Repairs) > 0 {
		fmt.Fprintln(a.stdout)
		if !o.dryRun {
			fmt.Fprintln(a.stdout, "\nDrift means deliveries are being lost somewhere: see the runbook's audit section.")
		}
	}
	return nil
}

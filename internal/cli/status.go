package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// StatusJSON is the stable JSON shape of inboxctl status --json: the
// window's events by status (Counts, those that need a person first), the
// dead-letter queue's depth, the events received and processed per hour,
// the received→processed percentiles and the reconciler's last run.
type StatusJSON struct {
	Since    string `json:"since"`
	Until    string `json:"until"`
	Received int    `json:"received"`
	// Failing counts the window's events in a status of event.Failing
	// (failed, dead_lettered, failed_permanent).
	Failing  int               `json:"failing"`
	Counts   []StatusCountJSON `json:"counts"`
	DLQDepth int               `json:"dlq_depth"`
	Hours    []StatusHourJSON  `json:"hours"`
	// Sampled is how many of the window's newest events the processed
	// series and the percentiles come from (at most 1,000).
	Sampled    int                  `json:"sampled"`
	P50MS      int64                `json:"p50_ms"`
	P95MS      int64                `json:"p95_ms"`
	Reconciler StatusReconcilerJSON `json:"reconciler"`
	// Audit is the audit's last run; omitted before the first.
	Audit *StatusAuditJSON `json:"audit,omitempty"`
}

// StatusAuditJSON is the audit's last run in StatusJSON: when, its
// outcome (completed, resumable or failed), what it found, and whether it
// was a dry run.
type StatusAuditJSON struct {
	RunID        string `json:"run_id"`
	StartedAt    string `json:"started_at"`
	FinishedAt   string `json:"finished_at"`
	Outcome      string `json:"outcome"`
	DryRun       bool   `json:"dry_run"`
	Listed       int    `json:"listed"`
	Matched      int    `json:"matched"`
	Repaired     int    `json:"repaired"`
	MissingHere  int    `json:"missing_here"`
	UnknownThere int    `json:"unknown_there"`
	Pages        int    `json:"pages"`
}

func auditJSON(runs []store.AuditRun) *StatusAuditJSON {
	if len(runs) == 0 {
		return nil
	}
	r := runs[0]
	ended := outcome.RunComplete
	switch {
	case r.Error != "":
		ended = outcome.RunAborted
	case r.Resumable():
		ended = outcome.RunPartial
	}
	return &StatusAuditJSON{
		RunID: r.ID, StartedAt: ts(r.StartedAt), FinishedAt: ts(r.FinishedAt), Outcome: string(ended), DryRun: r.DryRun,
		Listed: r.Listed, Matched: r.Matched, Repaired: r.Repaired, MissingHere: r.MissingHere, UnknownThere: r.UnknownThere, Pages: r.Pages,
	}
}

// StatusCountJSON is one status's count in StatusJSON.
type StatusCountJSON struct {
	Status  string `json:"status"`
	Count   int    `json:"count"`
	Failing bool   `json:"failing"`
}

// StatusHourJSON is one hour of StatusJSON's series.
type StatusHourJSON struct {
	Start     string `json:"start"`
	Received  int    `json:"received"`
	Processed int    `json:"processed"`
}

// StatusReconcilerJSON is the reconciler's state in StatusJSON: its last
// run, and how far behind its furthest-behind checkpoint is (empty and
// zero when it never ran).
type StatusReconcilerJSON struct {
	LastRunAt      string `json:"last_run_at,omitempty"`
	LastRunOutcome string `json:"last_run_outcome,omitempty"`
	// CheckpointAt is the oldest DoneThrough of the handled types' groups;
	// CheckpointAgeSeconds how long before the report's end it is.
	CheckpointAt         string `json:"checkpoint_at,omitempty"`
	CheckpointAgeSeconds int64  `json:"checkpoint_age_seconds,omitempty"`
}

func (a *app) statusCmd() *cobra.Command {
	var since string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--since 24h] [--json]",
		Short: "Is anything failing? The window's events by status, the dead-letter queue's depth, throughput and latency",
		Long: `status answers "is anything failing?" for the events received within
--since: how many are in each status (failed, dead_lettered and
failed_permanent first: they need a person), the dead-letter queue's
depth, events received and processed per hour, the time from received to
processed (p50, p95), and the reconciler's last run and checkpoint. Each
count ends with the command that lists its events.

It never scans the table: it reads the window's entries of the by_day
index (keys only), counts the operators' lanes of the sparse unprocessed
index, and reads by key the pending lane's records and the window's
newest 1,000 (docs/cli.md says what that costs).`,
		Example: `  inboxctl status
  inboxctl status --since 7d
  inboxctl --stage prod status --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.statusRun(cmd.Context(), since, asJSON)
		},
	}
	cmd.Flags().StringVar(&since, "since", "24h", "how far back: a duration (24h, 90m, 7d) or an RFC 3339 time")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (StatusJSON in docs/cli.md)")
	return cmd
}

func (a *app) statusReport(ctx context.Context, sinceFlag string) (StatusJSON, error) {
	now := a.now()
	since, err := parseSince(sinceFlag, now)
	if err != nil {
		return StatusJSON{}, err
	}
	if since.After(now) {
		return StatusJSON{}, usagef("--since %s is in the future", sinceFlag)
	}
	s, err := a.open(ctx, withEvents|withDLQ)
	if err != nil {
		return StatusJSON{}, err
	}
	h, err := s.Health(ctx, event.ProviderStripe, since, now)
	if err != nil {
		return StatusJSON{}, err
	}
	out := statusJSON(h)
	rec := a.reconciler(s, a.handledTypes())
	runs, err := rec.Runs(ctx)
	if err != nil {
		return StatusJSON{}, a.tableHint(s.Events.Table, err)
	}
	cps, err := rec.Checkpoints(ctx)
	if err != nil {
		return StatusJSON{}, a.tableHint(s.Events.Table, err)
	}
	out.Reconciler = reconcilerJSON(runs, cps, now)
	audits, err := rec.Audits(ctx)
	if err != nil {
		return StatusJSON{}, a.tableHint(s.Events.Table, err)
	}
	out.Audit = auditJSON(audits)
	return out, nil
}

func statusJSON(h ops.Health) StatusJSON {
	out := StatusJSON{
		Since: ts(h.Since), Until: ts(h.Until), Received: h.Received, DLQDepth: h.DLQDepth,
		Sampled: h.Sampled, P50MS: h.P50.Milliseconds(), P95MS: h.P95.Milliseconds(),
		Counts: []StatusCountJSON{}, Hours: []StatusHourJSON{},
	}
	for _, st := range event.ByAttention {
		n := h.ByStatus[st]
		out.Counts = append(out.Counts, StatusCountJSON{Status: string(st), Count: n, Failing: st.IsFailing()})
		if st.IsFailing() {
			out.Failing += n
		}
	}
	for _, x := range h.Hours {
		out.Hours = append(out.Hours, StatusHourJSON{Start: ts(x.Start), Received: x.Received, Processed: x.Processed})
	}
	return out
}

// reconcilerJSON is the reconciler's last run and its furthest-behind
// checkpoint; a group never reconciled leaves the checkpoint empty.
func reconcilerJSON(runs []store.Run, cps []store.Checkpoint, now time.Time) StatusReconcilerJSON {
	var out StatusReconcilerJSON
	if len(runs) > 0 {
		out.LastRunAt, out.LastRunOutcome = ts(runs[0].StartedAt), runs[0].Outcome
	}
	var oldest int64
	for _, cp := range cps {
		if cp.DoneThrough == 0 {
			return out
		}
		if oldest == 0 || cp.DoneThrough < oldest {
			oldest = cp.DoneThrough
		}
	}
	if oldest != 0 {
		at := time.Unix(oldest, 0)
		out.CheckpointAt, out.CheckpointAgeSeconds = ts(at), int64(now.Sub(at)/time.Second)
	}
	return out
}

func (a *app) statusRun(ctx context.Context, since string, asJSON bool) error {
	r, err := a.statusReport(ctx, since)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, r)
	}
	sinceAt, _ := time.Parse(time.RFC3339Nano, r.Since)
	fmt.Fprintf(a.stdout, "%d events received since %s; %d failing\n\n", r.Received, when(sinceAt), r.Failing)
	var rows [][]string
	for _, c := range r.Counts {
		list := ""
		if c.Count > 0 && c.Status != string(event.StatusProcessed) {
			list = "inboxctl events --status " + c.Status + " --since " + since
		}
		rows = append(rows, []string{a.status(c.Status), fmt.Sprint(c.Count), list})
	}
	if err := a.table([]string{"STATUS", "EVENTS", "LIST_THEM"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\ndead-letter queue: %d messages", r.DLQDepth)
	if r.DLQDepth > 0 {
		fmt.Fprint(a.stdout, " (inboxctl dlq list)")
	}
	fmt.Fprintln(a.stdout)
	if r.P50MS > 0 || r.P95MS > 0 {
		fmt.Fprintf(a.stdout, "received → processed: p50 %s, p95 %s (of the %d newest events)\n",
			time.Duration(r.P50MS)*time.Millisecond, time.Duration(r.P95MS)*time.Millisecond, r.Sampled)
	} else {
		fmt.Fprintln(a.stdout, "received → processed: no processed event in the window")
	}
	fmt.Fprintf(a.stdout, "per hour, received:  %s\n", spark(r.Hours, func(h StatusHourJSON) int { return h.Received }))
	fmt.Fprintf(a.stdout, "per hour, processed: %s\n", spark(r.Hours, func(h StatusHourJSON) int { return h.Processed }))
	switch rc := r.Reconciler; {
	case rc.LastRunAt == "":
		fmt.Fprintln(a.stdout, "reconciler: no run recorded (off, or not run yet: inboxctl reconcile)")
	default:
		at, _ := time.Parse(time.RFC3339Nano, rc.LastRunAt)
		fmt.Fprintf(a.stdout, "reconciler: last run %s (%s), %s", when(at), ago(a.now(), at), rc.LastRunOutcome)
		if rc.CheckpointAt != "" {
			fmt.Fprintf(a.stdout, "; checkpoint %s behind", time.Duration(rc.CheckpointAgeSeconds)*time.Second)
		}
		fmt.Fprintln(a.stdout)
	}
	if au := r.Audit; au == nil {
		fmt.Fprintln(a.stdout, "audit: no run recorded (inboxctl audit --dry-run)")
	} else {
		at, _ := time.Parse(time.RFC3339Nano, au.StartedAt)
		repaired := "repaired"
		if au.DryRun {
			repaired = "would repair (dry run)"
		}
		fmt.Fprintf(a.stdout, "audit: last run %s (%s), %s: %d listed, %s %s, %d missing here, %d unknown there\n",
			when(at), ago(a.now(), at), au.Outcome, au.Listed, repaired, a.count(au.Repaired, red), au.MissingHere, au.UnknownThere)
	}
	return nil
}

// spark draws a series as one line of block characters, oldest first.
func spark(hours []StatusHourJSON, v func(StatusHourJSON) int) string {
	const blocks = "▁▂▃▄▅▆▇█"
	peak := 0
	for _, h := range hours {
		peak = max(peak, v(h))
	}
	var b strings.Builder
	for _, h := range hours {
		n := v(h)
		switch {
		case n == 0:
			b.WriteRune(' ')
		default:
			r := []rune(blocks)
			b.WriteRune(r[(n*len(r)-1)/peak])
		}
	}
	return fmt.Sprintf("[%s] peak %d", b.String(), peak)
}

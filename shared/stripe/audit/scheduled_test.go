package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
)

// runLine is the one log line of a scheduled run.
func runLine(t *testing.T, logs *bytes.Buffer) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var line map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
		t.Fatalf("run line: %v\n%s", err, logs.String())
	}
	logs.Reset()
	return line
}

// TestAScheduledAuditCutByItsBudgetResumesFromTheCheckpoint: a run that
// its page budget stops keeps where it stopped in the events table beside
// the reconciler's checkpoints; the next run resumes there and, at the end
// of the list, closes the pass; each run's line carries its repairs, and
// whether it completed, as metrics.
func TestAScheduledAuditCutByItsBudgetResumesFromTheCheckpoint(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	for i := range 150 {
		w.stripeHas(t, fmt.Sprintf("sub_sched%03d", i), fmt.Sprintf("cus_sched%03d", i), "active")
	}
	cps := &store.Checkpoints{DB: w.db, Table: w.stack.Table("EventsTable")}
	var logs bytes.Buffer
	s := &audit.Scheduled{Auditor: w.a, Checkpoints: cps, MaxPages: 1, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}

	first, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := cps.Load(ctx, audit.CheckpointName)
	if err != nil {
		t.Fatal(err)
	}
	if first.Listed != 100 || first.Repaired != 100 || !cp.InProgress() || cp.Cursor != first.Cursor || cp.Cursor == "" {
		t.Fatalf(
			"first run: listed %d, repaired %d, checkpoint %+v; want 100, 100 and a pass in progress at %q",
			first.Listed,
			first.Repaired,
			cp,
			first.Cursor,
		)
	}
	line := runLine(t, &logs)
	if line[audit.MetricRepaired] != 100.0 || line[audit.MetricCompleted] != 0.0 || line[audit.MetricFailed] != 0.0 || line["function"] != "reconciler" {
		t.Errorf("first run line: %v", line)
	}

	// The AuditResume schedule's run continues the pass.
	rest, ran, err := s.Resume(ctx)
	if err != nil || !ran {
		t.Fatalf("resume: ran %v, %v; want the pass continued", ran, err)
	}
	cp2, _ := cps.Load(ctx, audit.CheckpointName)
	if rest.Listed != 50 || rest.Repaired != 50 || rest.Cursor != "" || cp2.InProgress() || cp2.Cursor != "" || cp2.DoneThrough == 0 || cp2.Seq != cp.Seq+1 {
		t.Errorf(
			"resumed run: listed %d, repaired %d, cursor %q, checkpoint %+v; want the other 50 and the pass closed",
			rest.Listed,
			rest.Repaired,
			rest.Cursor,
			cp2,
		)
	}
	if line := runLine(t, &logs); line[audit.MetricRepaired] != 50.0 || line[audit.MetricCompleted] != 1.0 {
		t.Errorf("resumed run line: %v", line)
	}

	// With no pass in progress a resume does nothing, and logs nothing.
	if _, ran, err := s.Resume(ctx); err != nil || ran || logs.Len() != 0 {
		t.Errorf("resume with no pass in progress: ran %v, %v, logged %q", ran, err, logs.String())
	}

	// A new pass starts from the top: nothing differs now.
	again, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again.Listed != 100 || again.Matched != 100 || again.Repaired != 0 {
		t.Errorf("next pass: listed %d, matched %d, repaired %d; want the first 100 matched", again.Listed, again.Matched, again.Repaired)
	}
	if line := runLine(t, &logs); line[audit.MetricRepaired] != 0.0 {
		t.Errorf("next pass line: %v", line)
	}
}

// TestAFailedScheduledAuditSaysSo: a run whose list fails reports the
// failure as its metric (AuditFailedAlarm) and returns the error, so the
// invocation counts as failed.
func TestAFailedScheduledAuditSaysSo(t *testing.T) {
	w := newWorld(t)
	w.fake.Close()
	cps := &store.Checkpoints{DB: w.db, Table: w.stack.Table("EventsTable")}
	var logs bytes.Buffer
	s := &audit.Scheduled{Auditor: w.a, Checkpoints: cps, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	if _, err := s.Run(context.Background()); err == nil {
		t.Fatal("a run whose list failed returned no error")
	}
	if line := runLine(t, &logs); line[audit.MetricFailed] != 1.0 || line[audit.MetricCompleted] != 0.0 || line["level"] != "ERROR" {
		t.Errorf("failed run line: %v", line)
	}
}

package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// AuditRun is one audit of the mirror against the provider's API (package
// audit's Result) as an operator reads it afterwards: when, what it
// found, whether it reached the end of the list, and what it repaired.
type AuditRun struct {
	ID                    string
	StartedAt, FinishedAt time.Time
	// DryRun: nothing was written; Repairs are what would have been.
	DryRun bool
	// ResumedAfter is the subscription a run resuming a pass started
	// after; "" for a run from the start of the list.
	ResumedAfter string
	// Cursor is where a run that stopped before the list ended resumes
	// (Resumable); "" when it reached the end.
	Cursor string
	// Error is why a failed run failed; "" when it did not.
	Error                                                              string
	Listed, Matched, Repaired, MissingHere, UnknownThere, Raced, Pages int
	// Repairs are the objects repaired, the first MaxAuditRepairs of them;
	// RepairsOmitted counts those beyond.
	Repairs        []AuditRepair
	RepairsOmitted int
}

// Completed reports whether the run reached the end of the list without
// failing.
func (a AuditRun) Completed() bool { return a.Error == "" && a.Cursor == "" }

// Resumable reports whether the run stopped before the end of the list
// with a place to resume from (its Cursor).
func (a AuditRun) Resumable() bool { return a.Cursor != "" }

// AuditRepair is one object an audit repaired (or, in a dry run, would
// have): its id, its connected account ("" for the platform's own), its
// customer, and what changed ("status: active → canceled"), at the time
// the audit asked the API.
type AuditRepair struct {
	ID, Account, Customer string
	// Missing: the mirror had no snapshot; it was written as a backfill is.
	Missing bool
	Changes []string
	At      time.Time
}

// MaxAuditRuns is how many audit runs Runs keeps: a week and a half of a
// daily schedule, or the runs of one long pass.
const MaxAuditRuns = 10

// MaxAuditRepairs is how many repairs of one run are kept: the item of
// MaxAuditRuns runs stays a few dozen KB (a first audit that backfills a
// whole account repairs thousands; the log line of the run names them).
const MaxAuditRepairs = 50

// maxAuditChanges bounds one repair's list of changes.
const maxAuditChanges = 10

// prefixAuditRuns starts the key of the audit runs item, beside the
// reconciler's (prefixRuns): a key no event can have.
const prefixAuditRuns = "audit_runs#"

// kindAuditRuns marks the audit runs item (attrKind).
const kindAuditRuns = "audit_runs"

// Attribute names of an audit run in the list (its id, start, error and
// pages are a reconciler run's).
const (
	attrAuditFinished     = "run_finished_at" // Unix milliseconds
	attrAuditDryRun       = "audit_dry_run"
	attrAuditResumed      = "audit_resumed_after"
	attrAuditCursor       = "audit_cursor"
	attrAuditListed       = "audit_run_listed"
	attrAuditMatched      = "audit_run_matched"
	attrAuditRepaired     = "audit_run_repaired"
	attrAuditMissingHere  = "audit_run_missing_here"
	attrAuditUnknownThere = "audit_run_unknown_there"
	attrAuditRaced        = "audit_run_raced"
	attrAuditRepairs      = "audit_repairs"
	attrAuditOmitted      = "audit_repairs_omitted"
	attrRepairID          = "repair_id"
	attrRepairAccount     = "repair_account"
	attrRepairCustomer    = "repair_customer"
	attrRepairMissing     = "repair_missing_here"
	attrRepairChanges     = "repair_changes"
	attrRepairAt          = "repair_at" // Unix milliseconds
)

func auditRunsKey(provider string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(prefixAuditRuns + provider)}
}

// RecordAudit adds run to the provider's last audit runs, dropping the
// oldest beyond MaxAuditRuns, as Record does for the reconciler's: one
// read and one conditioned write of the one item. Repairs beyond
// MaxAuditRepairs are counted in RepairsOmitted, not kept.
func (r *Runs) RecordAudit(ctx context.Context, provider string, run AuditRun) error {
	if err := r.prepend(ctx, auditRunsKey(provider), kindAuditRuns, auditRunAttr(run), MaxAuditRuns); err != nil {
		return fmt.Errorf("store: record audit run %s: %w", run.ID, err)
	}
	return nil
}

// RecentAudits returns the provider's last audit runs, newest first; none
// before the first run. It is one read.
func (r *Runs) RecentAudits(ctx context.Context, provider string) ([]AuditRun, error) {
	list, _, err := r.read(ctx, auditRunsKey(provider))
	if err != nil {
		return nil, fmt.Errorf("store: read audit runs: %w", err)
	}
	var runs []AuditRun
	for _, v := range list {
		if m, ok := v.(*types.AttributeValueMemberM); ok {
			runs = append(runs, auditRunFrom(m.Value))
		}
	}
	return runs, nil
}

func auditRunAttr(x AuditRun) types.AttributeValue {
	m := map[string]types.AttributeValue{
		attrRunID:             ddbattr.S(x.ID),
		attrRunStarted:        ddbattr.Millis(x.StartedAt),
		attrAuditFinished:     ddbattr.Millis(x.FinishedAt),
		attrAuditDryRun:       ddbattr.Bool(x.DryRun),
		attrAuditListed:       ddbattr.N(int64(x.Listed)),
		attrAuditMatched:      ddbattr.N(int64(x.Matched)),
		attrAuditRepaired:     ddbattr.N(int64(x.Repaired)),
		attrAuditMissingHere:  ddbattr.N(int64(x.MissingHere)),
		attrAuditUnknownThere: ddbattr.N(int64(x.UnknownThere)),
		attrAuditRaced:        ddbattr.N(int64(x.Raced)),
		attrRunPages:          ddbattr.N(int64(x.Pages)),
	}
	if x.ResumedAfter != "" {
		m[attrAuditResumed] = ddbattr.S(x.ResumedAfter)
	}
	if x.Cursor != "" {
		m[attrAuditCursor] = ddbattr.S(x.Cursor)
	}
	if x.Error != "" {
		e := x.Error
		if len(e) > maxRunError {
			e = e[:maxRunError] + "…"
		}
		m[attrRunError] = ddbattr.S(e)
	}
	kept, omitted := x.Repairs, x.RepairsOmitted
	if len(kept) > MaxAuditRepairs {
		kept, omitted = kept[:MaxAuditRepairs], omitted+len(kept)-MaxAuditRepairs
	}
	if omitted > 0 {
		m[attrAuditOmitted] = ddbattr.N(int64(omitted))
	}
	if len(kept) > 0 {
		list := make([]types.AttributeValue, len(kept))
		for i, rp := range kept {
			changes := rp.Changes
			if len(changes) > maxAuditChanges {
				changes = changes[:maxAuditChanges]
			}
			rm := map[string]types.AttributeValue{
				attrRepairID: ddbattr.S(rp.ID),
				attrRepairAt: ddbattr.Millis(rp.At),
			}
			if rp.Account != "" {
				rm[attrRepairAccount] = ddbattr.S(rp.Account)
			}
			if rp.Customer != "" {
				rm[attrRepairCustomer] = ddbattr.S(rp.Customer)
			}
			if rp.Missing {
				rm[attrRepairMissing] = ddbattr.Bool(true)
			}
			if len(changes) > 0 {
				rm[attrRepairChanges] = ddbattr.Strings(changes)
			}
			list[i] = &types.AttributeValueMemberM{Value: rm}
		}
		m[attrAuditRepairs] = &types.AttributeValueMemberL{Value: list}
	}
	return &types.AttributeValueMemberM{Value: m}
}

func auditRunFrom(m map[string]types.AttributeValue) AuditRun {
	a := AuditRun{
		ID:             ddbattr.GetS(m, attrRunID),
		StartedAt:      ddbattr.GetMillis(m, attrRunStarted),
		FinishedAt:     ddbattr.GetMillis(m, attrAuditFinished),
		DryRun:         ddbattr.GetBool(m, attrAuditDryRun),
		ResumedAfter:   ddbattr.GetS(m, attrAuditResumed),
		Cursor:         ddbattr.GetS(m, attrAuditCursor),
		Error:          ddbattr.GetS(m, attrRunError),
		Listed:         int(ddbattr.GetN(m, attrAuditListed)),
		Matched:        int(ddbattr.GetN(m, attrAuditMatched)),
		Repaired:       int(ddbattr.GetN(m, attrAuditRepaired)),
		MissingHere:    int(ddbattr.GetN(m, attrAuditMissingHere)),
		UnknownThere:   int(ddbattr.GetN(m, attrAuditUnknownThere)),
		Raced:          int(ddbattr.GetN(m, attrAuditRaced)),
		Pages:          int(ddbattr.GetN(m, attrRunPages)),
		RepairsOmitted: int(ddbattr.GetN(m, attrAuditOmitted)),
	}
	if l, ok := m[attrAuditRepairs].(*types.AttributeValueMemberL); ok {
		for _, v := range l.Value {
			rm, ok := v.(*types.AttributeValueMemberM)
			if !ok {
				continue
			}
			a.Repairs = append(a.Repairs, AuditRepair{
				ID:       ddbattr.GetS(rm.Value, attrRepairID),
				Account:  ddbattr.GetS(rm.Value, attrRepairAccount),
				Customer: ddbattr.GetS(rm.Value, attrRepairCustomer),
				Missing:  ddbattr.GetBool(rm.Value, attrRepairMissing),
				Changes:  ddbattr.GetStrings(rm.Value, attrRepairChanges),
				At:       ddbattr.GetMillis(rm.Value, attrRepairAt),
			})
		}
	}
	return a
}

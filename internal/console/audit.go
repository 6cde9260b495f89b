package console

import (
	"net/http"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// auditView is the audit page: the last audit run's summary and the
// objects it repaired, then the earlier runs' summaries.
type auditView struct {
	Last    *store.AuditRun
	Earlier []store.AuditRun
}

func (s *Server) audit(w http.ResponseWriter, r *http.Request) {
	runs, err := s.cfg.Reconciler.Audits(r.Context())
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	var view auditView
	if len(runs) > 0 {
		view.Last, view.Earlier = &runs[0], runs[1:]
	}
	s.render(w, r, http.StatusOK, "audit", "Audit", view, "")
}

// objectRepair is one audit repair of the object page's object.
type objectRepair struct {
	RunID string
	store.AuditRepair
}

// repairsOf lists the kept audit runs' repairs of the object id of
// account, newest first; a dry run repaired nothing and is left out.
func repairsOf(runs []store.AuditRun, account, id string) []objectRepair {
	var out []objectRepair
	for _, run := range runs {
		if run.DryRun {
			continue
		}
		for _, rp := range run.Repairs {
			if rp.ID == id && rp.Account == account {
				out = append(out, objectRepair{RunID: run.ID, AuditRepair: rp})
			}
		}
	}
	return out
}

// checkpointRow is a reconciler checkpoint with what its name means: the
// provider and connected account whose events it lists ("<provider>#" or
// "<provider>#<account>#", then a hash of the group's types).
type checkpointRow struct {
	store.Checkpoint
	Provider, Account string
}

func checkpointRows(cps []store.Checkpoint) []checkpointRow {
	out := make([]checkpointRow, 0, len(cps))
	for _, cp := range cps {
		row := checkpointRow{Checkpoint: cp}
		parts := strings.Split(cp.Name, "#")
		row.Provider = providerName(parts[0])
		if len(parts) == 3 {
			row.Account = parts[1]
		}
		out = append(out, row)
	}
	return out
}

// providerName is a provider's name as people write it.
func providerName(p string) string {
	switch p {
	case "stripe":
		return "Stripe"
	case "github":
		return "GitHub"
	case "":
		return "–"
	}
	return strings.ToUpper(p[:1]) + p[1:]
}

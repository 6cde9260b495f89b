package console

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// Health is a window's picture of the stack (ops.Health): what the
// health page shows.
type Health = ops.Health

// healthView is the health page: the console's first page.
type healthView struct {
	H Health
	// Counts are the window's counts, those that need a person first,
	// each linking to its events.
	Counts  []statusCount
	Failing int
	// Chart is the per-hour series as an SVG's shapes.
	Chart chart
	// LastRun is the reconciler's last run; CheckpointAt its
	// furthest-behind checkpoint (zero when a group never ran).
	LastRun      *store.Run
	CheckpointAt time.Time
	Never        bool
	// LastAudit is the audit's last run; Off why the reconciler does not
	// run here (Config.ReconcilerOff).
	LastAudit *store.AuditRun
	Off       string
}

type statusCount struct {
	Status  event.Status
	Count   int
	Failing bool
	URL     string
}

// chart is a bar chart of received events per hour with processed ones
// beside each bar, drawn on a viewBox of Width × Height units, which the
// stylesheet scales to the page's width.
type chart struct {
	Width, Height int
	Bars          []bar
	Peak          int
	// Ticks label every sixth hour.
	Ticks []tick
}

type bar struct {
	X, PX, W            int
	RY, RH, PY, PH      int
	Received, Processed int
	Label               string
}

type tick struct {
	X     int
	Label string
}

const (
	chartHeight = 120
	chartBarW   = 10
	chartGap    = 4
	chartAxis   = 16
)

func newChart(hours []store.Hour) chart {
	c := chart{Height: chartHeight + chartAxis}
	for _, h := range hours {
		c.Peak = max(c.Peak, h.Received, h.Processed)
	}
	scale := func(n int) int {
		if c.Peak == 0 || n == 0 {
			return 0
		}
		return max(1, n*chartHeight/c.Peak)
	}
	for i, h := range hours {
		x := i * (2*chartBarW + chartGap)
		rh, ph := scale(h.Received), scale(h.Processed)
		c.Bars = append(c.Bars, bar{
			X: x, PX: x + chartBarW, W: chartBarW, RY: chartHeight - rh, RH: rh, PY: chartHeight - ph, PH: ph,
			Received: h.Received, Processed: h.Processed, Label: h.Start.UTC().Format("15:04"),
		})
		if h.Start.UTC().Hour()%6 == 0 {
			c.Ticks = append(c.Ticks, tick{X: x, Label: h.Start.UTC().Format("15h")})
		}
	}
	c.Width = max(len(hours)*(2*chartBarW+chartGap), 1)
	return c
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now().UTC()
	since := now.Add(-recentWindow)
	h, err := s.cfg.Actions.Health(r.Context(), s.cfg.Providers[0], since, now)
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	view := healthView{H: h, Chart: newChart(h.Hours)}
	for _, st := range event.ByAttention {
		q := url.Values{"status": {string(st)}}
		c := statusCount{Status: st, Count: h.ByStatus[st], Failing: st.IsFailing(), URL: s.root + "/events?" + q.Encode()}
		if c.Failing {
			view.Failing += c.Count
		}
		view.Counts = append(view.Counts, c)
	}
	runs, err := s.cfg.Reconciler.Runs(r.Context())
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	if len(runs) > 0 {
		view.LastRun = &runs[0]
	}
	audits, err := s.cfg.Reconciler.Audits(r.Context())
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	if len(audits) > 0 {
		view.LastAudit = &audits[0]
	}
	view.Off = s.cfg.ReconcilerOff
	cps, err := s.cfg.Reconciler.Checkpoints(r.Context())
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	for _, cp := range cps {
		if cp.DoneThrough == 0 {
			view.Never, view.CheckpointAt = true, time.Time{}
			break
		}
		if t := time.Unix(cp.DoneThrough, 0); view.CheckpointAt.IsZero() || t.Before(view.CheckpointAt) {
			view.CheckpointAt = t
		}
	}
	title := "Health"
	if view.Failing > 0 {
		title = fmt.Sprintf("Health: %d failing", view.Failing)
	}
	s.render(w, r, http.StatusOK, "health", title, view, "")
}

package console

import (
	"cmp"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// recentWindow is how far back the events page looks without a day: the
// same default as `inboxctl events --since`.
const recentWindow = 24 * time.Hour

// dlqPeek is how many dead-lettered messages the DLQ page shows.
const dlqPeek = 100

// failingFilter is the status filter's value for every status that needs
// a person (event.Failing), as `inboxctl events --failing` lists them.
const failingFilter = "failing"

// filter is the events page's query, as its form and links carry it.
type filter struct {
	Provider, Status, Type, Day string
	// Account keeps one connected account's events (Stripe Connect).
	Account string
	// Since and Next continue a listing: the first page's window start
	// (pinned, so that the window does not slide between pages) and the
	// store's cursor.
	Since, Next string
}

func (f filter) values() url.Values {
	v := url.Values{}
	for k, x := range map[string]string{"provider": f.Provider, "status": f.Status, "type": f.Type, "account": f.Account, "day": f.Day, "since": f.Since, "next": f.Next} {
		if x != "" {
			v.Set(k, x)
		}
	}
	return v
}

type eventsView struct {
	Filter    filter
	Providers []string
	Statuses  []event.Status
	Types     []string
	// Window says which stretch of time is listed.
	Window            string
	Records           []event.Record
	NextURL, FirstURL string
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := filter{
		Provider: q.Get("provider"),
		Status:   q.Get("status"),
		Type:     strings.TrimSpace(q.Get("type")),
		Account:  strings.TrimSpace(q.Get("account")),
		Day:      q.Get("day"),
		Since:    q.Get("since"),
		Next:     q.Get("next"),
	}
	if f.Provider == "" {
		f.Provider = s.cfg.Providers[0]
	}
	view := eventsView{Filter: f, Providers: s.cfg.Providers, Statuses: event.Statuses, Types: s.cfg.Types}
	bad := func(msg string) {
		s.log(r, "console: bad filter", slog.String("error", msg))
		s.render(w, r, http.StatusBadRequest, "events", "Events", view, msg)
	}
	if !slices.Contains(s.cfg.Providers, f.Provider) {
		bad("Unknown provider " + f.Provider + ": pick one of the list.")
		return
	}
	query, window, msg := s.eventsQuery(f)
	if msg != "" {
		bad(msg)
		return
	}
	view.Window = window
	page, err := s.cfg.Events.List(r.Context(), query)
	if errors.Is(err, store.ErrBadCursor) {
		bad("This page's link belongs to another listing: start again from the first page.")
		return
	}
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	view.Records = page.Records
	first := f
	first.Since, first.Next = "", ""
	if f.Next != "" {
		view.FirstURL = s.root + "/events?" + first.values().Encode()
	}
	if page.Next != "" {
		next := f
		if next.Day == "" {
			next.Since = query.Since.UTC().Format(time.RFC3339Nano)
		}
		next.Next = page.Next
		view.NextURL = s.root + "/events?" + next.values().Encode()
	}
	s.render(w, r, http.StatusOK, "events", "Events", view, "")
}

// eventsQuery is the listing the events page's filter asks for, and the
// words for its window: a day, or the 24 hours up to the page's link's
// since (by default now). msg, when not empty, says what is wrong with the
// filter.
func (s *Server) eventsQuery(f filter) (query store.Query, window, msg string) {
	query = store.Query{Provider: f.Provider, Type: f.Type, Account: f.Account, Cursor: f.Next, Limit: store.DefaultPageSize}
	if f.Status == failingFilter {
		query.Failing = true
	} else if f.Status != "" {
		st, err := event.ParseStatus(f.Status)
		if err != nil {
			return store.Query{}, "", "Unknown status " + f.Status + ": pick one of the list."
		}
		query.Status = st
	}
	now := s.cfg.Now().UTC()
	switch {
	case f.Day != "":
		d, err := time.Parse(time.DateOnly, f.Day)
		if err != nil {
			return store.Query{}, "", "Day " + f.Day + " is not a date like 2026-05-01."
		}
		if d.After(now) {
			return store.Query{}, "", "Day " + f.Day + " is in the future."
		}
		query.Since, query.Until = d, d.AddDate(0, 0, 1).Add(-time.Millisecond)
		if query.Until.After(now) {
			query.Until = now
		}
		window = "received on " + f.Day + " (UTC)"
	default:
		query.Since, query.Until = now.Add(-recentWindow), now
		if f.Since != "" {
			t, err := time.Parse(time.RFC3339Nano, f.Since)
			if err != nil {
				return store.Query{}, "", "This page's link is damaged (since): start again from the first page."
			}
			query.Since = t
		}
		window = "received in the 24 hours before " + utc(query.Since.Add(recentWindow))
	}
	return query, window, ""
}

type eventView struct {
	Rec         event.Record
	Transitions []transition
	// Payload is pretty-printed and redacted; PayloadNote says why there
	// is none.
	Payload     string
	PayloadNote string
	// Customer is the customer the event concerns: its object's
	// customer, or the object itself when it is a customer.
	Customer string
	// Mirror is the snapshot of the object the event touched, now.
	Mirror     *mirror.Snapshot
	MirrorNote string
}

func (s *Server) event(w http.ResponseWriter, r *http.Request) {
	provider, id := r.PathValue("provider"), r.PathValue("id")
	rec, ok := s.record(w, r, provider, id)
	if !ok {
		return
	}
	view := eventView{Rec: rec, Transitions: transitions(rec), Customer: customerOf(rec)}
	switch {
	case rec.PayloadOmitted:
		view.PayloadNote = "Not stored: too large even compressed. The processor reads it from the provider's API."
	case rec.PayloadErased:
		view.PayloadNote = "Erased (inboxctl erase)."
	case len(rec.Payload) == 0:
		view.PayloadNote = "No longer stored: a payload is kept for the stack's PayloadRetentionDays after it was received."
	default:
		view.Payload = pretty(rec.Payload)
	}
	if rec.MirrorKey != "" {
		snap, err := s.cfg.Mirror.Object(r.Context(), rec.MirrorKey)
		switch {
		case errors.Is(err, mirror.ErrNotFound):
			view.MirrorNote = rec.MirrorKey + " is no longer in the mirror."
		case err != nil:
			s.backendError(w, r, err)
			return
		default:
			view.Mirror = &snap
		}
	}
	s.render(w, r, http.StatusOK, "event", rec.ID, view, "")
}

// customerOf is the customer an event concerns, from its payload: the
// object's customer, or the object itself when it is a customer; "" when
// the payload is gone or names none.
func customerOf(r event.Record) string {
	if strings.HasPrefix(r.ObjectID, "cus_") {
		return r.ObjectID
	}
	var p struct {
		Data struct {
			Object struct {
				Customer any `json:"customer"`
			} `json:"object"`
		} `json:"data"`
	}
	if json.Unmarshal(r.Payload, &p) != nil {
		return ""
	}
	// An expanded customer is an object with its id.
	switch c := p.Data.Object.Customer.(type) {
	case string:
		return c
	case map[string]any:
		id, _ := c["id"].(string)
		return id
	}
	return ""
}

// record reads one event, answering 404 or 502 itself when it cannot.
func (s *Server) record(w http.ResponseWriter, r *http.Request, provider, id string) (event.Record, bool) {
	if !slices.Contains(s.cfg.Providers, provider) {
		s.fail(w, r, http.StatusNotFound, "Unknown provider "+provider+".")
		return event.Record{}, false
	}
	rec, err := s.cfg.Events.Get(r.Context(), provider, id)
	var pe *store.PayloadError
	if errors.As(err, &pe) {
		// The record is what the operator came for.
		rec, err = pe.Record, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "No event "+id+" of "+provider+" in the events table: check the id (the record may have expired).")
		return event.Record{}, false
	}
	if err != nil {
		s.backendError(w, r, err)
		return event.Record{}, false
	}
	return rec, true
}

// transition is one step of an event's life, as its record tells it.
type transition struct {
	At     time.Time
	What   string
	Detail string
}

// transitions are the steps a record keeps the time of, in order: it keeps
// the latest time of each kind of step, and counts its attempts.
func transitions(r event.Record) []transition {
	var out []transition
	add := func(at time.Time, what, detail string) {
		if !at.IsZero() {
			out = append(out, transition{At: at, What: what, Detail: detail})
		}
	}
	how := "by webhook"
	switch r.Source {
	case event.SourceReconciler:
		how = "by the reconciler: its webhook never arrived"
	case event.SourceEventBridge:
		how = "by Stripe's EventBridge destination"
	}
	add(r.ReceivedAt, "received", how)
	if r.Attempts > 0 {
		detail := "attempt " + itoa(r.Attempts)
		if r.LeaseOwner != "" {
			detail += " by " + r.LeaseOwner
		}
		add(r.ClaimedAt, "claimed", detail)
	}
	if !r.LastErrorAt.IsZero() {
		what := "failed"
		if r.LastErrorAt.Equal(r.StatusAt) && r.Status != event.StatusProcessing {
			what = string(r.Status)
		}
		add(r.LastErrorAt, what, r.LastError)
	}
	add(r.ProcessedAt, "processed", string(r.Outcome))
	covered := slices.ContainsFunc(out, func(t transition) bool { return t.At.Equal(r.StatusAt) })
	if !covered {
		add(r.StatusAt, string(r.Status), "")
	}
	slices.SortStableFunc(out, func(a, b transition) int { return a.At.Compare(b.At) })
	return out
}

type objectView struct {
	ID string
	// Account is the connected account the object is of (?account=,
	// Stripe Connect); empty for the platform's own.
	Account string
	Snap    *mirror.Snapshot
	Status  string
	// PeriodEnd is the data's current_period_end, Unix seconds.
	PeriodEnd int64
	Data      string
	Events    []event.Record
	// Customer: the object is a customer, whose entitlement is shown,
	// and Events are every event that concerns it, newest first
	// (MoreEvents: older ones are not shown); Reflected are the events
	// its entitlement reflects.
	Customer    bool
	Entitlement mirror.Entitlement
	// Repairs are the audit's repairs of the object, newest first, from
	// the kept audit runs.
	Repairs    []objectRepair
	MoreEvents bool
	Reflected  map[string]bool
}

// customerEventsShown bounds the events a customer's page lists, newest
// first: each is a read of its record.
const customerEventsShown = 200

func (s *Server) object(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	account := strings.TrimSpace(r.URL.Query().Get("account"))
	ctx := r.Context()
	view := objectView{ID: id, Account: account}
	snap, err := s.cfg.Mirror.Object(ctx, mirror.Key(account, id))
	switch {
	case errors.Is(err, mirror.ErrNotFound):
	case err != nil:
		s.backendError(w, r, err)
		return
	default:
		view.Snap = &snap
		var fields struct {
			Status           string `json:"status"`
			CurrentPeriodEnd int64  `json:"current_period_end"`
		}
		_ = json.Unmarshal(snap.Data, &fields)
		view.Status, view.PeriodEnd = fields.Status, fields.CurrentPeriodEnd
		if len(snap.Data) > 0 && string(snap.Data) != "null" {
			view.Data = pretty(snap.Data)
		}
	}
	view.Customer = strings.HasPrefix(id, "cus_") || (view.Snap != nil && view.Snap.Object == "customer")
	if view.Customer {
		if view.Entitlement, err = s.cfg.Mirror.Entitlement(ctx, mirror.Key(account, id)); err != nil {
			s.backendError(w, r, err)
			return
		}
		if view.Events, view.MoreEvents, err = ops.CustomerEvents(ctx, s.cfg.Events, account, id, view.Entitlement, customerEventsShown); err != nil {
			s.backendError(w, r, err)
			return
		}
		view.Reflected = map[string]bool{}
		for _, sub := range view.Entitlement.Subscriptions {
			view.Reflected[sub.EventID] = true
		}
	} else {
		evs, err := s.cfg.Events.ByObject(ctx, id)
		if err != nil {
			s.backendError(w, r, err)
			return
		}
		// An object id is unique only within its account.
		for _, e := range evs {
			if e.Account == account {
				view.Events = append(view.Events, e)
			}
		}
	}
	audits, err := s.cfg.Reconciler.Audits(ctx)
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	view.Repairs = repairsOf(audits, account, id)
	if view.Snap == nil && len(view.Events) == 0 && len(view.Entitlement.Subscriptions) == 0 {
		s.fail(w, r, http.StatusNotFound, "No object "+id+" in the mirror and no event about it: check the id (sub_..., cus_..., in_...).")
		return
	}
	s.render(w, r, http.StatusOK, "object", id, view, "")
}

// find opens what an id names: an event (evt_) or an object.
func (s *Server) find(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(r.URL.Query().Get("id"))
	switch {
	case id == "":
		s.redirect(w, r, "/events", nil)
	case strings.Contains(id, "@"):
		s.fail(w, r, http.StatusBadRequest, id+" is an email: the mirror keeps no customer's email (no personal data is mirrored), "+
			"so nothing here can be found by one. Find the customer id (cus_...) in Stripe's dashboard (Customers, search by email), then search for it.")
	case strings.ContainsAny(id, "/?#% "):
		s.fail(w, r, http.StatusBadRequest, "An id has no /, ?, #, % or space.")
	case strings.HasPrefix(id, "evt_"):
		s.redirect(w, r, "/events/"+s.cfg.Providers[0]+"/"+id, nil)
	default:
		s.redirect(w, r, "/objects/"+id, nil)
	}
}

type replayView struct {
	Rec event.Record
	// Plan is what the replay would do (a dry run of the same code).
	Plan ReplayResult
	// Force: the plan moves a failed_permanent event back to failed
	// first; CanForce offers that plan.
	Force, CanForce bool
	Result          *ReplayResult
}

func (s *Server) replayConfirm(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.record(w, r, r.PathValue("provider"), r.PathValue("id"))
	if !ok {
		return
	}
	force := r.URL.Query().Get("force") == "1"
	plan, err := s.cfg.Actions.Replay(r.Context(), rec.Provider, rec.ID, force, true)
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	view := replayView{Rec: rec, Plan: plan, Force: force, CanForce: !force && rec.Status == event.StatusFailedPermanent}
	s.render(w, r, http.StatusOK, "replay", "Replay "+rec.ID, view, "")
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	if !s.checkForm(w, r) {
		return
	}
	rec, ok := s.record(w, r, r.PathValue("provider"), r.PathValue("id"))
	if !ok {
		return
	}
	force := r.PostForm.Get("force") == "1"
	res, err := s.cfg.Actions.Replay(r.Context(), rec.Provider, rec.ID, force, false)
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	s.log(r, "console: replay", slog.String("event_id", rec.ID), slog.String("action", res.Action), slog.Bool("force", force))
	status := http.StatusOK
	if !res.Done {
		// Not replayed: the answer says why, as the CLI's exit code 1 does.
		status = http.StatusConflict
	}
	s.render(w, r, status, "replay", "Replayed "+rec.ID, replayView{Rec: rec, Result: &res}, "")
}

func (s *Server) dlq(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Actions.DeadLetters(r.Context(), dlqPeek)
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "dlq", "Dead-letter queue", d, "")
}

type redriveView struct {
	// Message is the message to move; nil for all of them.
	Message *DLQMessage
	DLQ     DLQ
	Result  *RedriveResult
}

func (s *Server) redriveConfirm(w http.ResponseWriter, r *http.Request) {
	d, err := s.cfg.Actions.DeadLetters(r.Context(), dlqPeek)
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	view := redriveView{DLQ: d}
	if id := r.URL.Query().Get("message"); id != "" {
		i := slices.IndexFunc(d.Messages, func(m DLQMessage) bool { return m.MessageID == id })
		if i < 0 {
			s.fail(w, r, http.StatusNotFound, "Message "+id+" is not in the dead-letter queue any more: it was moved or deleted meanwhile.")
			return
		}
		view.Message = &d.Messages[i]
	}
	s.render(w, r, http.StatusOK, "redrive", "Redrive", view, "")
}

func (s *Server) redrive(w http.ResponseWriter, r *http.Request) {
	if !s.checkForm(w, r) {
		return
	}
	id := r.PostForm.Get("message")
	res, err := s.cfg.Actions.Redrive(r.Context(), id)
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	s.log(r, "console: redrive", slog.String("message_id", cmp.Or(id, "all")), slog.Int("moved", res.Moved), slog.String("method", res.Method))
	status := http.StatusOK
	if id != "" && res.Moved == 0 {
		status = http.StatusConflict
	}
	view := redriveView{Result: &res}
	if id != "" {
		view.Message = &DLQMessage{MessageID: id}
	}
	s.render(w, r, status, "redrive", "Redriven", view, "")
}

type reconcilerView struct {
	Checkpoints []checkpointRow
	Runs        []store.Run
	// Off says why the reconciler does not run here (Config.ReconcilerOff).
	Off string
}

func (s *Server) reconciler(w http.ResponseWriter, r *http.Request) {
	cps, err := s.cfg.Reconciler.Checkpoints(r.Context())
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	runs, err := s.cfg.Reconciler.Runs(r.Context())
	if err != nil {
		s.backendError(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "reconciler", "Reconciler", reconcilerView{Checkpoints: checkpointRows(cps), Runs: runs, Off: s.cfg.ReconcilerOff}, "")
}

// backendError answers 502 for a failed AWS call, with what to do next.
func (s *Server) backendError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		// The browser went away; nobody reads the answer.
		return
	}
	s.log(r, "console: AWS call failed", slog.String("error", err.Error()))
	s.fail(w, r, http.StatusBadGateway, s.cfg.Explain(err).Error())
}

func (s *Server) log(r *http.Request, msg string, attrs ...slog.Attr) {
	attrs = append([]slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path)}, attrs...)
	s.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, msg, attrs...)
}

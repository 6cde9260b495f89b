package console

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// now is the console's clock in these tests; the events happen before it.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const token = "TESTTOKENTESTTOKENTESTTOKE"

// fakeEvents is an events table in memory; list answers List.
type fakeEvents struct {
	records map[string]event.Record
	list    func(q store.Query) (store.Page, error)
	queries []store.Query
	err     error
}

func (f *fakeEvents) List(_ context.Context, q store.Query) (store.Page, error) {
	f.queries = append(f.queries, q)
	if f.err != nil {
		return store.Page{}, f.err
	}
	return f.list(q)
}

func (f *fakeEvents) Get(_ context.Context, provider, id string) (event.Record, error) {
	if f.err != nil {
		return event.Record{}, f.err
	}
	r, ok := f.records[provider+"#"+id]
	if !ok {
		return event.Record{}, store.ErrNotFound
	}
	return r, nil
}

func (f *fakeEvents) ByObject(_ context.Context, id string) ([]event.Record, error) {
	var out []event.Record
	for _, r := range f.records {
		if r.ObjectID == id {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b event.Record) int { return int(a.Created - b.Created) })
	return out, nil
}

// ByCustomer: the records whose customer is customer, of account,
// newest first, as the store orders them.
func (f *fakeEvents) ByCustomer(_ context.Context, account, customer string, limit int) (store.CustomerEvents, error) {
	var out store.CustomerEvents
	for _, r := range f.records {
		if r.Customer == customer && r.Account == account {
			out.Records = append(out.Records, r)
		}
	}
	slices.SortFunc(out.Records, func(a, b event.Record) int { return int(b.Created - a.Created) })
	if limit > 0 && len(out.Records) > limit {
		out.Records, out.More = out.Records[:limit], true
	}
	return out, nil
}

type fakeMirror struct {
	objects      map[string]mirror.Snapshot
	entitlements map[string]mirror.Entitlement
}

func (f *fakeMirror) Object(_ context.Context, id string) (mirror.Snapshot, error) {
	s, ok := f.objects[id]
	if !ok {
		return mirror.Snapshot{}, mirror.ErrNotFound
	}
	return s, nil
}

func (f *fakeMirror) Entitlement(_ context.Context, customer string) (mirror.Entitlement, error) {
	if e, ok := f.entitlements[customer]; ok {
		return e, nil
	}
	return mirror.Entitlement{Customer: customer, Reason: "no_subscription"}, nil
}

type fakeReconciler struct {
	checkpoints []store.Checkpoint
	runs        []store.Run
	audits      []store.AuditRun
}

func (f *fakeReconciler) Checkpoints(context.Context) ([]store.Checkpoint, error) {
	return f.checkpoints, nil
}
func (f *fakeReconciler) Runs(context.Context) ([]store.Run, error) { return f.runs, nil }
func (f *fakeReconciler) Audits(context.Context) ([]store.AuditRun, error) {
	return f.audits, nil
}

// fakeActions records the actions asked for and answers with its fields.
type fakeActions struct {
	mu       sync.Mutex
	replays  []string // "provider/id force dryRun"
	redrives []string
	dlq      DLQ
	health   Health
	replay   func(provider, id string, force, dryRun bool) ReplayResult
	redrive  func(messageID string) RedriveResult
}

func (f *fakeActions) Replay(_ context.Context, provider, id string, force, dryRun bool) (ReplayResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replays = append(f.replays, fmt.Sprintf("%s/%s force=%t dry_run=%t", provider, id, force, dryRun))
	return f.replay(provider, id, force, dryRun), nil
}

func (f *fakeActions) DeadLetters(context.Context, int) (DLQ, error) { return f.dlq, nil }

func (f *fakeActions) DLQDepth(context.Context) (int, error) { return f.dlq.Approximate, nil }

// Health answers with the health field, its window set to the call's.
func (f *fakeActions) Health(_ context.Context, _ string, since, until time.Time) (Health, error) {
	h := f.health
	h.Since, h.Until = since, until
	return h, nil
}

func (f *fakeActions) Redrive(_ context.Context, messageID string) (RedriveResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.redrives = append(f.redrives, messageID)
	return f.redrive(messageID), nil
}

// healthFixture is the seeded events' health: one of each failing
// status, one processed, over the 24 hours before now.
func healthFixture() Health {
	h := Health{DLQDepth: 2}
	h.Received, h.Sampled, h.P50, h.P95 = 4, 4, 500*time.Millisecond, 1200*time.Millisecond
	h.ByStatus = map[event.Status]int{}
	for _, st := range event.Statuses {
		h.ByStatus[st] = 0
	}
	h.ByStatus[event.StatusFailed], h.ByStatus[event.StatusDeadLettered], h.ByStatus[event.StatusFailedPermanent], h.ByStatus[event.StatusProcessed] = 1, 1, 1, 1
	start := now.Add(-24 * time.Hour).Truncate(time.Hour)
	for i := range 25 {
		h.Hours = append(h.Hours, store.Hour{Start: start.Add(time.Duration(i) * time.Hour)})
	}
	h.Hours[19].Received = 1
	h.Hours[21].Received = 1
	h.Hours[23].Received, h.Hours[23].Processed = 1, 1
	h.Hours[24].Received = 1
	return h
}

// payload is a payment intent's event: its client_secret, and a nested
// field named like a secret, must never be shown.
const payload = `{"id":"evt_golden_failed","object":"event","api_version":"2025-02-24.acacia","created":1777636800,` +
	`"data":{"object":{"id":"pi_golden","object":"payment_intent","amount":2000,"currency":"usd","customer":"cus_golden",` +
	`"client_secret":"pi_golden_secret_abc123","metadata":{"webhook_secret":{"value":"whsec_nope","rotated":true},"plan":"pro"},` +
	`"last_payment_error":{"code":"card_declined","message":"Your card was declined."},"status":"requires_payment_method"}},` +
	`"livemode":false,"pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":"payment_intent.payment_failed"}`

// world is a small stack seen through fakes.
type world struct {
	events  *fakeEvents
	mirror  *fakeMirror
	rec     *fakeReconciler
	actions *fakeActions
	logs    bytes.Buffer
	srv     *Server
}

func at(d time.Duration) time.Time { return now.Add(-d) }

func newWorld(t *testing.T) *world {
	t.Helper()
	failed := event.Record{
		Provider: "stripe", ID: "evt_golden_failed", Type: "payment_intent.payment_failed", Created: 1777636800,
		APIVersion: "2025-02-24.acacia", ObjectID: "pi_golden", ObjectType: "payment_intent", Customer: "cus_golden",
		Status: event.StatusFailed, StatusAt: at(3 * time.Minute), Source: event.SourceWebhook,
		Payload: []byte(payload), PayloadHash: "9f2c0d5e",
		ReceivedAt: at(10 * time.Minute), ClaimedAt: at(3*time.Minute + 2*time.Second), Attempts: 2,
		LeaseOwner: "processor-1a2b", LastError: "effect unlock-account: billing service: 504 gateway timeout", LastErrorAt: at(3 * time.Minute),
	}
	processed := event.Record{
		Provider: "stripe", ID: "evt_golden_sub", Type: "customer.subscription.updated", Created: 1777636000,
		ObjectID: "sub_golden", ObjectType: "subscription", Customer: "cus_golden", Status: event.StatusProcessed, StatusAt: at(59 * time.Minute),
		Source: event.SourceReconciler, Outcome: outcome.Applied, PayloadHash: "77aa", PayloadOmitted: false,
		ReceivedAt: at(time.Hour), ClaimedAt: at(time.Hour - 500*time.Millisecond), ProcessedAt: at(59 * time.Minute), Attempts: 1,
		MirrorKey: "sub_golden",
	}
	dead := event.Record{
		Provider: "stripe", ID: "evt_golden_dead", Type: "invoice.created", Created: 1777630000, ObjectID: "in_golden", ObjectType: "invoice",
		Status: event.StatusDeadLettered, StatusAt: at(2 * time.Hour), Source: event.SourceWebhook, Attempts: 5,
		ReceivedAt: at(3 * time.Hour), ClaimedAt: at(2*time.Hour + time.Second), LastError: "ledger: connection reset by peer", LastErrorAt: at(2 * time.Hour),
		PayloadHash: "55bb",
	}
	perm := event.Record{
		Provider: "stripe", ID: "evt_golden_perm", Type: "invoice.finalized", Created: 1777620000, ObjectID: "in_perm", ObjectType: "invoice",
		Status: event.StatusFailedPermanent, StatusAt: at(5 * time.Hour), Source: event.SourceWebhook, Attempts: 1,
		ReceivedAt: at(5*time.Hour + time.Second), ClaimedAt: at(5 * time.Hour), LastError: "invoice has no line items", LastErrorAt: at(5 * time.Hour),
		PayloadHash: "66cc", PayloadErased: false,
	}
	all := []event.Record{failed, processed, dead, perm}
	w := &world{
		events: &fakeEvents{records: map[string]event.Record{}},
		mirror: &fakeMirror{
			objects: map[string]mirror.Snapshot{
				"sub_golden": {ID: "sub_golden", Object: "subscription", Customer: "cus_golden", LastEventID: "evt_golden_sub", LastEventCreated: 1777636000,
					LastEventType: "customer.subscription.updated", Data: []byte(`{"id":"sub_golden","status":"active","current_period_end":1780228000,"customer":"cus_golden"}`)},
				"cus_golden": {
					ID:               "cus_golden",
					Object:           "customer",
					LastEventID:      "evt_golden_cus",
					LastEventCreated: 1777600000,
					LastEventType:    "customer.created",
					Data:             []byte(`{"id":"cus_golden","email":"jenny@example.com"}`),
				},
			},
			entitlements: map[string]mirror.Entitlement{
				"cus_golden": {Customer: "cus_golden", Active: true, Price: "price_pro", Product: "prod_pro", Until: 1780228000,
					Subscriptions: []mirror.SubscriptionEntry{{ID: "sub_golden", Status: "active", Price: "price_pro", Product: "prod_pro",
						CurrentPeriodEnd: 1780228000, EventCreated: 1777636000, EventID: "evt_golden_sub"}}},
			},
		},
		rec: &fakeReconciler{
			audits: []store.AuditRun{
				{
					ID: "audit_0a0a", StartedAt: at(3 * time.Hour), FinishedAt: at(3*time.Hour - 40*time.Second),
					Listed: 240, Matched: 237, Repaired: 3, MissingHere: 1, UnknownThere: 1, Pages: 3,
					Repairs: []store.AuditRepair{
						{ID: "sub_golden", Customer: "cus_golden", Changes: []string{"status: past_due → active", "current_period_end: 1777636000 → 1780228000"}, At: at(3 * time.Hour)},
						{ID: "sub_backfilled", Customer: "cus_old", Missing: true, Changes: []string{"missing here"}, At: at(3 * time.Hour)},
						{ID: "sub_connected", Account: "acct_1Golden", Customer: "cus_conn", Changes: []string{"cancel_at_period_end: false → true"}, At: at(3 * time.Hour)},
					},
					RepairsOmitted: 0,
				},
				{ID: "audit_0b0b", StartedAt: at(27 * time.Hour), FinishedAt: at(27*time.Hour - 10*time.Second), DryRun: true, Listed: 100, Repaired: 1, Pages: 1,
					Cursor: "sub_0100", Repairs: []store.AuditRepair{{ID: "sub_golden", Changes: []string{"status: active → past_due"}, At: at(27 * time.Hour)}}},
			},
			checkpoints: []store.Checkpoint{
				{Name: "stripe#0123abcd", Types: []string{"customer.subscription.created", "invoice.paid"}, DoneThrough: now.Add(-15 * time.Minute).Unix(),
					UpdatedAt: at(9 * time.Minute), RunID: "run_aaaa", Seq: 12},
				{Name: "stripe#4567ef01", Types: []string{"payment_intent.succeeded"}, DoneThrough: now.Add(-3 * time.Hour).Unix(),
					WindowFrom: now.Add(-3 * time.Hour).
						Unix(),
					WindowTo: now.Add(-5 * time.Minute).Unix(), Cursor: "evt_cursor", CursorCreated: now.Add(-time.Hour).Unix(),
					UpdatedAt: at(9 * time.Minute), RunID: "run_aaaa", Seq: 40},
				{Name: "stripe#acct_1Golden#0123abcd", Types: []string{"customer.subscription.created", "invoice.paid"}, DoneThrough: now.Add(-20 * time.Minute).Unix(),
					UpdatedAt: at(9 * time.Minute), RunID: "run_aaaa", Seq: 7},
			},
			runs: []store.Run{
				{
					ID:        "run_aaaa",
					StartedAt: at(10 * time.Minute),
					Duration:  1234 * time.Millisecond,
					Outcome:   "partial",
					Stopped:   "max_pages",
					Listed:    5000,
					Missing:   2,
					Raced:     1,
					Stuck:     3,
					Pages:     50,
				},
				{
					ID:        "run_bbbb",
					StartedAt: at(20 * time.Minute),
					Duration:  800 * time.Millisecond,
					Outcome:   "failed",
					Error:     "reconcile: stripe: 401 invalid API key",
					Pages:     0,
				},
				{
					ID:        "run_cccc",
					StartedAt: at(30 * time.Minute),
					Duration:  300 * time.Millisecond,
					Outcome:   "complete",
					Since:     24 * time.Hour,
					Listed:    12,
					Pages:     1,
				},
			},
		},
		actions: &fakeActions{
			dlq: DLQ{QueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/webhook-inbox-prod-DeadLetterQueue", Approximate: 2, Messages: []DLQMessage{
				{
					MessageID:   "msg-1",
					SentAt:      at(2 * time.Hour),
					Provider:    "stripe",
					EventID:     "evt_golden_dead",
					Type:        "invoice.created",
					EventStatus: "dead_lettered",
					Attempts:    5,
					LastError:   "ledger: connection reset by peer",
				},
				{MessageID: "msg-2", SentAt: at(26 * time.Hour), Body: "not json <b>"},
			}},
			health: healthFixture(),
			replay: func(provider, id string, force, dryRun bool) ReplayResult {
				if id == "evt_golden_perm" && !force {
					return ReplayResult{
						ID:     id,
						Status: "failed_permanent",
						Action: "skipped",
						Detail: "failed permanently (invoice has no line items); the processor will not claim it: fix the cause, then replay it with --force",
					}
				}
				if dryRun {
					return ReplayResult{
						ID:     id,
						Status: "failed",
						Action: "would_enqueue",
						Detail: "the processor claims it again; last error: effect unlock-account: billing service: 504 gateway timeout",
						Done:   true,
					}
				}
				return ReplayResult{
					ID:     id,
					Status: "failed",
					Action: "enqueued",
					Detail: "the processor claims it again; last error: effect unlock-account: billing service: 504 gateway timeout",
					Done:   true,
				}
			},
			redrive: func(messageID string) RedriveResult {
				moved := 2
				if messageID != "" {
					moved = 1
				}
				if messageID == "msg-gone" {
					moved = 0
				}
				return RedriveResult{Method: "receive_send_delete", Moved: moved, Remaining: 2 - moved, From: "dlq", To: "queue"}
			},
		},
	}
	for _, r := range all {
		w.events.records[r.Provider+"#"+r.ID] = r
	}
	// cus_alice: no snapshot of her own, a subscription in the mirror,
	// and her invoice.paid dead-lettered: never applied, but hers.
	for _, r := range []event.Record{
		{Provider: "stripe", ID: "evt_alice_sub", Type: "customer.subscription.created", Created: 1777500000, ObjectID: "sub_alice",
			ObjectType: "subscription", Customer: "cus_alice", Status: event.StatusProcessed, Outcome: outcome.Applied, StatusAt: at(30 * time.Hour)},
		{Provider: "stripe", ID: "evt_alice_paid", Type: "invoice.paid", Created: 1777500100, ObjectID: "in_alice",
			ObjectType: "invoice", Customer: "cus_alice", Status: event.StatusDeadLettered, StatusAt: at(29 * time.Hour), Attempts: 5},
	} {
		w.events.records[r.Provider+"#"+r.ID] = r
	}
	w.mirror.entitlements["cus_alice"] = mirror.Entitlement{Customer: "cus_alice", Active: true, Price: "price_pro", Product: "prod_pro", Until: 1780228000,
		Subscriptions: []mirror.SubscriptionEntry{{ID: "sub_alice", Status: "active", Price: "price_pro", Product: "prod_pro",
			CurrentPeriodEnd: 1780228000, EventCreated: 1777500000, EventID: "evt_alice_sub"}}}
	w.events.list = func(q store.Query) (store.Page, error) {
		var out []event.Record
		for _, r := range all {
			if (q.Status == "" || r.Status == q.Status) && (!q.Failing || r.Status.IsFailing()) && (q.Type == "" || r.Type == q.Type) &&
				!r.ReceivedAt.Before(q.Since) &&
				!r.ReceivedAt.After(q.Until) {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(a, b event.Record) int { return b.ReceivedAt.Compare(a.ReceivedAt) })
		page := store.Page{Records: out}
		if q.Cursor == "" && q.Status == "" && !q.Failing && len(out) > 2 {
			// A second page, to show the links.
			page.Records, page.Next = out[:2], "CURSOR2"
		} else if q.Cursor == "CURSOR2" {
			page.Records = out[2:]
		} else if q.Cursor != "" {
			return store.Page{}, store.ErrBadCursor
		}
		return page, nil
	}
	srv, err := New(Config{
		Events: w.events, Mirror: w.mirror, Reconciler: w.rec, Actions: w.actions, Token: token,
		Stack: "stage prod", Types: []string{"customer.subscription.updated", "invoice.created", "invoice.paid"},
		Now: func() time.Time { return now }, Logger: slog.New(slog.NewJSONHandler(&w.logs, nil)),
		Explain: func(err error) error { return fmt.Errorf("%w (check --stage, --region and --profile)", err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.csrf = "FORMTOKEN"
	w.srv = srv
	return w
}

// do serves one request for the run's page target as a browser that
// opened the console's URL sends it: with its cookie, from 127.0.0.1.
func (w *world) do(method, target string, form url.Values) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, "http://127.0.0.1:8080"+RunPath(token)+target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", "http://127.0.0.1:8080")
		r.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	r.AddCookie(&http.Cookie{Name: "inboxctl_console_8080", Value: token})
	rec := httptest.NewRecorder()
	w.srv.ServeHTTP(rec, r)
	return rec
}

func golden(t *testing.T, name string, rec *httptest.ResponseRecorder, code int) {
	t.Helper()
	if rec.Code != code {
		t.Errorf("%s: got status %d, want %d\n%s", name, rec.Code, code, rec.Body.String())
	}
	path := filepath.Join("testdata", name+".html")
	got := rec.Body.Bytes()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./internal/console -update` to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: the page differs from %s (run with -update to accept)\n--- got\n%s", name, path, got)
	}
}

// TestPages renders every page of the console against a small stack and
// compares it with its golden HTML.
func TestPages(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		name, path string
		code       int
	}{
		{"health", "/", 200},
		{"events", "/events", 200},
		{"events_page2", "/events?next=CURSOR2&since=2026-04-30T12%3A00%3A00Z", 200},
		{"events_failed", "/events?status=failed&type=payment_intent.payment_failed", 200},
		{"events_day", "/events?day=2026-04-30", 200},
		{"events_none", "/events?status=processing", 200},
		{"events_failing", "/events?status=failing", 200},
		{"events_bad_status", "/events?status=lost", 400},
		{"events_bad_day", "/events?day=30%2F04%2F2026", 400},
		{"events_bad_cursor", "/events?status=failed&next=OTHER", 400},
		{"event_failed", "/events/stripe/evt_golden_failed", 200},
		{"event_processed", "/events/stripe/evt_golden_sub", 200},
		{"event_missing", "/events/stripe/evt_nope", 404},
		{"event_unknown_provider", "/events/paypal/evt_golden_failed", 404},
		{"replay_confirm", "/events/stripe/evt_golden_failed/replay", 200},
		{"replay_confirm_permanent", "/events/stripe/evt_golden_perm/replay", 200},
		{"replay_confirm_force", "/events/stripe/evt_golden_perm/replay?force=1", 200},
		{"object_subscription", "/objects/sub_golden", 200},
		{"object_customer", "/objects/cus_golden", 200},
		{"object_unmirrored", "/objects/in_golden", 200},
		{"object_customer_dead_lettered", "/objects/cus_alice", 200},
		{"find_email", "/find?id=alice%40example.com", 400},
		{"object_missing", "/objects/sub_nope", 404},
		{"dlq", "/dlq", 200},
		{"redrive_confirm_one", "/dlq/redrive?message=msg-1", 200},
		{"redrive_confirm_all", "/dlq/redrive", 200},
		{"redrive_confirm_gone", "/dlq/redrive?message=msg-9", 404},
		{"reconciler", "/reconciler", 200},
		{"audit", "/audit", 200},
		{"not_found", "/nothing/here", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, w.do("GET", tc.path, nil), tc.code)
		})
	}
	if len(w.actions.redrives) != 0 || slices.ContainsFunc(w.actions.replays, func(s string) bool { return strings.HasSuffix(s, "dry_run=false") }) {
		t.Errorf("pages took actions: replays %v, redrives %v; want dry runs only", w.actions.replays, w.actions.redrives)
	}
}

// TestActions: a replay and a redrive, one and all, each from its form,
// reach Actions once with what the form says and show their result.
func TestActions(t *testing.T) {
	w := newWorld(t)
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {"FORMTOKEN"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	golden(t, "replay_done", w.do("POST", "/events/stripe/evt_golden_failed/replay", form()), 200)
	golden(t, "replay_skipped", w.do("POST", "/events/stripe/evt_golden_perm/replay", form()), 409)
	w.do("POST", "/events/stripe/evt_golden_perm/replay", form("force", "1"))
	golden(t, "redrive_one_done", w.do("POST", "/dlq/redrive", form("message", "msg-1")), 200)
	golden(t, "redrive_one_gone", w.do("POST", "/dlq/redrive", form("message", "msg-gone")), 409)
	golden(t, "redrive_all_done", w.do("POST", "/dlq/redrive", form()), 200)
	wantReplays := []string{
		"stripe/evt_golden_failed force=false dry_run=false",
		"stripe/evt_golden_perm force=false dry_run=false",
		"stripe/evt_golden_perm force=true dry_run=false",
	}
	if !slices.Equal(w.actions.replays, wantReplays) {
		t.Errorf("replays: got %q, want %q", w.actions.replays, wantReplays)
	}
	if want := []string{"msg-1", "msg-gone", ""}; !slices.Equal(w.actions.redrives, want) {
		t.Errorf("redrives: got %q, want %q", w.actions.redrives, want)
	}
	for _, l := range []string{`"msg":"console: replay","method":"POST","path":"/events/stripe/evt_golden_failed/replay","event_id":"evt_golden_failed","action":"enqueued"`,
		`"msg":"console: redrive","method":"POST","path":"/dlq/redrive","message_id":"all","moved":2`} {
		if !strings.Contains(w.logs.String(), l) {
			t.Errorf("log: no line with %s in\n%s", l, w.logs.String())
		}
	}
}

// TestTokenIsRequired: every request without the run's token, whatever it
// asks for, gets 401; the token in the URL sets the cookie and leaves the
// URL; a wrong token gets 401 and is not logged.
func TestTokenIsRequired(t *testing.T) {
	w := newWorld(t)
	for _, target := range []string{"/", "/events", "/console.css", "/events/stripe/evt_golden_failed", "/dlq", "/reconciler", "/nothing", "/events?token=WRONGTOKENWRONGTOKENWRONGT"} {
		for _, cookie := range []string{"", "WRONGTOKENWRONGTOKENWRONGT", token[:10]} {
			r := httptest.NewRequest("GET", "http://127.0.0.1:8080"+RunPath(token)+target, nil)
			if cookie != "" {
				r.AddCookie(&http.Cookie{Name: "inboxctl_console_8080", Value: cookie})
			}
			rec := httptest.NewRecorder()
			w.srv.ServeHTTP(rec, r)
			if rec.Code != http.StatusUnauthorized || strings.Contains(rec.Body.String(), "evt_golden") {
				t.Errorf("GET %s with cookie %q: got %d %q, want 401 and nothing else", target, cookie, rec.Code, rec.Body.String())
			}
		}
	}
	// A token from another console of the same host (another port) does
	// not open this one.
	r := httptest.NewRequest("GET", "http://127.0.0.1:8080"+RunPath(token)+"/events", nil)
	r.AddCookie(&http.Cookie{Name: "inboxctl_console_9090", Value: token})
	rec := httptest.NewRecorder()
	w.srv.ServeHTTP(rec, r)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("another port's cookie: got %d, want 401", rec.Code)
	}
	if strings.Contains(w.logs.String(), "WRONGTOKEN") || !strings.Contains(w.logs.String(), `"reason":"bad_token"`) {
		t.Errorf("refusals are logged without the token they carried:\n%s", w.logs.String())
	}

	r = httptest.NewRequest("GET", "http://127.0.0.1:8080"+RunPath(token)+"/events?status=failed&token="+token, nil)
	rec = httptest.NewRecorder()
	w.srv.ServeHTTP(rec, r)
	c := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != RunPath(token)+"/events?status=failed" || len(c) != 1 ||
		c[0].Name != "inboxctl_console_8080" || c[0].Value != token || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != RunPath(token) {
		t.Errorf(
			"the token in the URL: got %d to %q with cookies %+v; want 303 to the URL without it, and a strict HttpOnly cookie on the run's path",
			rec.Code,
			rec.Header().Get("Location"),
			c,
		)
	}
	if got := w.do("GET", "/events", nil); got.Code != 200 || got.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("with the cookie: got %d, CSP %q", got.Code, got.Header().Get("Content-Security-Policy"))
	}
	if got := w.do("GET", "/console.css", nil); got.Code != 200 || !strings.HasPrefix(got.Header().Get("Content-Type"), "text/css") {
		t.Errorf("the stylesheet: got %d %s", got.Code, got.Header().Get("Content-Type"))
	}
}

// TestActionsNeedTheirForm: a POST without the run's form token, or from
// another site, takes no action and gets 403; so does a request that names
// another host (a DNS-rebinding page that learned nothing of the token
// still must not reach the handler).
func TestActionsNeedTheirForm(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		name    string
		form    url.Values
		headers map[string]string
		code    int
	}{
		{"no form token", url.Values{}, nil, 403},
		{"an old form token", url.Values{"csrf": {"OLDTOKEN"}}, nil, 403},
		{"from another site", url.Values{"csrf": {"FORMTOKEN"}}, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"from another origin, no fetch metadata", url.Values{"csrf": {"FORMTOKEN"}}, map[string]string{"Sec-Fetch-Site": "", "Origin": "http://127.0.0.1:3000"}, 403},
		{"another host", url.Values{"csrf": {"FORMTOKEN"}}, map[string]string{"Host": "rebound.example:8080"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range []string{"/events/stripe/evt_golden_failed/replay", "/dlq/redrive"} {
				r := httptest.NewRequest("POST", "http://127.0.0.1:8080"+RunPath(token)+target, strings.NewReader(tc.form.Encode()))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				r.Header.Set("Sec-Fetch-Site", "same-origin")
				r.AddCookie(&http.Cookie{Name: "inboxctl_console_8080", Value: token})
				for k, v := range tc.headers {
					if k == "Host" {
						r.Host = v
						continue
					}
					r.Header.Set(k, v)
				}
				rec := httptest.NewRecorder()
				w.srv.ServeHTTP(rec, r)
				if rec.Code != tc.code {
					t.Errorf("POST %s: got %d, want %d\n%s", target, rec.Code, tc.code, rec.Body.String())
				}
			}
		})
	}
	if len(w.actions.replays)+len(w.actions.redrives) != 0 {
		t.Errorf("actions taken: replays %v, redrives %v; want none", w.actions.replays, w.actions.redrives)
	}
	golden(t, "forbidden_form", func() *httptest.ResponseRecorder {
		return w.do("POST", "/dlq/redrive", url.Values{"message": {"msg-1"}})
	}(), 403)
}

// TestBackendErrorsAre502WithAHint: a failed AWS call is the server's
// fault, not the operator's: 502, the error and what to check.
func TestBackendErrorsAre502WithAHint(t *testing.T) {
	w := newWorld(t)
	w.events.err = errors.New("store: list events: operation error DynamoDB: Query, ResourceNotFoundException")
	for _, target := range []string{"/events", "/events/stripe/evt_golden_failed"} {
		rec := w.do("GET", target, nil)
		if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "ResourceNotFoundException (check --stage, --region and --profile)") {
			t.Errorf("GET %s: got %d\n%s", target, rec.Code, rec.Body.String())
		}
	}
	if !strings.Contains(w.logs.String(), `"msg":"console: AWS call failed"`) {
		t.Errorf("the failure is not logged:\n%s", w.logs.String())
	}
}

// TestListingIsTheStoresOwn: the events page asks the store's one listing
// for the filter's provider, status, type and window, a page at a time,
// and hands the store's cursor on with the window pinned.
func TestListingIsTheStoresOwn(t *testing.T) {
	w := newWorld(t)
	w.do("GET", "/events?provider=stripe&status=dead_lettered&type=invoice.created&day=2026-04-30", nil)
	w.do("GET", "/events", nil)
	w.do("GET", "/events?next=CURSOR2&since=2026-04-30T12%3A00%3A00Z", nil)
	day := time.Date(2026, 4, 30, 0, 0, 0, 0, time.UTC)
	want := []store.Query{
		{
			Provider: "stripe",
			Status:   event.StatusDeadLettered,
			Type:     "invoice.created",
			Since:    day,
			Until:    day.Add(24*time.Hour - time.Millisecond),
			Limit:    store.DefaultPageSize,
		},
		{Provider: "stripe", Since: now.Add(-24 * time.Hour), Until: now, Limit: store.DefaultPageSize},
		{Provider: "stripe", Since: now.Add(-24 * time.Hour), Until: now, Limit: store.DefaultPageSize, Cursor: "CURSOR2"},
	}
	if len(w.events.queries) != len(want) {
		t.Fatalf("queries: got %+v", w.events.queries)
	}
	for i := range want {
		if got := w.events.queries[i]; !got.Since.Equal(want[i].Since) || !got.Until.Equal(want[i].Until) || got.Provider != want[i].Provider ||
			got.Status != want[i].Status || got.Type != want[i].Type || got.Cursor != want[i].Cursor || got.Limit != want[i].Limit {
			t.Errorf("query %d: got %+v, want %+v", i, got, want[i])
		}
	}
	body := w.do("GET", "/events", nil).Body.String()
	if !strings.Contains(body, `href="`+RunPath(token)+`/events?next=CURSOR2&amp;provider=stripe&amp;since=2026-04-30T12%3A00%3A00Z"`) {
		t.Errorf("the next page's link does not carry the cursor and the pinned window:\n%s", body)
	}
}

// TestPrettyRedactsSecrets: a payload's members keep their order, and the
// values of fields named like secrets are never shown, whatever their
// shape; a body that is not JSON is redacted line by line.
func TestPrettyRedactsSecrets(t *testing.T) {
	got := pretty([]byte(payload))
	for _, leak := range []string{"pi_golden_secret_abc123", "whsec_nope", "rotated"} {
		if strings.Contains(got, leak) {
			t.Errorf("pretty shows %q:\n%s", leak, got)
		}
	}
	for _, keep := range []string{`"client_secret": "[redacted]",`, `"webhook_secret": "[redacted]",`, `"plan": "pro"`, `"amount": 2000,`} {
		if !strings.Contains(got, keep) {
			t.Errorf("pretty lacks %q:\n%s", keep, got)
		}
	}
	if strings.Index(got, `"amount"`) > strings.Index(got, `"currency"`) {
		t.Errorf("members reordered:\n%s", got)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"Stripe-Signature":"t=1,v1=abc"}`, "{\n  \"Stripe-Signature\": \"[redacted]\"\n}"},
		{`{"api_key":12345,"apiKey":null,"authorization":["Bearer x"]}`, "{\n  \"api_key\": \"[redacted]\",\n  \"apiKey\": null,\n  \"authorization\": \"[redacted]\"\n}"},
		{`{"password":{}}`, "{\n  \"password\": \"[redacted]\"\n}"},
		{"not json\n  \"secret\": \"x\",", "not json\n  \"secret\": \"[redacted]\","},
	} {
		if got := pretty([]byte(tc.in)); got != tc.want {
			t.Errorf("pretty(%s): got\n%s\nwant\n%s", tc.in, got, tc.want)
		}
	}
}

// TestListenIsLoopbackOnly: the console listens on loopback addresses
// only, and its URL carries the token.
func TestListenIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "[::]:0", "example.com:8080"} {
		if ln, _, err := Listen(addr, token); !errors.Is(err, ErrNotLoopback) {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("Listen(%q): got %v, want ErrNotLoopback", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		ln, u, err := Listen(addr, token)
		if addr == "[::1]:0" && err != nil && strings.Contains(err.Error(), "cannot assign") {
			continue // a machine without IPv6 loopback
		}
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		if !strings.HasPrefix(u, "http://"+ln.Addr().String()+RunPath(token)+"/?token="+token) || !loopbackHost(ln.Addr().String()) {
			t.Errorf("Listen(%q): URL %s on %s", addr, u, ln.Addr())
		}
		ln.Close()
	}
}

// TestAgoAndUTC: times read in UTC to the second, with their age.
func TestAgoAndUTC(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{2 * time.Second, "just now"}, {42 * time.Second, "42 s ago"}, {3*time.Minute + 10*time.Second, "3 min ago"},
		{26*time.Hour + 5*time.Minute, "26 h 5 min ago"}, {75 * time.Hour, "3 days ago"}, {-10 * time.Minute, "10 min from now"},
	} {
		if got := ago(now, now.Add(-tc.d)); got != tc.want {
			t.Errorf("ago(%s): got %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := utc(time.Date(2026, 5, 1, 14, 0, 0, 0, time.FixedZone("CEST", 2*3600))); got != "2026-05-01 12:00:00 UTC" {
		t.Errorf("utc: got %q", got)
	}
}

// runURL is the console's URL for this run, as Listen prints it, parsed,
// and the path every page of the run lives under ("/<prefix>").
func runURL(t *testing.T) (*url.URL, string) {
	t.Helper()
	ln, raw, err := Listen("127.0.0.1:0", token)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u, strings.TrimSuffix(u.Path, "/")
}

// browserResolve resolves a Location as a browser does: WHATWG URL
// parsing drops tabs and newlines and reads a backslash as a slash in an
// http URL, before resolving it against the page.
func browserResolve(page *url.URL, loc string) (*url.URL, error) {
	loc = strings.NewReplacer("\t", "", "\n", "", "\r", "", `\`, "/").Replace(loc)
	ref, err := url.Parse(loc)
	if err != nil {
		return nil, err
	}
	return page.ResolveReference(ref), nil
}

// TestTheTokensRedirectStaysOnTheConsole: the answer to the token in the
// URL, and to a path that is not clean, sends the browser to a page of the
// console itself, whatever the path tries (a second slash, a backslash,
// an escaped slash, a tab, a scheme, dot segments): never to another
// host.
func TestTheTokensRedirectStaysOnTheConsole(t *testing.T) {
	w := newWorld(t)
	_, base := runURL(t)
	for _, p := range []string{
		"//evil.example/landing", "///evil.example/landing", `/\evil.example/landing`, `/\/evil.example`, "/%2F/evil.example",
		"/%2F%2Fevil.example", "/%5Cevil.example", "/%5C%5Cevil.example", "/%09/evil.example", "/%0A/evil.example",
		"/https:evil.example", "/https://evil.example/", "/..//evil.example", "/.//evil.example", "/../%2F/evil.example",
	} {
		for _, target := range []string{
			"http://127.0.0.1:8080" + p + "?token=" + token,
			"http://127.0.0.1:8080" + base + p + "?token=" + token,
			"http://127.0.0.1:8080" + base + p,
		} {
			r := httptest.NewRequest("GET", target, nil)
			r.AddCookie(&http.Cookie{Name: "inboxctl_console_8080", Value: token})
			rec := httptest.NewRecorder()
			w.srv.ServeHTTP(rec, r)
			loc := rec.Header().Get("Location")
			if rec.Code < 300 || rec.Code > 399 {
				if loc != "" {
					t.Errorf("GET %s: got %d with Location %q", r.URL.Path, rec.Code, loc)
				}
				continue
			}
			got, err := browserResolve(r.URL, loc)
			if err != nil || got.Host != "127.0.0.1:8080" || !strings.HasPrefix(got.Path, base+"/") || !strings.HasPrefix(loc, base+"/") {
				t.Errorf("GET %s: got %d to %q (%v), want a path of this console (%s/...)", r.URL.Path, rec.Code, loc, got, base)
			}
		}
	}
}

// TestTheCookieGoesToThisConsoleOnly: a browser keeps cookies by host and
// path, not port, so the access cookie must not match any URL another
// server on the same loopback host is visited at; it matches the console's
// own pages, which open with it.
func TestTheCookieGoesToThisConsoleOnly(t *testing.T) {
	w := newWorld(t)
	run, base := runURL(t)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	first := httptest.NewRequest("GET", run.String(), nil)
	rec := httptest.NewRecorder()
	w.srv.ServeHTTP(rec, first)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("GET %s: got %d, want 303", run.Redacted(), rec.Code)
	}
	jar.SetCookies(first.URL, rec.Result().Cookies())
	next, err := browserResolve(first.URL, rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", next.String(), nil)
	for _, c := range jar.Cookies(next) {
		r.AddCookie(c)
	}
	rec = httptest.NewRecorder()
	w.srv.ServeHTTP(rec, r)
	if rec.Code != http.StatusSeeOther && rec.Code != http.StatusOK {
		t.Fatalf("GET %s with the jar's cookies: got %d, want the console", next, rec.Code)
	}
	for _, page := range []string{"/events", "/dlq", "/events/stripe/evt_golden_failed"} {
		u, _ := url.Parse("http://" + run.Host + base + page)
		if len(jar.Cookies(u)) != 1 {
			t.Errorf("the console's page %s: got %d cookies, want its one", page, len(jar.Cookies(u)))
		}
	}
	_, port, _ := net.SplitHostPort(run.Host)
	for _, other := range []string{"http://127.0.0.1:9999/", "http://127.0.0.1:9999/events", "http://127.0.0.1:3000/login",
		"http://127.0.0.1:" + port + "/", "http://127.0.0.1:9999/" + strings.TrimPrefix(base, "/") + "x/", "http://localhost:9999/"} {
		u, err := url.Parse(other)
		if err != nil {
			t.Fatal(err)
		}
		if cs := jar.Cookies(u); len(cs) != 0 {
			t.Errorf("another server at %s receives %d cookie(s) %v, want none", other, len(cs), cs)
		}
	}
	// Outside its path the console answers as to a stranger, cookie or not.
	for _, p := range []string{"/", "/events", "/" + strings.TrimPrefix(base, "/") + "x/events"} {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8080"+p, nil)
		r.AddCookie(&http.Cookie{Name: "inboxctl_console_8080", Value: token})
		rec := httptest.NewRecorder()
		w.srv.ServeHTTP(rec, r)
		if rec.Code != http.StatusUnauthorized || strings.Contains(rec.Body.String(), "evt_golden") {
			t.Errorf("GET %s outside the run's path: got %d, want 401", p, rec.Code)
		}
	}
}

// TestRedactionIsByName: the documented rule, name by name. A member is
// redacted when a word of its name (split at _ - . spaces and case
// changes) is, or ends with, one of the credential words, or when a "key"
// follows api, private, access, secret or signing; ids, checks and
// methods that only share letters with those words are kept.
func TestRedactionIsByName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		redact bool
	}{
		{"client_secret", true}, {"webhook_secret", true}, {"secrets", true}, {"clientSecret", true},
		{"token", true}, {"access_token", true}, {"refresh_token", true}, {"accessToken", true}, {"accesstoken", true},
		{"cart_token", true}, {"checkout_token", true}, {"id_token", true}, {"X-CSRF-Token", true}, {"tokens", true},
		{"password", true}, {"passwd", true}, {"passphrase", true}, {"password_hash", true}, {"new-password", true},
		{"signature", true}, {"Stripe-Signature", true}, {"X-Hub-Signature-256", true}, {"x_shopify_hmac_sha256", true},
		{"authorization", true}, {"Authorization", true}, {"auth", true}, {"oauth", true}, {"basic_auth", true},
		{"credential", true}, {"credentials", true}, {"aws_credentials", true},
		{"cookie", true}, {"Set-Cookie", true}, {"session_cookie", true}, {"jwt", true}, {"app_jwt", true},
		{"api_key", true}, {"apiKey", true}, {"apikey", true}, {"API-Key", true}, {"private_key", true}, {"privateKey", true},
		{"access_key", true}, {"secret_key", true}, {"signing_key", true}, {"hmac", true},

		{"id", false}, {"key", false}, {"keys", false}, {"idempotency_key", false}, {"public_key", false},
		{"tokenization_method", false}, {"author", false}, {"authority", false}, {"author_association", false},
		{"cvc_check", false}, {"status", false}, {"customer", false}, {"metadata", false}, {"keyword", false},
		{"signed_at", false}, {"passage", false}, {"description", false},
	} {
		doc := `{"` + tc.name + `":"v4lue"}`
		got := pretty([]byte(doc))
		if hidden := !strings.Contains(got, "v4lue"); hidden != tc.redact {
			t.Errorf("%q: got redacted=%t, want %t:\n%s", tc.name, hidden, tc.redact, got)
		}
	}
}

// TestTheAuditIsShown: the health page's audit line links to the audit
// page, which shows the last run's summary and each repaired object
// linking to its page; an object's page lists its audit repairs (source:
// audit), a dry run's left out; with no run, each says so.
func TestTheAuditIsShown(t *testing.T) {
	w := newWorld(t)
	health := w.do("GET", "/", nil).Body.String()
	if !strings.Contains(health, `id="audit-line"`) || !strings.Contains(health, `href="`+RunPath(token)+`/audit"`) || !strings.Contains(health, "3 repaired") {
		t.Errorf("health: no audit line linking to the audit page with its repairs:\n%s", health)
	}
	page := w.do("GET", "/audit", nil)
	body := page.Body.String()
	for _, want := range []string{
		`data-audit="listed">240<`, `data-audit="repaired">3<`, `data-audit="missing_here">1<`, `data-audit="unknown_there">1<`,
		`href="` + RunPath(token) + `/objects/sub_golden"`, "status: past_due → active",
		`href="` + RunPath(token) + `/objects/sub_connected?account=acct_1Golden"`, "missing here: written as a backfill is",
		"complete", "audit_0b0b", "partial",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("audit page: no %q", want)
		}
	}
	obj := w.do("GET", "/objects/sub_golden", nil).Body.String()
	if !strings.Contains(obj, `id="object-repairs"`) || !strings.Contains(obj, "source: audit") || !strings.Contains(obj, "status: past_due → active") {
		t.Errorf("object page: no audit repair of sub_golden:\n%s", obj)
	}
	if strings.Contains(obj, "status: active → past_due") {
		t.Errorf("object page lists the dry run's would-be repair as a repair")
	}
	if other := w.do("GET", "/objects/sub_connected", nil); strings.Contains(other.Body.String(), `id="object-repairs"`) {
		t.Errorf("the platform's sub_connected shows the connected account's repair")
	}

	w.rec.audits = nil
	if body := w.do("GET", "/audit", nil).Body.String(); !strings.Contains(body, "No audit run recorded yet") {
		t.Errorf("audit page without runs: no word of it:\n%s", body)
	}
	if body := w.do("GET", "/", nil).Body.String(); !strings.Contains(body, "No audit run recorded.") {
		t.Errorf("health without audit runs: no word of it")
	}
}

// TestTheReconcilerPageNamesItsGroups: each checkpoint reads as its
// provider, account and types, the hash kept as a detail; with the
// reconciler off and no run recorded, the page and the health page say
// so plainly.
func TestTheReconcilerPageNamesItsGroups(t *testing.T) {
	w := newWorld(t)
	body := w.do("GET", "/reconciler", nil).Body.String()
	for _, want := range []string{"Stripe, your own account: 2 event types", "Stripe, connected account <span class=\"id\">acct_1Golden</span>: 2 event types", "Stripe, your own account: 1 event type<"} {
		if !strings.Contains(body, want) {
			t.Errorf("reconciler page: no %q", want)
		}
	}
	if strings.Contains(body, "<summary>2 types <span") {
		t.Errorf("reconciler page still titles a group by its hash")
	}
	if strings.Contains(body, "reconciler-off") {
		t.Errorf("reconciler page says off without ReconcilerOff")
	}
	w.srv.cfg.ReconcilerOff = "no Stripe API key is configured"
	if body := w.do("GET", "/reconciler", nil).Body.String(); strings.Contains(body, "reconciler-off") {
		t.Errorf("reconciler page says off while runs are recorded")
	}
	w.rec.runs = nil
	body = w.do("GET", "/reconciler", nil).Body.String()
	if !strings.Contains(body, `id="reconciler-off"`) || !strings.Contains(body, "The reconciler is off here: no Stripe API key is configured.") {
		t.Errorf("reconciler page, off: not said plainly:\n%s", body)
	}
	if body := w.do("GET", "/", nil).Body.String(); !strings.Contains(body, "The reconciler is off here: no Stripe API key is configured.") {
		t.Errorf("health, reconciler off: not said plainly")
	}
}

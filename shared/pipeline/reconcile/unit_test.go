package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// fakeEvents is a hand-written events table with function fields; nil ones
// answer as an empty table would.
type fakeEvents struct {
	existing func(provider string, ids []string) (map[string]bool, error)
}

func (f *fakeEvents) Existing(_ context.Context, provider string, ids []string) (map[string]bool, error) {
	if f.existing == nil {
		return map[string]bool{}, nil
	}
	return f.existing(provider, ids)
}

func (f *fakeEvents) Held(_ context.Context, provider string, ids []string) (map[string]store.Held, error) {
	have, err := f.Existing(context.Background(), provider, ids)
	out := map[string]store.Held{}
	for id := range have {
		out[id] = store.Held{Record: true, Status: event.StatusProcessed, Payload: true}
	}
	return out, err
}

func (f *fakeEvents) Stuck(context.Context, string, time.Time, int) iter.Seq2[event.Record, error] {
	return func(func(event.Record, error) bool) {}
}

// fakeCheckpoints holds one checkpoint (the zero one until saved) and
// records the saves.
type fakeCheckpoints struct {
	stored store.Checkpoint
	saves  []struct{ prev, next store.Checkpoint }
}

func (f *fakeCheckpoints) Load(_ context.Context, name string) (store.Checkpoint, error) {
	cp := f.stored
	cp.Name = name
	return cp, nil
}

func (f *fakeCheckpoints) Save(_ context.Context, prev, next store.Checkpoint) (store.Checkpoint, error) {
	f.saves = append(f.saves, struct{ prev, next store.Checkpoint }{prev, next})
	next.Seq = prev.Seq + 1
	f.stored = next
	return next, nil
}

// recordingLister records its queries and answers one empty, final page.
type recordingLister struct{ queries []stripeapi.EventQuery }

func (l *recordingLister) ListEvents(_ context.Context, q stripeapi.EventQuery, page func(stripeapi.Page) (bool, error)) error {
	l.queries = append(l.queries, q)
	_, err := page(stripeapi.Page{})
	return err
}

type nopLister struct{}

func (nopLister) ListEvents(context.Context, stripeapi.EventQuery, func(stripeapi.Page) (bool, error)) error {
	return nil
}

type nopIngester struct{}

func (nopIngester) Ingest(context.Context, event.Envelope, []byte, event.Source) (ingest.Result, error) {
	return ingest.Result{}, nil
}

type nopQueue struct{}

func (nopQueue) Send(context.Context, event.Pointer) error { return nil }

func newTest(t *testing.T) *Reconciler {
	t.Helper()
	r, err := New(Config{Stripe: nopLister{}, Events: &fakeEvents{}, Checkpoints: &fakeCheckpoints{}, Ingester: nopIngester{}, Queue: nopQueue{},
		Types: []string{"invoice.paid"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGroupsSplitAtTwentyTypesAndAreStable(t *testing.T) {
	var types []string
	for i := range 24 {
		types = append(types, fmt.Sprintf("t.%02d", 23-i))
	}
	types = append(types, "t.05", " ")
	g := Groups("stripe", types)
	if len(g) != 2 || len(g[0].Types) != 20 || len(g[1].Types) != 4 {
		t.Fatalf("got groups of %d, want 20 and 4", len(g))
	}
	if g[0].Types[0] != "t.00" || g[1].Types[3] != "t.23" {
		t.Errorf("groups are not sorted: %v", g)
	}
	reversed := slices.Clone(types)
	slices.Reverse(reversed)
	again := Groups("stripe", reversed)
	if again[0].Checkpoint != g[0].Checkpoint || again[1].Checkpoint != g[1].Checkpoint || g[0].Checkpoint == g[1].Checkpoint {
		t.Errorf("checkpoints: got %s %s then %s %s, want stable and distinct", g[0].Checkpoint, g[1].Checkpoint, again[0].Checkpoint, again[1].Checkpoint)
	}
	if !strings.HasPrefix(g[0].Checkpoint, "stripe#") || Groups("other", types)[0].Checkpoint == g[0].Checkpoint {
		t.Errorf("checkpoint %q is not the provider's own", g[0].Checkpoint)
	}
	if other := Groups("stripe", []string{"t.00"}); other[0].Checkpoint == g[0].Checkpoint {
		t.Error("a different set of types shares a checkpoint")
	}
}

// TestPageIsComparedOnceWithTheStore: a page's events are looked up in one
// call, for the configured provider, and only those the store lacks are
// ingested.
func TestPageIsComparedOnceWithTheStore(t *testing.T) {
	var calls [][]string
	events := &fakeEvents{existing: func(provider string, ids []string) (map[string]bool, error) {
		if provider != event.ProviderStripe {
			t.Errorf("provider: got %q, want %q", provider, event.ProviderStripe)
		}
		calls = append(calls, ids)
		return map[string]bool{"evt_a": true, "evt_c": true}, nil
	}}
	ing := &recordingIngester{}
	r, err := New(Config{Stripe: nopLister{}, Events: events, Checkpoints: &fakeCheckpoints{}, Ingester: ing, Queue: nopQueue{},
		Types: []string{"invoice.paid"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var page stripeapi.Page
	for _, id := range []string{"evt_c", "evt_b", "evt_a"} {
		page.Events = append(
			page.Events,
			[]byte(`{"id":"`+id+`","object":"event","type":"invoice.paid","created":1,"livemode":false,"data":{"object":{"id":"in_1","object":"invoice"}}}`),
		)
	}
	rn := &run{r: r}
	if _, err := rn.page(context.Background(), page, 0); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(calls) != "[[evt_c evt_b evt_a]]" {
		t.Errorf("lookups: got %v, want one for the whole page", calls)
	}
	if fmt.Sprint(ing.ids) != "[evt_b]" || rn.res.Missing != 1 || rn.res.Listed != 3 {
		t.Errorf("ingested %v (missing %d, listed %d), want evt_b alone", ing.ids, rn.res.Missing, rn.res.Listed)
	}
}

type recordingIngester struct{ ids []string }

func (i *recordingIngester) Ingest(_ context.Context, env event.Envelope, _ []byte, _ event.Source) (ingest.Result, error) {
	i.ids = append(i.ids, env.ID)
	return ingest.Result{Outcome: outcome.Stored}, nil
}

func TestHandleRejectsBadInput(t *testing.T) {
	r := newTest(t)
	for _, in := range []string{`{"since":"yesterday"}`, `{"since":"-1h"}`, `[1]`} {
		if err := r.Handle(context.Background(), json.RawMessage(in)); err == nil {
			t.Errorf("input %s: got nil error", in)
		}
	}
}

func TestNewReportsEveryMissingDependency(t *testing.T) {
	_, err := New(Config{})
	if err == nil {
		t.Fatal("got nil error")
	}
	for _, want := range []string{"Stripe", "Events", "Checkpoints", "Ingester", "Queue", "Types"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

func loadTemplate(t *testing.T) *template.Template {
	t.Helper()
	tmpl, err := template.Load("../../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestTemplateAlarmWatchesTheMetricARunEmits(t *testing.T) {
	var logs bytes.Buffer
	r, err := New(Config{Stripe: nopLister{}, Events: &fakeEvents{}, Checkpoints: &fakeCheckpoints{}, Ingester: nopIngester{}, Queue: nopQueue{},
		Types: []string{"invoice.paid"}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), RunOptions{}); err != nil {
		t.Fatal(err)
	}
	var line struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		} `json:"_aws"`
		Function string `json:"function"`
	}
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil || len(line.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("run line: %v\n%s", err, logs.String())
	}
	emf := line.AWS.CloudWatchMetrics[0]
	emitted := false
	for _, m := range emf.Metrics {
		emitted = emitted || m.Name == MetricMissing
	}

	alarm, ok := loadTemplate(t).Resource("ReconcilerMissingEventsAlarm")
	if !ok {
		t.Fatal("template has no ReconcilerMissingEventsAlarm")
	}
	p := alarm.Properties
	if p["Namespace"] != emf.Namespace || p["MetricName"] != MetricMissing || !emitted {
		t.Errorf("alarm on %v/%v; the run emits %s in %s (emitted: %v)", p["Namespace"], p["MetricName"], MetricMissing, emf.Namespace, emitted)
	}
	// CloudWatch matches a metric only with exactly its dimensions.
	var dims []string
	for _, d := range p["Dimensions"].([]any) {
		m := d.(map[string]any)
		dims = append(dims, fmt.Sprintf("%v=%v", m["Name"], m["Value"]))
	}
	if want := []string{"function=" + line.Function}; len(emf.Dimensions) != 1 || !slices.Equal(emf.Dimensions[0], []string{"function"}) ||
		!slices.Equal(dims, want) {
		t.Errorf("alarm dimensions %v; the run emits %v with function=%s", dims, emf.Dimensions, line.Function)
	}
}

func TestTemplateGrantsExactlyWhatTheReconcilerUses(t *testing.T) {
	tmpl := loadTemplate(t)
	f, err := tmpl.Function("ReconcilerFunction")
	if err != nil {
		t.Fatal(err)
	}
	if expr, ok := f.Schedule(); !ok || expr != "rate(10 minutes)" {
		t.Errorf("schedule: got %q, want the ReconcileRate default", expr)
	}
	if _, ok := f.Environment["STRIPE_API_KEY_PARAMETER"]; !ok {
		t.Error("no STRIPE_API_KEY_PARAMETER in the environment")
	}
	res, _ := tmpl.Resource("ReconcilerFunction")
	got := map[string]string{}
	// The audit's grants on the mirror table (package audit, through this
	// function), checked apart: the reconciliation's are the rest.
	audit := map[string]string{}
	var queried []string
	for _, pol := range res.Properties["Policies"].([]any) {
		for _, st := range pol.(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			actions, ok := st["Action"].([]any)
			if !ok {
				actions = []any{st["Action"]}
			}
			for _, a := range actions {
				if st["Sid"] == "AuditMirror" {
					audit[a.(string)] = fmt.Sprint(st["Resource"])
					continue
				}
				got[a.(string)] = fmt.Sprint(st["Resource"])
				if a == "dynamodb:Query" {
					queried = append(queried, fmt.Sprint(st["Resource"]))
				}
			}
		}
	}
	// The DynamoDB interface, the ingest path (PutItem), the queue and the
	// API key parameter: nothing else.
	want := []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "sqs:SendMessage", "ssm:GetParameter"}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Errorf("actions: got %v, want %v", keys, want)
	}
	// The stuck sweep's index (its pending lane) and the accounts seen
	// (store.Accounts.Page), and no other.
	if len(queried) != 2 || !strings.HasSuffix(queried[0], "/index/unprocessed") || !strings.HasSuffix(queried[1], "/index/accounts_seen") {
		t.Errorf("Query is granted on %v, want only the unprocessed and accounts_seen indexes", queried)
	}
	if !strings.Contains(got["dynamodb:BatchGetItem"], "EventsTable") || !strings.Contains(got["sqs:SendMessage"], "WebhookQueue") {
		t.Errorf("resources: got %v", got)
	}
	// The audit: a page's batched read, the keys-only scan, a repair's
	// Put and Update, on the mirror table alone.
	want = []string{"dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:Scan", "dynamodb:UpdateItem"}
	if keys := slices.Sorted(maps.Keys(audit)); !slices.Equal(keys, want) {
		t.Errorf("audit actions: got %v, want %v", keys, want)
	}
	for a, r := range audit {
		if !strings.Contains(r, "MirrorTable") || strings.Contains(r, "/index/") {
			t.Errorf("audit %s is granted on %s, want the mirror table alone", a, r)
		}
	}
}

func TestWindowOfARun(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	floor := now.Add(-Retention + time.Minute).Unix()
	settled := now.Add(-DefaultSettle).Unix()
	hours := func(h int) int64 { return now.Add(-time.Duration(h) * time.Hour).Unix() }
	stored := func(cp store.Checkpoint) *store.Checkpoint {
		cp.Seq = 4
		return &cp
	}
	start := now.Add(-DefaultFirstLookback).Unix()
	tests := []struct {
		name       string
		stored     *store.Checkpoint
		since      time.Duration
		backfill   bool
		wantQuery  *stripeapi.EventQuery // nil: no list request
		wantDone   int64                 // done_through written last; -1: no write
		wantWindow bool                  // a window still in progress after the write
		wantSince  int64                 // the group's start a first run writes first; 0: none
	}{
		// A new deployment: its start is one schedule period back, and
		// nothing older is listed (it was 30 days: a month of history
		// through the team's effects).
		{
			name:      "first run starts one period back",
			wantQuery: &stripeapi.EventQuery{CreatedGTE: start, CreatedLTE: settled},
			wantDone:  settled,
			wantSince: start,
		},
		{name: "a first sweep records the start too, and lists nothing older", since: 24 * time.Hour,
			wantQuery: &stripeapi.EventQuery{CreatedGTE: start, CreatedLTE: settled}, wantDone: start, wantSince: start},
		{name: "the next run never lists below the start", stored: stored(store.Checkpoint{HistoryBefore: hours(2), DoneThrough: hours(2)}),
			wantQuery: &stripeapi.EventQuery{CreatedGTE: hours(2), CreatedLTE: settled}, wantDone: settled},
		{
			name:      "a sweep lists nothing before the start",
			stored:    stored(store.Checkpoint{HistoryBefore: hours(3), DoneThrough: hours(2)}),
			since:     24 * time.Hour,
			wantQuery: &stripeapi.EventQuery{CreatedGTE: hours(3), CreatedLTE: settled},
			wantDone:  -1,
		},
		{
			name:      "a backfill lists history",
			stored:    stored(store.Checkpoint{HistoryBefore: hours(3), DoneThrough: hours(2)}),
			since:     30 * 24 * time.Hour,
			backfill:  true,
			wantQuery: &stripeapi.EventQuery{CreatedGTE: floor, CreatedLTE: settled},
			wantDone:  -1,
		},
		{name: "next run starts an overlap below the checkpoint", stored: stored(store.Checkpoint{DoneThrough: hours(2)}),
			wantQuery: &stripeapi.EventQuery{CreatedGTE: hours(2) - int64(DefaultOverlap/time.Second), CreatedLTE: settled}, wantDone: settled},
		{name: "a checkpoint older than the retention is clamped", stored: stored(store.Checkpoint{DoneThrough: hours(40 * 24)}),
			wantQuery: &stripeapi.EventQuery{CreatedGTE: floor, CreatedLTE: settled}, wantDone: settled},
		{
			name: "a window in progress resumes after its cursor",
			stored: stored(
				store.Checkpoint{DoneThrough: hours(9), WindowFrom: hours(10), WindowTo: hours(1), CursorCreated: hours(5), Cursor: "evt_cursor"},
			),
			wantQuery: &stripeapi.EventQuery{CreatedGTE: hours(10), CreatedLTE: hours(1), StartingAfter: "evt_cursor"},
			wantDone:  hours(1),
		},
		{
			name:     "a window whose rest has expired is closed without a request",
			stored:   stored(store.Checkpoint{WindowFrom: hours(31 * 24), WindowTo: hours(29 * 24), CursorCreated: hours(30*24 + 1), Cursor: "evt_old"}),
			wantDone: hours(29 * 24),
		},
		{name: "a sweep lists its stretch and writes nothing", stored: stored(store.Checkpoint{DoneThrough: hours(2)}), since: 24 * time.Hour,
			wantQuery: &stripeapi.EventQuery{CreatedGTE: hours(24), CreatedLTE: settled}, wantDone: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cps := &fakeCheckpoints{}
			if tc.stored != nil {
				cps.stored = *tc.stored
			}
			l := &recordingLister{}
			r, err := New(Config{Stripe: l, Events: &fakeEvents{}, Checkpoints: cps, Ingester: nopIngester{}, Queue: nopQueue{},
				Types: []string{"invoice.paid"}, Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(context.Background(), RunOptions{Since: tc.since, Backfill: tc.backfill})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantSince != 0 {
				// The start first, on its own, conditioned on there being
				// no checkpoint yet.
				if len(cps.saves) == 0 || cps.saves[0].prev.Seq != 0 || cps.saves[0].next.HistoryBefore != tc.wantSince ||
					cps.saves[0].next.DoneThrough != tc.wantSince {
					t.Fatalf("first write: got %+v, want the group's start %d", cps.saves, tc.wantSince)
				}
				if len(cps.saves) == 1 {
					cps.saves = nil
				} else {
					cps.saves = cps.saves[1:]
				}
				if tc.wantDone == tc.wantSince && tc.since > 0 {
					tc.wantDone = -1 // a sweep writes nothing more
				}
				for _, sv := range cps.saves {
					if sv.next.HistoryBefore != tc.wantSince {
						t.Errorf("a later write changed the start: %+v", sv.next)
					}
				}
				tc.stored = &store.Checkpoint{Seq: 1}
			}
			switch {
			case tc.wantQuery == nil && len(l.queries) != 0:
				t.Errorf("queries: got %+v, want none", l.queries)
			case tc.wantQuery != nil && (len(l.queries) != 1 || l.queries[0].CreatedGTE != tc.wantQuery.CreatedGTE ||
				l.queries[0].CreatedLTE != tc.wantQuery.CreatedLTE || l.queries[0].StartingAfter != tc.wantQuery.StartingAfter):
				t.Errorf("queries: got %+v, want one %+v", l.queries, *tc.wantQuery)
			}
			if tc.wantDone < 0 {
				if len(cps.saves) != 0 {
					t.Errorf("checkpoint writes: got %d, want none", len(cps.saves))
				}
				return
			}
			if len(cps.saves) != 1 {
				t.Fatalf("checkpoint writes: got %d, want 1", len(cps.saves))
			}
			prev, next := cps.saves[0].prev, cps.saves[0].next
			if next.DoneThrough != tc.wantDone {
				t.Errorf("done_through: got %d, want %d", next.DoneThrough, tc.wantDone)
			}
			if next.InProgress() != tc.wantWindow {
				t.Errorf("window in progress after the write: got %v, want %v", next.InProgress(), tc.wantWindow)
			}
			// Replaces the state it read, and says which run wrote it.
			wantSeq := int64(0)
			if tc.stored != nil {
				wantSeq = tc.stored.Seq
			}
			if want := r.Groups()[0]; prev.Seq != wantSeq || next.Name != want.Checkpoint || !slices.Equal(next.Types, want.Types) {
				t.Errorf(
					"save: got prev seq %d, next %s %v; want seq %d as read, of group %s %v",
					prev.Seq,
					next.Name,
					next.Types,
					wantSeq,
					want.Checkpoint,
					want.Types,
				)
			}
			if !next.UpdatedAt.Equal(now) || next.RunID != res.RunID {
				t.Errorf("written at %v by %s, want %v by %s", next.UpdatedAt, next.RunID, now, res.RunID)
			}
		})
	}
}

// fakeRuns records what the reconciler keeps of its runs.
type fakeRuns struct {
	runs []store.Run
	err  error
	ctx  error // the context's error when Record was called
}

func (f *fakeRuns) Record(ctx context.Context, provider string, run store.Run) error {
	f.ctx = ctx.Err()
	if provider != event.ProviderStripe {
		return fmt.Errorf("provider %q", provider)
	}
	f.runs = append(f.runs, run)
	return f.err
}

// failingLister fails every listing, as Stripe does when it is down.
type failingLister struct{}

func (failingLister) ListEvents(context.Context, stripeapi.EventQuery, func(stripeapi.Page) (bool, error)) error {
	return fmt.Errorf("stripe: 503 service unavailable")
}

// cancellingLister cancels the run's context while it lists, as a Lambda
// deadline or an operator's Ctrl-C does.
type cancellingLister struct{ cancel context.CancelFunc }

func (l cancellingLister) ListEvents(ctx context.Context, _ stripeapi.EventQuery, _ func(stripeapi.Page) (bool, error)) error {
	l.cancel()
	return ctx.Err()
}

// TestEveryRunIsKeptForOperators: a run's result (what it found, how it
// ended) is handed to Runs, a failed run's error included, and a run whose
// context was cancelled is kept all the same; a failure to keep it changes
// nothing about the run.
func TestEveryRunIsKeptForOperators(t *testing.T) {
	runs := &fakeRuns{}
	var logs bytes.Buffer
	cfg := Config{Stripe: &recordingLister{}, Events: &fakeEvents{}, Checkpoints: &fakeCheckpoints{}, Ingester: nopIngester{}, Queue: nopQueue{},
		Types: []string{"invoice.paid"}, Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Runs: runs}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), RunOptions{Since: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.runs) != 1 {
		t.Fatalf("kept %d runs, want 1", len(runs.runs))
	}
	got := runs.runs[0]
	if got.ID != res.RunID || got.Outcome != string(outcome.RunComplete) || got.Pages != res.Pages || got.Since != time.Hour || got.StartedAt.IsZero() ||
		got.Error != "" {
		t.Errorf("kept %+v for the result %+v", got, res)
	}

	cfg.Stripe = failingLister{}
	r, _ = New(cfg)
	if _, err := r.Run(context.Background(), RunOptions{}); err == nil {
		t.Fatal("a run whose listing fails: got no error")
	}
	if got := runs.runs[1]; got.Outcome != string(outcome.RunAborted) || !strings.Contains(got.Error, "503") {
		t.Errorf("a failed run was kept as %+v, want failed with its error", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cfg.Stripe = cancellingLister{cancel}
	r, _ = New(cfg)
	runs.err = fmt.Errorf("table gone")
	res, err = r.Run(ctx, RunOptions{})
	if err != nil {
		t.Fatalf("a cancelled run: %v", err)
	}
	if len(runs.runs) != 3 || runs.ctx != nil || runs.runs[2].Outcome != string(outcome.RunPartial) || runs.runs[2].Stopped != res.Stopped {
		t.Errorf("a cancelled run: kept %+v with a context error %v, want it partial, kept with a live context", runs.runs[2:], runs.ctx)
	}
	if !strings.Contains(logs.String(), "keeping the run's result failed") {
		t.Errorf("a failure to keep the run is not logged:\n%s", logs.String())
	}
}

// pageLister answers every query with one final page of events, newest
// first, as Stripe would: those of the query's time range.
type pageLister struct{ events [][]byte }

func (l pageLister) ListEvents(_ context.Context, q stripeapi.EventQuery, page func(stripeapi.Page) (bool, error)) error {
	var p stripeapi.Page
	for _, b := range l.events {
		env, err := event.DecodeEnvelope(b)
		if err != nil {
			return err
		}
		if (q.CreatedGTE == 0 || env.Created >= q.CreatedGTE) && (q.CreatedLTE == 0 || env.Created <= q.CreatedLTE) {
			p.Events = append(p.Events, b)
		}
	}
	_, err := page(p)
	return err
}

// sourceIngester records the source of each event it ingests.
type sourceIngester struct{ sources map[string]event.Source }

func (i *sourceIngester) Ingest(_ context.Context, env event.Envelope, _ []byte, src event.Source) (ingest.Result, error) {
	i.sources[env.ID] = src
	return ingest.Result{Outcome: outcome.Stored}, nil
}

// TestTheLambdaInputBackfills: the reconciler's Lambda input is the
// backfill's other way in ({"since":"720h","backfill":true}, as
// docs/operations.md says): history comes in only with backfill, with
// source backfill (no effect), or reconciler with with_effects; a
// backfill without since, or with_effects without backfill, is refused.
func TestTheLambdaInputBackfills(t *testing.T) {
	now := time.Now()
	history := []byte(
		fmt.Sprintf(
			`{"id":"evt_history","object":"event","type":"invoice.paid","created":%d,"livemode":false,"api_version":"2025-02-24.acacia","data":{"object":{"id":"in_history","object":"invoice"}}}`,
			now.Add(-5*24*time.Hour).Unix(),
		),
	)
	for _, tc := range []struct {
		name, input string
		want        event.Source // "": not ingested
		bad         bool
	}{
		{name: "a scheduled run", input: `{}`},
		{name: "a sweep", input: `{"since":"720h"}`},
		{name: "a backfill", input: `{"since":"720h","backfill":true}`, want: event.SourceBackfill},
		{name: "a backfill with effects", input: `{"since":"720h","backfill":true,"with_effects":true}`, want: event.SourceReconciler},
		{name: "a backfill without since", input: `{"backfill":true}`, bad: true},
		{name: "effects without backfill", input: `{"since":"720h","with_effects":true}`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &sourceIngester{sources: map[string]event.Source{}}
			r, err := New(
				Config{Stripe: pageLister{events: [][]byte{history}}, Events: &fakeEvents{}, Checkpoints: &fakeCheckpoints{}, Ingester: in, Queue: nopQueue{},
					Types: []string{"invoice.paid"}, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }},
			)
			if err != nil {
				t.Fatal(err)
			}
			err = r.Handle(context.Background(), json.RawMessage(tc.input))
			if (err != nil) != tc.bad {
				t.Fatalf("input %s: got error %v, want one: %v", tc.input, err, tc.bad)
			}
			if got := in.sources["evt_history"]; got != tc.want {
				t.Errorf("input %s: history ingested with source %q, want %q", tc.input, got, tc.want)
			}
		})
	}
}

func TestTemplateRefusesGitHubSettingsThatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		refused   string
	}{
		{"hooks without a credential", map[string]string{"GitHubHooks": "org:acme/34"}, "GitHubHooksNeedACredential"},
		{"a token without hooks", map[string]string{"GitHubTokenParameter": "/webhook-inbox/dev/github/token"}, "GitHubCredentialsNeedGitHubHooks"},
		{"the token in Stripe's API key", map[string]string{"GitHubHooks": "org:acme/34", "GitHubTokenParameter": "/webhook-inbox/dev/stripe/api-key"}, "GitHubTokenHasItsOwnParameter"},
		{"the App's key in the token's parameter", map[string]string{"GitHubHooks": "org:acme/34,app:56",
			"GitHubTokenParameter": "/webhook-inbox/dev/github/token", "GitHubAppKeyParameter": "/webhook-inbox/dev/github/token"}, "GitHubTokenHasItsOwnParameter"},
		{"a repository hook with its token", map[string]string{"GitHubHooks": "repo:acme/shop/12", "GitHubTokenParameter": "/webhook-inbox/dev/github/token"}, ""},
		{"GitHub off", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := template.Load("../../../template.yaml", tc.overrides)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("got %v, want the rule %s to refuse it", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := tmpl.Function("ReconcilerFunction")
			if err != nil {
				t.Fatal(err)
			}
			_, hooks := f.Environment["GITHUB_HOOKS"]
			_, token := f.Environment["GITHUB_API_TOKEN_PARAMETER"]
			_, appKey := f.Environment["GITHUB_APP_PRIVATE_KEY_PARAMETER"]
			on := tc.overrides != nil
			if hooks != on || token != on || appKey {
				t.Errorf(
					"environment: GITHUB_HOOKS %v, token parameter %v, App key parameter %v; want the first two %v and no App key",
					hooks,
					token,
					appKey,
					on,
				)
			}
		})
	}
}

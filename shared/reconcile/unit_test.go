package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/template"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/stripeapi"
)

// fakeDB is a hand-written DynamoDB with function fields; nil ones answer
// as an empty table would.
type fakeDB struct {
	batchGet func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error)
	getItem  func(in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	putItem  func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
}

func (f *fakeDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return f.batchGet(in)
}

func (f *fakeDB) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}
func (f *fakeDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if f.getItem == nil {
		return &dynamodb.GetItemOutput{}, nil
	}
	return f.getItem(in)
}
func (f *fakeDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.putItem == nil {
		return &dynamodb.PutItemOutput{}, nil
	}
	return f.putItem(in)
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

func newTest(t *testing.T, db DynamoDB) *Reconciler {
	t.Helper()
	r, err := New(Config{Stripe: nopLister{}, DB: db, Table: "events", Ingester: nopIngester{}, Queue: nopQueue{},
		Types: []string{"invoice.paid"}, BatchBackoff: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
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
	if again[0].Key != g[0].Key || again[1].Key != g[1].Key || g[0].Key == g[1].Key {
		t.Errorf("keys: got %s %s then %s %s, want stable and distinct", g[0].Key, g[1].Key, again[0].Key, again[1].Key)
	}
	if !strings.HasPrefix(g[0].Key, "checkpoint#stripe#") {
		t.Errorf("key %q cannot collide with an event's", g[0].Key)
	}
	if other := Groups("stripe", []string{"t.00"}); other[0].Key == g[0].Key {
		t.Error("a different set of types shares a checkpoint")
	}
}

func TestExistingRetriesUnprocessedKeys(t *testing.T) {
	calls := 0
	var asked [][]string
	db := &fakeDB{batchGet: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		calls++
		ka := in.RequestItems["events"]
		if !*ka.ConsistentRead {
			t.Error("BatchGetItem without a consistent read")
		}
		var pks []string
		for _, k := range ka.Keys {
			pks = append(pks, k["pk"].(*types.AttributeValueMemberS).Value)
		}
		asked = append(asked, pks)
		out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
		// First call: one found, the last key unprocessed. Second: found.
		out.Responses["events"] = []map[string]types.AttributeValue{ka.Keys[0]}
		if calls == 1 {
			out.UnprocessedKeys = map[string]types.KeysAndAttributes{"events": {Keys: ka.Keys[len(ka.Keys)-1:], ConsistentRead: ka.ConsistentRead}}
		}
		return out, nil
	}}
	got, err := newTest(t, db).existing(context.Background(), []string{"evt_a", "evt_b", "evt_a", "evt_c"})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || fmt.Sprint(asked) != "[[stripe#evt_a stripe#evt_b stripe#evt_c] [stripe#evt_c]]" {
		t.Errorf("calls: got %d %v, want the batch (each key once) then its unprocessed key", calls, asked)
	}
	if !got["evt_a"] || got["evt_b"] || !got["evt_c"] {
		t.Errorf("found: got %v, want evt_a and evt_c", got)
	}
}

func TestExistingGivesUpOnKeysThatStayUnprocessed(t *testing.T) {
	db := &fakeDB{batchGet: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		return &dynamodb.BatchGetItemOutput{UnprocessedKeys: in.RequestItems}, nil
	}}
	_, err := newTest(t, db).existing(context.Background(), []string{"evt_a"})
	if err == nil || !strings.Contains(err.Error(), "unprocessed") {
		t.Fatalf("got %v, want an error about unprocessed keys", err)
	}
}

func TestHandleRejectsBadInput(t *testing.T) {
	r := newTest(t, &fakeDB{})
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
	for _, want := range []string{"Stripe", "DB", "Table", "Ingester", "Queue", "Types"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

func loadTemplate(t *testing.T) *template.Template {
	t.Helper()
	tmpl, err := template.Load("../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestTemplateAlarmWatchesTheMetricARunEmits(t *testing.T) {
	var logs bytes.Buffer
	r, err := New(Config{Stripe: nopLister{}, DB: &fakeDB{}, Table: "events", Ingester: nopIngester{}, Queue: nopQueue{},
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
	if want := []string{"function=" + line.Function}; len(emf.Dimensions) != 1 || !slices.Equal(emf.Dimensions[0], []string{"function"}) || !slices.Equal(dims, want) {
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
	for _, pol := range res.Properties["Policies"].([]any) {
		for _, st := range pol.(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			actions, ok := st["Action"].([]any)
			if !ok {
				actions = []any{st["Action"]}
			}
			for _, a := range actions {
				got[a.(string)] = fmt.Sprint(st["Resource"])
			}
		}
	}
	// The DynamoDB interface, the ingest path (PutItem), the queue and the
	// API key parameter: nothing else.
	want := []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "sqs:SendMessage", "ssm:GetParameter"}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Errorf("actions: got %v, want %v", keys, want)
	}
	if !strings.HasSuffix(got["dynamodb:Query"], "/index/pending") {
		t.Errorf("Query is granted on %s, want only the pending index", got["dynamodb:Query"])
	}
	if !strings.Contains(got["dynamodb:BatchGetItem"], "EventsTable") || !strings.Contains(got["sqs:SendMessage"], "WebhookQueue") {
		t.Errorf("resources: got %v", got)
	}
}

func TestWindowOfARun(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	floor := now.Add(-Retention + time.Minute).Unix()
	settled := now.Add(-DefaultSettle).Unix()
	hours := func(h int) int64 { return now.Add(-time.Duration(h) * time.Hour).Unix() }
	item := func(kv map[string]int64, cursor string) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{"pk": sv("checkpoint"), "seq": nv(4)}
		for k, v := range kv {
			m[k] = nv(v)
		}
		if cursor != "" {
			m["cursor"] = sv(cursor)
		}
		return m
	}
	tests := []struct {
		name       string
		stored     map[string]types.AttributeValue
		since      time.Duration
		wantQuery  *stripeapi.EventQuery // nil: no list request
		wantDone   int64                 // done_through written; -1: no write
		wantWindow bool                  // a window still in progress after the write
	}{
		{name: "first run looks back to Stripe's retention", wantQuery: &stripeapi.EventQuery{CreatedGTE: floor, CreatedLTE: settled}, wantDone: settled},
		{name: "next run starts an overlap below the checkpoint", stored: item(map[string]int64{"done_through": hours(2)}, ""),
			wantQuery: &stripeapi.EventQuery{CreatedGTE: hours(3), CreatedLTE: settled}, wantDone: settled},
		{name: "a checkpoint older than the retention is clamped", stored: item(map[string]int64{"done_through": hours(40 * 24)}, ""),
			wantQuery: &stripeapi.EventQuery{CreatedGTE: floor, CreatedLTE: settled}, wantDone: settled},
		{name: "a window in progress resumes after its cursor", stored: item(map[string]int64{"done_through": hours(9), "window_from": hours(10), "window_to": hours(1), "cursor_created": hours(5)}, "evt_cursor"),
			wantQuery: &stripeapi.EventQuery{CreatedGTE: hours(10), CreatedLTE: hours(1), StartingAfter: "evt_cursor"}, wantDone: hours(1)},
		{name: "a window whose rest has expired is closed without a request", stored: item(map[string]int64{"window_from": hours(31 * 24), "window_to": hours(29 * 24), "cursor_created": hours(30*24 + 1)}, "evt_old"),
			wantDone: hours(29 * 24)},
		{name: "a sweep lists its stretch and writes nothing", stored: item(map[string]int64{"done_through": hours(2)}, ""), since: 24 * time.Hour,
			wantQuery: &stripeapi.EventQuery{CreatedGTE: hours(24), CreatedLTE: settled}, wantDone: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var puts []*dynamodb.PutItemInput
			db := &fakeDB{
				getItem: func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
					return &dynamodb.GetItemOutput{Item: tc.stored}, nil
				},
				putItem: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
					puts = append(puts, in)
					return &dynamodb.PutItemOutput{}, nil
				},
			}
			l := &recordingLister{}
			r, err := New(Config{Stripe: l, DB: db, Table: "events", Ingester: nopIngester{}, Queue: nopQueue{},
				Types: []string{"invoice.paid"}, Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Run(context.Background(), RunOptions{Since: tc.since}); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantQuery == nil && len(l.queries) != 0:
				t.Errorf("queries: got %+v, want none", l.queries)
			case tc.wantQuery != nil && (len(l.queries) != 1 || l.queries[0].CreatedGTE != tc.wantQuery.CreatedGTE ||
				l.queries[0].CreatedLTE != tc.wantQuery.CreatedLTE || l.queries[0].StartingAfter != tc.wantQuery.StartingAfter):
				t.Errorf("queries: got %+v, want one %+v", l.queries, *tc.wantQuery)
			}
			if tc.wantDone < 0 {
				if len(puts) != 0 {
					t.Errorf("checkpoint writes: got %d, want none", len(puts))
				}
				return
			}
			if len(puts) != 1 {
				t.Fatalf("checkpoint writes: got %d, want 1", len(puts))
			}
			got := puts[0].Item
			if done := got["done_through"].(*types.AttributeValueMemberN).Value; done != fmt.Sprint(tc.wantDone) {
				t.Errorf("done_through: got %s, want %d", done, tc.wantDone)
			}
			if _, inProgress := got["window_to"]; inProgress != tc.wantWindow {
				t.Errorf("window in progress after the write: got %v, want %v", inProgress, tc.wantWindow)
			}
			// Conditioned on the state it read.
			if tc.stored == nil && aws.ToString(puts[0].ConditionExpression) != "attribute_not_exists(pk)" ||
				tc.stored != nil && puts[0].ExpressionAttributeValues[":seq"].(*types.AttributeValueMemberN).Value != "4" {
				t.Errorf("condition: got %s %v", aws.ToString(puts[0].ConditionExpression), puts[0].ExpressionAttributeValues)
			}
		})
	}
}

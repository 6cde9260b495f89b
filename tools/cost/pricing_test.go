package cost

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The unit tests of the arithmetic between what the meter recorded and
// the dollars it reports: no emulator. Every expected figure is computed
// by hand in the case.

// near reports whether a and b are equal to a billionth of a dollar.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Units round up at the unit's boundary, never before it ("DynamoDB read
// and write operations": 1 KB a write unit, 4 KB a read unit).
func TestUnitsRoundUpAtTheBoundary(t *testing.T) {
	for _, tc := range []struct {
		size, want int
	}{{0, 1}, {1, 1}, {1024, 1}, {1025, 2}, {2048, 2}, {2049, 3}, {400 * 1024, 400}} {
		if got := WriteUnits(tc.size); got != tc.want {
			t.Errorf("WriteUnits(%d): got %d, want %d", tc.size, got, tc.want)
		}
	}
	for _, tc := range []struct {
		size int
		c    Consistency
		want float64
	}{
		{4096, Strong, 1}, {4097, Strong, 2}, {4096, Eventual, 0.5}, {4097, Eventual, 1},
		{4096, Transactional, 2}, {4097, Transactional, 4}, {12288, Eventual, 1.5},
	} {
		if got := ReadUnits(tc.size, tc.c); got != tc.want {
			t.Errorf("ReadUnits(%d, %d): got %v, want %v", tc.size, tc.c, got, tc.want)
		}
	}
}

// SQS bills a request per 64 KB chunk of its payload ("each 64 KB chunk
// of a payload is billed as 1 request": a 256 KB message is 4); a batch
// is its entries' bodies together.
func TestSQSIsBilledPer64KBChunk(t *testing.T) {
	body := func(n int) *string { return aws.String(strings.Repeat("x", n)) }
	for _, tc := range []struct {
		name   string
		params any
		want   int
	}{
		{"an empty message", &sqs.SendMessageInput{MessageBody: aws.String("")}, 1},
		{"a 2.6 KB event", &sqs.SendMessageInput{MessageBody: body(2662)}, 1},
		{"64 KB exactly", &sqs.SendMessageInput{MessageBody: body(65536)}, 1},
		{"a byte over", &sqs.SendMessageInput{MessageBody: body(65537)}, 2},
		{"256 KB", &sqs.SendMessageInput{MessageBody: body(256 * 1024)}, 4},
		{"a batch of three 30 KB messages", &sqs.SendMessageBatchInput{Entries: []sqstypes.SendMessageBatchRequestEntry{
			{MessageBody: body(30 << 10)}, {MessageBody: body(30 << 10)}, {MessageBody: body(30 << 10)}}}, 2},
		{"any other request", &sqs.DeleteMessageInput{}, 1},
	} {
		if got := sqsChunks(tc.params); got != tc.want {
			t.Errorf("%s: got %d requests, want %d", tc.name, got, tc.want)
		}
	}
}

// The SQS line: the event source's receive and delete shared by a batch,
// plus every chunk the functions sent, by operation.
func TestSQSRequestsAddTheRecordedChunks(t *testing.T) {
	calls := []Call{
		{Service: "SQS", Operation: "SendMessage", Chunks: 1},
		{Service: "DynamoDB", Operation: "PutItem", Chunks: 0},
		{Service: "SQS", Operation: "SendMessage", Chunks: 2},
		{Service: "SQS", Operation: "ChangeMessageVisibility", Chunks: 1},
	}
	n, ops := sqsRequests(2.0/10, calls)
	if !near(n, 4.2) || ops != "ChangeMessageVisibility 1, SendMessage 3" {
		t.Errorf("got %v requests (%s), want 4.2 (ChangeMessageVisibility 1, SendMessage 3)", n, ops)
	}
	// At $0.40 a million requests, 4.2 an event: $1.68 a million events.
	if usd := price("sqs") * n; !near(usd, 1.68) {
		t.Errorf("got $%v a million events, want $1.68", usd)
	}
	if n, ops := sqsRequests(0.5, nil); n != 0.5 || ops != "" {
		t.Errorf("no call: got %v (%q), want 0.5 and none", n, ops)
	}
}

// Dollars per million events are units an event times the price per
// million units: the new 2.6 KB event's 13 write units (docs/performance.md)
// cost $8.125 a million at $0.625 a million WRU.
func TestDollarsPerMillionAreUnitsTimesTheListPrice(t *testing.T) {
	for _, tc := range []struct {
		key   string
		units float64
		want  float64
	}{
		{"ddb.write", 13, 8.125},
		{"ddb.read", 2.5, 0.3125},
		{"httpapi", 1, 1},
		{"lambda.requests", 1 + 1.0/10, 0.22},
		// 128 MB for 12 ms: 0.125 GB × 0.012 s a million times.
		{"lambda.arm64", 0.125 * 0.012 * 1e6, 0.0200001},
		{"logs.ingest", 1e6 * 1000 / (1 << 30), 0.4656612873},
	} {
		if got := price(tc.key) * tc.units; math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s × %v: got $%v, want $%v", tc.key, tc.units, got, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown price: got a figure, want a panic")
		}
	}()
	price("ddb.nothing")
}

// A scenario's steps: one per table a write wrote (its index writes
// beside it), one per target a call read, and the reconciler's
// comparisons of the records the scenario created, times the runs that
// list each event.
func TestScenarioCostStepsAndIndexFanOut(t *testing.T) {
	base := Item{"pk": s("e1"), "stage_date": s("received#2026-11-30"), "moment_at": n("1"), "status": s("received")}
	moved := Item{"pk": s("e1"), "stage_date": s("processed#2026-11-30"), "moment_at": n("1"), "status": s("processed")}
	put := Write{Kind: Put, Outcome: Applied, After: base}
	commit := Write{Kind: Update, Outcome: Applied, Transactional: true, Before: base, After: moved}
	cancelled := Write{Kind: Update, Outcome: Cancelled, Transactional: true, Before: base, After: moved}
	rec := func(w Write) RecordedWrite { return RecordedWrite{Table: "Events", Write: w, Charge: events.Charge(w)} }
	calls := []Call{
		{Function: "receiver", Service: "DynamoDB", Operation: "PutItem", Writes: []RecordedWrite{rec(put)}},
		{Function: "receiver", Service: "SQS", Operation: "SendMessage", Chunks: 1},
		{Function: "processor", Service: "DynamoDB", Operation: "BatchGetItem", Reads: []RecordedRead{
			{Target: "Events", Key: "pk=e1", Size: 5000, Units: 2},
			{Target: "Mirror", Key: "pk=sub_1", Size: 100, Units: 1},
			{Target: "Events", Key: "pk=payload#e1", Size: 3000, Units: 1},
		}},
		{Function: "processor", Service: "DynamoDB", Operation: "TransactWriteItems", Writes: []RecordedWrite{rec(commit)}},
		{Function: "processor", Service: "DynamoDB", Operation: "TransactWriteItems", Writes: []RecordedWrite{rec(cancelled)}},
	}
	compared := []Call{{Function: "reconciler", Service: "DynamoDB", Operation: "BatchGetItem", Reads: []RecordedRead{
		{Target: "Events", Key: "pk=e1", Units: 0.5},
		{Target: "Events", Key: "pk=someone_else", Units: 0.5},
	}}}
	sc := (&meter{}).scenarioCost(calls, compared, 1.2)

	var got []string
	for _, st := range sc.Steps {
		got = append(got, fmt.Sprintf("%d %s %s %s wru=%d idx=%v rru=%v bytes=%d/%d %s", st.N, st.Function, st.Operation, st.Table, st.WRU, st.Index, st.RRU, st.Before, st.After, st.Note))
	}
	want := []string{
		fmt.Sprintf("1 receiver PutItem Events wru=1 idx=map[by_stage:1] rru=0 bytes=0/%d ", ItemSize(base)),
		"2 processor BatchGetItem Events wru=0 idx=map[] rru=3 bytes=8000/0 ",
		"2 processor BatchGetItem Mirror wru=0 idx=map[] rru=1 bytes=100/0 ",
		fmt.Sprintf("3 processor TransactWriteItems Events wru=2 idx=map[by_stage:2] rru=0 bytes=%d/%d ", ItemSize(base), ItemSize(moved)),
		fmt.Sprintf("4 processor TransactWriteItems Events wru=1 idx=map[] rru=0 bytes=%d/%d cancelled transaction: billed once per item (assumption)", ItemSize(base), ItemSize(moved)),
		"5 reconciler BatchGetItem Events wru=0 idx=map[] rru=0.6 bytes=0/0 × 1.2 scheduled runs",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got steps\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	// 1 + 1 (the put and its index entry) + 2 + 2 (the commit, twice,
	// and its index key's delete and put) + 1 (the cancelled item).
	if sc.WRU() != 7 || !near(sc.RRU(), 4.6) || sc.IndexWRU()["by_stage"] != 3 || len(sc.IndexWRU()) != 1 {
		t.Errorf("got %d WRU, %v RRU, index %v; want 7, 4.6, by_stage 3", sc.WRU(), sc.RRU(), sc.IndexWRU())
	}
	if sc.Steps[0].Key != "pk=e1" {
		t.Errorf("the put's key: got %q, want pk=e1", sc.Steps[0].Key)
	}
	if c := calls[3]; c.WriteUnits() != 4 || calls[2].ReadUnits() != 4 {
		t.Errorf("the calls' units: got %d WRU and %v RRU, want 4 and 4", c.WriteUnits(), calls[2].ReadUnits())
	}
}

// What ties add a million events: the tie's units beyond a new event's,
// in dollars with the processor's wait, at the share of events that tie;
// and the reads of Stripe's API.
func TestTieCostIsTheTiesUnitsBeyondANewEvents(t *testing.T) {
	steps := func(wru int, rru float64) *ScenarioCost {
		return &ScenarioCost{Steps: []Step{{WRU: wru - 1, Index: map[string]int{"x": 1}}, {RRU: rru}}}
	}
	rep := &Report{
		TieRate:    0.2,
		TieReads:   map[string]int{Small.Name: 1},
		TieWaitUSD: 0.000004,
		Scenarios: map[string]*ScenarioCost{
			label(ScenarioTie, Small): steps(18, 3.5),
			label(ScenarioNew, Small): steps(13, 2.5),
		},
	}
	wru, rru, usd, reads := rep.TieCost(Small)
	// 5 WRU × $0.625/M + 1 RRU × $0.125/M + $0.000004 a tie = $0.00000725
	// a tie; 200,000 ties a million events: $1.45.
	if wru != 5 || rru != 1 || !near(usd, 1.45) || reads != 200_000 {
		t.Errorf("got %d WRU, %v RRU, $%v, %v reads; want 5, 1, $1.45, 200000", wru, rru, usd, reads)
	}
}

// A write request's items, each on a table of the schema: a transaction's
// every part, a batch's puts and deletes, a put's key from its item; reads
// and tables the schema lacks are not writes to price.
func TestAWriteRequestNamesItsItems(t *testing.T) {
	r := &Recorder{tables: map[string]*Table{"p-Events": events}}
	item := map[string]types.AttributeValue{"pk": s("e1"), "state": s("received")}
	key := map[string]types.AttributeValue{"pk": s("e2")}
	tx := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("p-Events"), Item: item}},
		{Update: &types.Update{TableName: aws.String("p-Events"), Key: key, UpdateExpression: aws.String("SET #s = :s")}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String("p-Events"), Key: key}},
		{Delete: &types.Delete{TableName: aws.String("p-Other"), Key: key}},
	}}
	targets, transactional, isWrite := r.targets(tx)
	if !isWrite || !transactional || len(targets) != 3 {
		t.Fatalf("a transaction: got %d targets (transactional %t, write %t), want 3 of the schema's table", len(targets), transactional, isWrite)
	}
	var kinds []WriteKind
	for _, tg := range targets {
		kinds = append(kinds, tg.kind)
	}
	if !slices.Equal(kinds, []WriteKind{Put, Update, ConditionCheck}) {
		t.Errorf("got kinds %v, want Put, Update, ConditionCheck", kinds)
	}
	if PartitionValue("pk", targets[0].key) != "pk=e1" || len(targets[0].key) != 1 || aws.ToString(targets[1].upd.expr) != "SET #s = :s" {
		t.Errorf("got the put's key %v and the update's expression %v; want pk=e1 alone and SET #s = :s", targets[0].key, targets[1].upd.expr)
	}
	batch := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"p-Events": {
		{PutRequest: &types.PutRequest{Item: item}}, {DeleteRequest: &types.DeleteRequest{Key: key}},
	}}}
	if targets, transactional, isWrite := r.targets(batch); !isWrite || transactional || len(targets) != 2 || targets[1].kind != Delete {
		t.Errorf("a batch: got %v (transactional %t, write %t), want a put and a delete, not a transaction", targets, transactional, isWrite)
	}
	if _, _, isWrite := r.targets(&dynamodb.GetItemInput{TableName: aws.String("p-Events"), Key: key}); isWrite {
		t.Error("a GetItem: got a write")
	}
	if targets, _, isWrite := r.targets(&dynamodb.PutItemInput{TableName: aws.String("p-Other"), Item: item}); !isWrite || len(targets) != 0 {
		t.Errorf("a put on another table: got %v (write %t), want a write with nothing to price", targets, isWrite)
	}
}

// A write is billed when it applied, when its condition failed and when
// its transaction was cancelled; refused (validation, throttling), it is
// not.
func TestAWriteIsBilledUnlessRefused(t *testing.T) {
	for _, tc := range []struct {
		err    error
		want   Outcome
		billed bool
	}{
		{nil, Applied, true},
		{fmt.Errorf("put: %w", &types.ConditionalCheckFailedException{}), ConditionFailed, true},
		{fmt.Errorf("commit: %w", &types.TransactionCanceledException{}), Cancelled, true},
		{fmt.Errorf("put: %w", &types.ProvisionedThroughputExceededException{}), "", false},
		{errors.New("validation"), "", false},
	} {
		if got, billed := outcomeOf(tc.err); got != tc.want || billed != tc.billed {
			t.Errorf("%v: got %q (billed %t), want %q (billed %t)", tc.err, got, billed, tc.want, tc.billed)
		}
	}
}

// The custom metrics priced each month: each distinct one a line
// declared, sorted, GitHub's and Connect's scenarios apart (the fixed cost
// is a Stripe-only deployment's), the bridge's on their own.
func TestMetricsAreEachDistinctOneOutsideOtherProviders(t *testing.T) {
	lines := []LogLine{
		{Label: label(ScenarioNew, Small), Function: "receiver", Metrics: []string{"ns|received|", "ns|duplicate|"}},
		{Label: label(ScenarioNew, Large), Function: "processor", Metrics: []string{"ns|processed|", "ns|received|"}},
		{Label: ScenarioGitHubNew, Function: "receiver", Metrics: []string{"ns|github_only|"}},
		{Label: ScenarioConnectFirst, Function: "receiver", Metrics: []string{"ns|connect_only|"}},
		{Label: label(ScenarioEventBridge, Small), Function: "bridge", Metrics: []string{"ns|bridged|", "ns|received|"}},
	}
	metrics, bridge := metricsOf(lines)
	if !slices.Equal(metrics, []string{"ns|duplicate|", "ns|processed|", "ns|received|"}) {
		t.Errorf("got metrics %v, want duplicate, processed, received", metrics)
	}
	if !slices.Equal(bridge, []string{"ns|bridged|", "ns|received|"}) {
		t.Errorf("got the bridge's %v, want bridged, received", bridge)
	}
}

// The log bytes an event: each line about it whole, the processor's
// batch lines shared by the batch.
func TestLogBytesShareTheBatchLines(t *testing.T) {
	lines := []LogLine{
		{Function: "receiver", Bytes: 200, AboutEvent: true},
		{Function: "receiver", Bytes: 50},
		{Function: "processor", Bytes: 300, AboutEvent: true},
		{Function: "processor", Bytes: 1000},
	}
	app, per := appLogBytes(lines, 10)
	if app != 650 || per["receiver"] != 250 || per["processor"] != 400 {
		t.Errorf("got %v bytes (%v), want 650: receiver 250, processor 300 + 1000/10", app, per)
	}
	if got := total([]MoneyLine{{USD: 1.25}, {USD: 0.5}, {USD: 0}}); got != 1.75 {
		t.Errorf("total: got %v, want 1.75", got)
	}
}

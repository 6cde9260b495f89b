package cost

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestConsumedCapacityIsAskedOnACopy: the request the code made is left as
// it was; the one sent asks for INDEXES.
func TestConsumedCapacityIsAskedOnACopy(t *testing.T) {
	in := &dynamodb.PutItemInput{TableName: aws.String("t-EventsTable")}
	got, ok := withConsumedCapacity(in).(*dynamodb.PutItemInput)
	if !ok || got == in || got.ReturnConsumedCapacity != types.ReturnConsumedCapacityIndexes || aws.ToString(got.TableName) != "t-EventsTable" {
		t.Fatalf("got %+v, want a copy asking for INDEXES", got)
	}
	if in.ReturnConsumedCapacity != "" {
		t.Errorf("the code's own input was changed: %q", in.ReturnConsumedCapacity)
	}
	if got := withConsumedCapacity("not a request"); got != "not a request" {
		t.Errorf("a value without the field: got %v, want it as it was", got)
	}
}

// TestConsumedCapacityIsSummedByTarget: a transaction's answer, one
// ConsumedCapacity per table with its indexes, is read by logical target
// and summed per scenario beside the meter's own units.
func TestConsumedCapacityIsSummedByTarget(t *testing.T) {
	events := &Table{LogicalID: "EventsTable"}
	r := &Recorder{tables: map[string]*Table{"t-EventsTable": events}}
	out := &dynamodb.TransactWriteItemsOutput{ConsumedCapacity: []types.ConsumedCapacity{{
		TableName: aws.String("t-EventsTable"), CapacityUnits: aws.Float64(6),
		Table:                  &types.Capacity{CapacityUnits: aws.Float64(4)},
		GlobalSecondaryIndexes: map[string]types.Capacity{"an_index": {CapacityUnits: aws.Float64(2)}},
	}, {TableName: aws.String("another-table"), CapacityUnits: aws.Float64(9)}}}
	got := r.consumedOf(out)
	slices.SortFunc(got, func(a, b Capacity) int { return len(a.Target) - len(b.Target) })
	if want := []Capacity{{"EventsTable", 4}, {"EventsTable/an_index", 2}}; !slices.Equal(got, want) {
		t.Fatalf("consumedOf: got %v, want %v (tables the meter does not know are left out)", got, want)
	}
	total := &dynamodb.GetItemOutput{ConsumedCapacity: &types.ConsumedCapacity{TableName: aws.String("t-EventsTable"), CapacityUnits: aws.Float64(0.5)}}
	if got := r.consumedOf(total); !slices.Equal(got, []Capacity{{"EventsTable", 0.5}}) {
		t.Errorf("a TOTAL answer: got %v, want its whole on the table", got)
	}

	calls := []Call{
		{Service: "DynamoDB", Writes: []RecordedWrite{{Table: "EventsTable", Charge: Charge{Table: 2, Index: map[string]int{"an_index": 1}}}},
			Consumed: []Capacity{{"EventsTable", 4}, {"EventsTable/an_index", 2}}},
		{Service: "DynamoDB", Reads: []RecordedRead{{Target: "EventsTable", Units: 0.5}}, Consumed: []Capacity{{"EventsTable", 0.5}}},
		{Service: "DynamoDB", Err: "ConditionalCheckFailedException"},
		{Service: "SQS"},
	}
	c := consumption("new event", calls)
	if c.Requests != 2 || c.Failed != 1 || c.Meter["EventsTable"] != 2.5 || c.DynamoDB["EventsTable"] != 4.5 || c.Meter["EventsTable/an_index"] != 1 {
		t.Errorf("got %+v", c)
	}
	if m, d := c.Total(); m != 3.5 || d != 6.5 {
		t.Errorf("totals: got meter %v, reported %v; want 3.5 and 6.5", m, d)
	}
}

// TestAskingForConsumedCapacityChangesNothing: a run that asks every
// request for its ConsumedCapacity writes and reads what a run that does
// not ask does, so -consumed checks the figures make cost prints; and it
// compares every scenario. The emulator's own figures are not DynamoDB's
// (the package doc): only that it reported some is asserted.
func TestAskingForConsumedCapacityChangesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	plain := measured(t)
	asked, err := Measure(ctx, Options{Endpoints: testenv.Endpoints(t), Template: testenv.TemplatePath(t), Samples: 3, Consumed: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Consumed) != 0 {
		t.Errorf("a plain run compared %d scenarios, want none", len(plain.Consumed))
	}
	for _, size := range plain.Sizes {
		for _, sc := range Scenarios {
			p, a := plain.Scenario(sc, size), asked.Scenario(sc, size)
			if p.WRU() != a.WRU() || p.RRU() != a.RRU() {
				t.Errorf("%s, %s: got %d WRU and %v RRU asking for capacity, %d and %v without", sc, size.Name, a.WRU(), a.RRU(), p.WRU(), p.RRU())
			}
		}
	}
	if want := len(Scenarios)*len(asked.Sizes) + 1; len(asked.Consumed) != want {
		t.Fatalf("compared %d scenarios, want %d (each scenario and size, and the reconciler's run)", len(asked.Consumed), want)
	}
	first := asked.Consumed[0]
	if meter, reported := first.Total(); first.Label != label(ScenarioNew, Small) || first.Requests == 0 || meter == 0 || reported == 0 {
		t.Errorf("%s: %d requests, meter %v, reported %v; want the new event's requests, each side above zero", first.Label, first.Requests, meter, reported)
	}
}

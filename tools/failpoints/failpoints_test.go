package failpoints

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testenv"
)

// TestEveryWorldsFaultFreeRunIsDiscovered runs each world once without a
// fault (the enumeration's discovery): every world's event ends processed,
// and its recorded calls hold the pipeline's writes by site, each a
// failure point. A provider in event.Providers is a world without an edit
// here.
func TestEveryWorldsFaultFreeRunIsDiscovered(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Options{Endpoints: testenv.Endpoints(t), Root: root, DiscoverOnly: true, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range rep.Worlds {
		names = append(names, w.Name)
	}
	for _, p := range event.Providers {
		if !slices.Contains(names, p) {
			t.Errorf("provider %s is no world of the enumeration (worlds: %v)", p, names)
		}
	}
	want := []string{
		"receiver dynamodb PutItem Events.record",
		"receiver dynamodb PutItem Events.payload",
		"receiver sqs SendMessage WebhookQueue",
		"processor dynamodb UpdateItem Events.record →processing",
		"processor dynamodb GetItem Events.payload",
		"event-source sqs DeleteMessageBatch WebhookQueue",
		"reconciler dynamodb Query Events.unprocessed/pending",
	}
	for _, d := range rep.Discovery {
		if d.Outcome != OutcomeProcessed || !d.OK() {
			t.Errorf("%s: the fault-free run ended %q (%s %s)", d.World.Name, d.Outcome, d.Why, d.Err)
		}
		var got []string
		for _, s := range sites(d.Calls) {
			got = append(got, s.String())
		}
		wantHere := want
		if d.World.Bridge {
			// The bridge ingests what the receiver would, then records the
			// connected account; the event source deletes its message.
			wantHere = nil
			for _, w := range want {
				wantHere = append(wantHere, strings.Replace(w, "receiver ", "bridge ", 1))
			}
			wantHere = append(wantHere, "bridge dynamodb PutItem Events.connect_account", "event-source sqs DeleteMessageBatch IngressQueue")
		}
		for _, w := range wantHere {
			if !slices.Contains(got, w) {
				t.Errorf("%s: no call %q among the failure points discovered:\n  %s", d.World.Name, w, strings.Join(got, "\n  "))
			}
		}
		commit := slices.ContainsFunc(got, func(s string) bool {
			return strings.HasPrefix(s, "processor dynamodb TransactWriteItems") && strings.HasSuffix(s, "Events.record →processed")
		})
		if !commit {
			t.Errorf("%s: no commit among the failure points discovered", d.World.Name)
		}
	}
}

// TestACallIsNamedByItsShape: a call's site is read from its request, the
// same for every event and every case.
func TestACallIsNamedByItsShape(t *testing.T) {
	for _, tc := range []struct {
		op, body, want string
	}{
		{"PutItem", `{"TableName":"fpx-EventsTable","Item":{"pk":{"S":"stripe#evt_1"},"lane":{"S":"stripe#pending#03"}}}`, "PutItem Events.record"},
		{"PutItem", `{"TableName":"fpx-EventsTable","Item":{"pk":{"S":"payload#github#g"},"payload":{"B":"eA=="}}}`, "PutItem Events.payload"},
		{"UpdateItem", `{"TableName":"fpx-EventsTable","Key":{"pk":{"S":"shopify#1"}},"UpdateExpression":"SET #st = :status","ExpressionAttributeValues":{":status":{"S":"failed_permanent"}}}`, "UpdateItem Events.record →failed_permanent"},
		{"Query", `{"TableName":"fpx-EventsTable","IndexName":"unprocessed","ExpressionAttributeValues":{":k":{"S":"stripe#pending#07"},":lo":{"N":"0"}}}`, "Query Events.unprocessed/pending"},
		{"Query", `{"TableName":"fpx-EventsTable","IndexName":"by_day","ExpressionAttributeValues":{":k":{"S":"stripe#2026-12-01#07"}}}`, "Query Events.by_day"},
		{"SendMessage", `{"QueueUrl":"http://127.0.0.1:1/000000000000/fpx-WebhookQueue"}`, "SendMessage WebhookQueue"},
		{"GetParameter", `{"Name":"/webhook-inbox/dev/failpoints/stripe/webhook-secrets"}`, "GetParameter stripe/webhook-secrets"},
		{"BatchGetItem", `{"RequestItems":{"fpx-EventsTable":{"Keys":[{"pk":{"S":"github#a"}},{"pk":{"S":"payload#github#a"}}]}}}`, "BatchGetItem Events.payload + Events.record"},
	} {
		if got := awsCall("fpx", tc.op, []byte(tc.body)); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.op, tc.body, got, tc.want)
		}
	}
	// Every shape is some site's: the sites of a world meet 5xx,
	// throttling and no answer alike.
	shapes := map[string]bool{}
	for _, call := range []string{"PutItem Events.record", "PutItem Events.payload", "SendMessage WebhookQueue", "GetItem Events.payload",
		"UpdateItem Events.record →processing", "Query Events.unprocessed", "DeleteMessageBatch WebhookQueue", "GetItem Events.checkpoint"} {
		shapes[string(failShape(Site{Function: "f", Service: "dynamodb", Call: call}))] = true
	}
	if len(shapes) != 3 {
		t.Errorf("fail shapes of 8 sites: got %v, want all three", shapes)
	}
}

// TestPairsAreTheCallsAfterTheFirstFault: a pair's second fault is a call
// the single fault's case made after it, its first occurrence there, each
// kind that applies; those on a site the fault-free run never called come
// apart (an error path).
func TestPairsAreTheCallsAfterTheFirstFault(t *testing.T) {
	w := World{Name: "w"}
	claim := Site{Function: functionProcessor, Service: "dynamodb", Call: "UpdateItem Events.record →processing"}
	fail := Site{Function: functionProcessor, Service: "dynamodb", Call: "UpdateItem Events.record →failed"}
	first := Fault{Point: Point{Site: claim, N: 1}, Kind: Fail}
	single := Result{Spec: Spec{World: w, Faults: []Fault{first}}, Calls: []Call{
		{Point: Point{Site: claim, N: 1}, At: time.Second, Injected: Fail},
		{Point: Point{Site: claim, N: 2}, At: 2 * time.Second},
		{Point: Point{Site: fail, N: 1}, At: 3 * time.Second},
		{Point: Point{Site: fail, N: 2}, At: 4 * time.Second},
	}}
	faultPath, others := pairs([]Result{single}, map[string]map[Site]bool{"w": {claim: true}})
	if len(others) != 3 || len(faultPath) != 3 {
		t.Fatalf("got %d pairs on known sites and %d on the fault's path, want 3 and 3 (fail, lost, kill each)", len(others), len(faultPath))
	}
	for _, p := range append(others, faultPath...) {
		if p.Faults[0] != first || p.Faults[1].N != map[Site]int{claim: 2, fail: 1}[p.Faults[1].Site] {
			t.Errorf("pair %v: want the first fault, then the first call of a site after it", p.Faults)
		}
	}
}

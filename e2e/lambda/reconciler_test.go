package lambda

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// TestReconcilerBinaryAnswersTheScheduleAsLambdaRunsIt invokes the real
// reconciler binary as EventBridge Scheduler does: an event Stripe lists
// but the store never got is ingested and queued, the run's answer is a
// success, a bad input is the function's error, and every AWS call is one
// its policy allows (and every grant is used).
func TestReconcilerBinaryAnswersTheScheduleAsLambdaRunsIt(t *testing.T) {
	s := newSetupWith(t, underKey, nil)
	ctx := context.Background()
	api := stripefake.New()
	t.Cleanup(api.Close)
	api.RequireKey(s.apiKey)
	body, err := stripefixture.Build(
		"invoice.paid",
		stripefixture.Options{ID: "evt_rie_missing_" + randomHex(4), Created: time.Now().Add(-5 * time.Minute).Unix()},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Add(body); err != nil {
		t.Fatal(err)
	}
	env, _ := event.DecodeEnvelope(body)
	fn := start(t, hostBootstrap(t, reconcilerID), s.env(t, reconcilerID, map[string]string{"STRIPE_API_BASE": api.URL}))

	// The schedule's default payload.
	status, out := fn.call(t, []byte(`{}`))
	if status != http.StatusOK || strings.TrimSpace(string(out)) != "null" {
		t.Fatalf("scheduled run: got %d %s, want 200 and the handler's empty success (null)\n%s", status, out, fn.out.String())
	}
	// Init reads nothing: the run reads its checkpoints first, and the API
	// key when it first lists.
	calls := s.rec.Calls(0)
	if len(calls) == 0 || calls[0].Service == "ssm" || secretReads(calls) != 1 {
		t.Errorf("AWS calls of the cold start and first run: got %v, want the key read once, by the run, not first", names(calls))
	}
	lists := api.Lists()
	if len(lists) == 0 {
		t.Fatal("the run listed nothing from Stripe's API")
	}
	events := &store.Events{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("EventsTable")}
	rec, err := events.Get(ctx, event.ProviderStripe, env.ID)
	if err != nil || rec.Source != event.SourceReconciler || rec.Status != event.StatusReceived {
		t.Fatalf("the missing event's record: got %s from %s (%v), want received from reconciler", rec.Status, rec.Source, err)
	}
	msg := receive(t, s, s.stack.Queue("WebhookQueue").URL)
	var ptr event.Pointer
	if err := json.Unmarshal([]byte(*msg.Body), &ptr); err != nil || ptr.ID != env.ID {
		t.Errorf("queued pointer: got %s (%v), want one to %s", *msg.Body, err, env.ID)
	}

	// A one-off sweep with a bad duration: the invocation is an error, as
	// Lambda reports it, and nothing is listed.
	before := len(api.Lists())
	status, out = fn.call(t, []byte(`{"since":"yesterday"}`))
	var answer map[string]any
	if status != http.StatusOK || json.Unmarshal(out, &answer) != nil || answer["errorType"] == nil ||
		!strings.Contains(answer["errorMessage"].(string), "since") {
		t.Errorf("bad input: got %d %s, want the function's error naming since", status, out)
	}
	if after := len(api.Lists()); after != before {
		t.Errorf("bad input listed %d pages, want none", after-before)
	}

	// The first run read the API key; the second invocation did not again.
	if reads := secretReads(s.rec.Calls(0)); reads != 1 {
		t.Errorf("secret reads over two invocations: got %d, want 1 (on first need, kept)", reads)
	}
	auditOnce(t, s, fn, api)
	checkLeastPrivilege(t, s.stack.Template, s.stack.Resources, reconcilerID, s.rec.Calls(0))
}

// auditOnce runs the template's Audit schedule through the reconciler
// binary fn, with Stripe's stand-in api listing one subscription the
// mirror has never seen: the audit reads the mirror (a batched read, and
// a scan for what Stripe no longer has, since the run lists it whole) and
// writes the subscription as a repair, so that every grant of the audit's
// statement is used and checked by checkLeastPrivilege.
func auditOnce(t *testing.T, s *setup, fn *emulator, api *stripefake.Server) {
	t.Helper()
	body, err := stripefixture.Build("customer.subscription.updated", stripefixture.Options{
		ObjectID: "sub_rie_audit_" + randomHex(4), Customer: "cus_rie_audit_" + randomHex(4), Status: "active",
	})
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	if err := api.PutObject("", ev.Data.Object); err != nil {
		t.Fatal(err)
	}
	var sub struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(ev.Data.Object, &sub)
	status, out := fn.call(t, []byte(reconcilerboot.AuditInput))
	if status != http.StatusOK || strings.TrimSpace(string(out)) != "null" {
		t.Fatalf("audit run: got %d %s, want 200 and null\n%s", status, out, fn.out.String())
	}
	mr := &mirror.Reader{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("MirrorTable")}
	snap, err := mr.Object(context.Background(), sub.ID)
	if err != nil || snap.SettledBy != mirror.SourceAudit {
		t.Fatalf("the audit's repair of %s: got %+v (%v), want a snapshot settled by the audit\n%s", sub.ID, snap, err, fn.out.String())
	}
	// The run is kept for the console and inboxctl status, with its repair,
	// through the function's own grants on the events table.
	runs, err := (&store.Runs{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("EventsTable")}).RecentAudits(context.Background(), event.ProviderStripe)
	if err != nil || len(runs) == 0 || !slices.ContainsFunc(runs[0].Repairs, func(r store.AuditRepair) bool { return r.ID == sub.ID }) ||
		strings.Contains(fn.out.String(), "not_recorded") {
		t.Fatalf("the audit's kept run: got %+v (%v), want the run with its repair of %s\n%s", runs, err, sub.ID, fn.out.String())
	}
}

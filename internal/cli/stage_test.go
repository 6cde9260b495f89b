package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/queue"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefixture"
)

// deployStage creates, in the emulator's CloudFormation, a stack named as
// a deployed stage's is, whose outputs name the world's resources: what
// `sam deploy` leaves behind, without the functions.
func deployStage(t *testing.T, w *world, outputs map[string]string) string {
	t.Helper()
	return deployStageWith(t, w, outputs, nil)
}

// deployStageWith is deployStage with the parameters the stack was
// deployed with.
func deployStageWith(t *testing.T, w *world, outputs, params map[string]string) string {
	t.Helper()
	var b [3]byte
	_, _ = rand.Read(b[:])
	stage := "t" + hex.EncodeToString(b[:])
	outs := map[string]any{}
	for k, v := range outputs {
		outs[k] = map[string]any{"Value": v}
	}
	declared := map[string]any{}
	var values []cftypes.Parameter
	for k, v := range params {
		declared[k] = map[string]any{"Type": "String"}
		values = append(values, cftypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	doc := map[string]any{
		"AWSTemplateFormatVersion": "2010-09-09",
		"Resources":                map[string]any{"Placeholder": map[string]any{"Type": "AWS::SQS::Queue"}},
		"Outputs":                  outs,
	}
	if len(declared) > 0 {
		doc["Parameters"] = declared
	}
	tmpl, _ := json.Marshal(doc)
	if _, err := cloudformation.NewFromConfig(w.s.AWS).CreateStack(context.Background(), &cloudformation.CreateStackInput{
		StackName: aws.String(StackName(stage)), TemplateBody: aws.String(string(tmpl)), Parameters: values,
	}); err != nil {
		t.Fatal(err)
	}
	return stage
}

func TestStageResolvesResourcesFromTheStacksOutputs(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	stage := deployStage(t, w, map[string]string{
		"EventsTableName":    w.s.Table("EventsTable"),
		"MirrorTableName":    w.s.Table("MirrorTable"),
		"QueueUrl":           w.s.Queue("WebhookQueue").URL,
		"DeadLetterQueueUrl": w.s.Queue("DeadLetterQueue").URL,
		"WebhookUrl":         "http://127.0.0.1:1/webhooks/stripe",
	})
	b := body(t, "invoice.paid", stripefixture.Options{ID: "evt_staged", Customer: "cus_staged", Created: time.Now().Unix()})
	w.store(b, event.SourceWebhook, event.StatusFailed, time.Now())
	if _, err := w.s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(w.s.Queue("DeadLetterQueue").URL), MessageBody: aws.String(pointerBody(t, "evt_staged"))}); err != nil {
		t.Fatal(err)
	}

	c := w.cli()
	c.now = time.Now()
	// No prefix and no environment naming the resources: only the stack's
	// outputs can lead to them. A stray local EVENTS_TABLE must not win
	// over an explicit --stage.
	c.prefix = ""
	c.env = map[string]string{"AWS_REGION": "us-east-1", "EVENTS_TABLE": "not-this-one"}
	endpoint := w.cli().env["AWS_ENDPOINT_URL"]
	stageArgs := func(args ...string) []string {
		return append([]string{"--stage", stage, "--endpoint", endpoint}, args...)
	}

	r := c.run(ctx, stageArgs("event", "evt_staged", "--json")...).must(t, 0)
	var ev EventJSON
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || ev.Status != "failed" {
		t.Fatalf("event via --stage: got %s (%v)", r.stdout, err)
	}
	r = c.run(ctx, stageArgs("events", "--status", "failed", "--json")...).must(t, 0)
	if !strings.Contains(r.stdout, "evt_staged") {
		t.Errorf("events via --stage: got %s", r.stdout)
	}
	r = c.run(ctx, stageArgs("dlq", "list", "--json")...).must(t, 0)
	if !strings.Contains(r.stdout, `"event_status": "failed"`) {
		t.Errorf("dlq list via --stage: got %s", r.stdout)
	}
	c.run(ctx, stageArgs("replay", "evt_staged")...).must(t, 0)
	var found bool
	for _, body := range bodies(t, w.s.SQS, w.s.Queue("WebhookQueue").URL) {
		if p, err := queue.Decode(body); err == nil && p.ID == "evt_staged" {
			found = true
		}
	}
	if !found {
		t.Error("replay via --stage did not enqueue to the stack's QueueUrl")
	}
	// send goes to the stack's WebhookUrl, and insists on a real secret.
	r = c.run(ctx, stageArgs("send", "invoice.paid")...).must(t, 2)
	if !strings.Contains(r.stderr, "STRIPE_WEBHOOK_SECRET") {
		t.Errorf("send via --stage without a secret: got %s", r.stderr)
	}
	r = c.run(ctx, stageArgs("send", "--dev", "invoice.paid")...).must(t, 2)
	if !strings.Contains(r.stderr, "--dev is the local stack's") {
		t.Errorf("send via --stage with the dev secret: got %s", r.stderr)
	}
	// A WEBHOOK_URL left in the shell does not win over --stage either.
	c.env["WEBHOOK_URL"] = "http://127.0.0.1:2/local"
	c.env["STRIPE_WEBHOOK_SECRET"] = "whsec_x"
	r = c.run(ctx, stageArgs("send", "invoice.paid")...).must(t, 1)
	if !strings.Contains(r.stderr, "127.0.0.1:1/webhooks/stripe") {
		t.Errorf("send via --stage: got %s, want a POST to the stack's WebhookUrl", r.stderr)
	}
	delete(c.env, "WEBHOOK_URL")
	delete(c.env, "STRIPE_WEBHOOK_SECRET")

	// An explicit flag still wins over the stage.
	r = c.run(ctx, stageArgs("--events-table", "flag-table", "event", "evt_staged")...).must(t, 1)
	if !strings.Contains(r.stderr, "flag-table") {
		t.Errorf("--events-table with --stage: got %s", r.stderr)
	}
}

func TestStageErrorsSayWhatToDo(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	partial := deployStage(t, w, map[string]string{"EventsTableName": w.s.Table("EventsTable")})
	c := w.cli()
	c.prefix = ""
	endpoint := c.env["AWS_ENDPOINT_URL"]
	c.env = map[string]string{"AWS_REGION": "us-east-1"}

	r := c.run(ctx, "--stage", "nosuchstage", "--endpoint", endpoint, "event", "evt_1").must(t, 1)
	c.golden("stage_missing", r, endpoint, "ENDPOINT")
	r = c.run(ctx, "--stage", "Prod!", "--endpoint", endpoint, "event", "evt_1").must(t, 2)
	c.golden("stage_invalid", r, endpoint, "ENDPOINT")
	r = c.run(ctx, "--stage", partial, "--endpoint", endpoint, "object", "sub_1").must(t, 1)
	c.golden("stage_missing_output", r, partial, "STAGE", endpoint, "ENDPOINT")
}

// TestStageReconcileUsesTheStacksParameters: with --stage, reconcile reads
// the API key's parameter, the mode and the retention the stack was
// deployed with; a local test key in the environment does not win, and the
// stage's live key never goes to a STRIPE_API_BASE left in the shell.
func TestStageReconcileUsesTheStacksParameters(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	apiKey := "sk_live_stage_" + w.s.Prefix
	param := "/webhook-inbox/" + w.s.Prefix + "/stripe/api-key"
	if _, err := ssm.NewFromConfig(w.s.AWS).PutParameter(ctx, &ssm.PutParameterInput{
		Name: aws.String(param), Value: aws.String(apiKey), Type: ssmtypes.ParameterTypeSecureString,
	}); err != nil {
		t.Fatal(err)
	}
	fake := stripefake.New()
	defer fake.Close()
	fake.RequireKey(apiKey)
	lost := body(t, "invoice.paid", stripefixture.Options{ID: "evt_stage_lost", Created: time.Now().Add(-time.Hour).Unix(), Livemode: true})
	if err := fake.Add(lost); err != nil {
		t.Fatal(err)
	}
	// On rate(2 hours), a new deployment's first run starts two hours
	// back: the event of an hour ago is no history.
	stage := deployStageWith(t, w, map[string]string{
		"EventsTableName": w.s.Table("EventsTable"),
		"MirrorTableName": w.s.Table("MirrorTable"),
		"QueueUrl":        w.s.Queue("WebhookQueue").URL,
	}, map[string]string{"ApiKeyParameter": param, "StripeMode": "live", "RetentionDays": "7", "ReconcileRate": "rate(2 hours)"})

	// A local stand-in left in the shell after `make dev`: it records the
	// key of every request it gets.
	var leaked []string
	var mu sync.Mutex
	standIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, `{"error":{"message":"stand-in"}}`, http.StatusInternalServerError)
	}))
	defer standIn.Close()

	c := w.cli()
	c.t = t
	c.prefix = ""
	endpoint := c.env["AWS_ENDPOINT_URL"]
	c.env = map[string]string{"AWS_REGION": "us-east-1", "STRIPE_API_BASE": standIn.URL, "STRIPE_API_KEY": "sk_test_local", "STRIPE_MODE": "test"}
	// Stripe's API, played by the fake; only a test can point a stage there.
	c.stageAPIBase = fake.URL
	r := c.run(ctx, "--stage", stage, "--endpoint", endpoint, "reconcile", "--since", "24h", "--json")
	mu.Lock()
	if len(leaked) != 0 {
		t.Errorf("the shell's STRIPE_API_BASE got %d requests (Authorization %q), want none: --stage ignores local overrides", len(leaked), leaked[0])
	}
	mu.Unlock()
	r.must(t, 0)
	var got ReconcileJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Missing != 1 {
		t.Fatalf("reconcile via --stage: got %s (%v), want the live event found missing", r.stdout, err)
	}
	rec, err := w.events.Get(ctx, "stripe", "evt_stage_lost")
	if err != nil || rec.Source != event.SourceReconciler || !rec.Livemode {
		t.Fatalf("record: got %+v (%v)", rec, err)
	}
	// The stored TTL: the record as the table holds it, its TTL attribute
	// as the template names it.
	events, _ := w.s.Template.Resource("EventsTable")
	ttlAttr, _ := events.Properties["TimeToLiveSpecification"].(map[string]any)["AttributeName"].(string)
	item, err := w.s.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(w.s.Table("EventsTable")), ConsistentRead: aws.Bool(true),
		Key: map[string]dbtypes.AttributeValue{"pk": &dbtypes.AttributeValueMemberS{Value: "stripe#evt_stage_lost"}}})
	if err != nil {
		t.Fatal(err)
	}
	expires, ok := item.Item[ttlAttr].(*dbtypes.AttributeValueMemberN)
	if !ok {
		t.Fatalf("record without its TTL attribute %q: %v", ttlAttr, item.Item)
	}
	secs, _ := strconv.ParseInt(expires.Value, 10, 64)
	if days := time.Unix(secs, 0).Sub(rec.ReceivedAt).Hours() / 24; days < 6.9 || days > 7.1 {
		t.Errorf("record kept %.1f days, want the stage's RetentionDays (7)", days)
	}
}

// TestStageReachesAWSsOwnEndpoints: endpoints left in the shell by local
// work (the SDK's own variables, read from the process environment) do not
// apply to a deployed stage; --endpoint, typed for the run, does.
func TestStageReachesAWSsOwnEndpoints(t *testing.T) {
	const local = "http://127.0.0.1:4566"
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_SSM", "AWS_ENDPOINT_URL_CLOUDFORMATION"} {
		t.Setenv(k, local)
	}
	getenv := func(k string) string {
		return map[string]string{"AWS_ENDPOINT_URL": local, "AWS_REGION": "us-east-1"}[k]
	}
	endpoints := func(t *testing.T, a *app) map[string]string {
		t.Helper()
		cfg, err := a.aws(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{
			"DynamoDB":       aws.ToString(dynamodb.NewFromConfig(cfg).Options().BaseEndpoint),
			"SQS":            aws.ToString(sqs.NewFromConfig(cfg).Options().BaseEndpoint),
			"SSM":            aws.ToString(ssm.NewFromConfig(cfg).Options().BaseEndpoint),
			"CloudFormation": aws.ToString(cloudformation.NewFromConfig(cfg).Options().BaseEndpoint),
		}
	}
	t.Run("stage", func(t *testing.T) {
		for service, got := range endpoints(t, &app{getenv: getenv, stage: "prod"}) {
			if got != "" {
				t.Errorf("%s: endpoint %q, want AWS's own", service, got)
			}
		}
	})
	t.Run("stage with --endpoint", func(t *testing.T) {
		for service, got := range endpoints(t, &app{getenv: getenv, stage: "prod", endpoint: "https://vpce.example.com"}) {
			if got != "https://vpce.example.com" {
				t.Errorf("%s: endpoint %q, want --endpoint's", service, got)
			}
		}
	})
	t.Run("local", func(t *testing.T) {
		for service, got := range endpoints(t, &app{getenv: getenv}) {
			if got != local {
				t.Errorf("%s: endpoint %q, want the environment's %s", service, got, local)
			}
		}
	})
}

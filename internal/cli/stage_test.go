package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"regexp"
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

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// deployStage creates, in the emulator's CloudFormation, a stack named as
// a deployed stage's is, whose outputs name the world's resources: what
// `sam deploy` leaves behind, without the functions. It waits for the
// stack as `sam deploy` does: CloudFormation creates stacks asynchronously
// (LocalStack too; moto answers CreateStack with the stack complete).
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
	client := cloudformation.NewFromConfig(w.s.AWS)
	if _, err := client.CreateStack(context.Background(), &cloudformation.CreateStackInput{
		StackName: aws.String(StackName(stage)), TemplateBody: aws.String(string(tmpl)), Parameters: values,
	}); err != nil {
		t.Fatal(err)
	}
	if err := cloudformation.NewStackCreateCompleteWaiter(client, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	}).Wait(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(StackName(stage))}, time.Minute); err != nil {
		t.Fatalf("stack %s: %v", StackName(stage), err)
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
	stageArgs := func(args ...string) []string {
		return append(append([]string{"--stage", stage}, endpointFlags(t)...), args...)
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
	// These need CloudFormation only.
	endpoint := testenv.Endpoints(t).For("CloudFormation")
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
	c.env = map[string]string{"AWS_REGION": "us-east-1", "STRIPE_API_BASE": standIn.URL, "STRIPE_API_KEY": "sk_test_local", "STRIPE_MODE": "test"}
	// Stripe's API, played by the fake; only a test can point a stage there.
	c.stageAPIBase = fake.URL
	r := c.run(ctx, append(append([]string{"--stage", stage}, endpointFlags(t)...), "reconcile", "--since", "24h", "--json")...)
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

// unsettled is a CloudFormation endpoint in front of the emulator's that
// shows a stack as CloudFormation does while it works on it: for its first
// reads, in status during (without outputs, as a stack being created has
// none yet), then in status after, with the reason given, if any;
// otherwise the emulator's own answer.
type unsettled struct {
	*httptest.Server
	mu            sync.Mutex
	stack         string
	during, after string
	reason        string
	reads, early  int
}

func newUnsettled(t *testing.T, stack, during, after, reason string, early int) *unsettled {
	t.Helper()
	target, err := neturl.Parse(testenv.Endpoints(t).For("CloudFormation"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unsettled{stack: stack, during: during, after: after, reason: reason, early: early}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		req := resp.Request
		if req.Header.Get("X-Unsettled-Describe") == "" {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		u.mu.Lock()
		u.reads++
		n := u.reads
		u.mu.Unlock()
		body := string(b)
		status := regexp.MustCompile(`<StackStatus>[A-Z_]+</StackStatus>`)
		switch {
		case n <= u.early:
			body = status.ReplaceAllString(body, "<StackStatus>"+u.during+"</StackStatus>")
			body = regexp.MustCompile(`(?s)<Outputs>.*?</Outputs>`).ReplaceAllString(body, "")
		case u.after != "":
			after := "<StackStatus>" + u.after + "</StackStatus>"
			if u.reason != "" {
				after += "<StackStatusReason>" + u.reason + "</StackStatusReason>"
			}
			body = status.ReplaceAllString(body, after)
		}
		resp.Body = io.NopCloser(strings.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
		return nil
	}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if form, err := neturl.ParseQuery(string(b)); err == nil && form.Get("Action") == "DescribeStacks" && form.Get("StackName") == u.stack {
			r.Header.Set("X-Unsettled-Describe", "1")
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *unsettled) readCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reads
}

// TestStageWaitsForTheStackToSettle: a stage whose stack CloudFormation is
// still creating or updating is waited for, with the SDK's waiters, and
// read once it is done: its outputs do not exist before. A creation that
// fails says how; an update rolled back leaves the previous stack, which
// is used.
func TestStageWaitsForTheStackToSettle(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	b := body(t, "invoice.paid", stripefixture.Options{ID: "evt_settled", Customer: "cus_settled", Created: time.Now().Unix()})
	w.store(b, event.SourceWebhook, event.StatusProcessed, time.Now())
	for _, tc := range []struct {
		name, during, after, reason string
		code                        int
		stderr                      string
	}{
		{"created", "CREATE_IN_PROGRESS", "", "", 0, "is CREATE_IN_PROGRESS; waiting for it to finish"},
		{"updated", "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE", "", 0, "is UPDATE_IN_PROGRESS; waiting for it to finish"},
		{"update rolled back", "UPDATE_ROLLBACK_IN_PROGRESS", "UPDATE_ROLLBACK_COMPLETE", "Resource handler returned message: quota exceeded", 0,
			"was rolled back (Resource handler returned message: quota exceeded); using the stack as it is now"},
		{"creation failed", "CREATE_IN_PROGRESS", "ROLLBACK_COMPLETE", "The following resource(s) failed to create: [EventsTable]", 1,
			"ended ROLLBACK_COMPLETE (The following resource(s) failed to create: [EventsTable])"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stage := deployStage(t, w, map[string]string{"EventsTableName": w.s.Table("EventsTable")})
			cfn := newUnsettled(t, StackName(stage), tc.during, tc.after, tc.reason, 3)
			c := w.cli()
			c.prefix = ""
			c.env = map[string]string{"AWS_REGION": "us-east-1"}
			c.pollEvery = time.Millisecond
			r := c.run(ctx, append(append([]string{"--stage", stage}, endpointFlags(t)...), "--endpoint", "cloudformation="+cfn.URL, "event", "evt_settled", "--json")...).
				must(t, tc.code)
			if !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("stderr: got %q, want %q", r.stderr, tc.stderr)
			}
			if n := cfn.readCount(); n <= 3 {
				t.Errorf("read the stack %d times, want more than the 3 it was unsettled for", n)
			}
			if tc.code == 0 && !strings.Contains(r.stdout, `"status": "processed"`) {
				t.Errorf("stdout: %s, want the event read through the settled stack's outputs", r.stdout)
			}
		})
	}
}

// TestStageReachesAWSsOwnEndpoints: endpoints left in the shell by local
// work (the SDK's own variables, read from the process environment) do not
// apply to a deployed stage; --endpoint, typed for the run, does, for
// every service or for one.
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
			"SSM (secrets)":  secretsEndpoint(t, cfg),
		}
	}
	t.Run("stage", func(t *testing.T) {
		for service, got := range endpoints(t, &app{getenv: getenv, stage: "prod"}) {
			if got != "" && got != "https://ssm.us-east-1.amazonaws.com" {
				t.Errorf("%s: endpoint %q, want AWS's own", service, got)
			}
		}
	})
	t.Run("stage with --endpoint", func(t *testing.T) {
		for service, got := range endpoints(t, &app{getenv: getenv, stage: "prod", endpoints: []string{"https://vpce.example.com"}}) {
			if got != "https://vpce.example.com" {
				t.Errorf("%s: endpoint %q, want --endpoint's", service, got)
			}
		}
	})
	t.Run("stage with --endpoint for one service", func(t *testing.T) {
		got := endpoints(t, &app{getenv: getenv, stage: "prod", endpoints: []string{"https://vpce.example.com", "ssm=https://ssm-vpce.example.com"}})
		for service, want := range map[string]string{"DynamoDB": "https://vpce.example.com", "SSM": "https://ssm-vpce.example.com", "SSM (secrets)": "https://ssm-vpce.example.com"} {
			if got[service] != want {
				t.Errorf("%s: endpoint %q, want %q", service, got[service], want)
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

// TestLocalEndpointsPerService: a service's own endpoint wins over the
// general one, a flag over the environment at the same level, as the SDK's
// variables do in the functions: the shell make test-localstack sets
// (AWS_ENDPOINT_URL at LocalStack, AWS_ENDPOINT_URL_DYNAMODB at moto) works
// with --endpoint at LocalStack too.
func TestLocalEndpointsPerService(t *testing.T) {
	const ls, moto = "http://127.0.0.1:4566", "http://127.0.0.1:5000"
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags []string
		want  map[string]string
	}{
		{"environment", map[string]string{"AWS_ENDPOINT_URL": ls, "AWS_ENDPOINT_URL_DYNAMODB": moto}, nil,
			map[string]string{"DynamoDB": moto, "SQS": ls, "SSM": ls, "SSM (secrets)": ls, "CloudFormation": ls}},
		{"--endpoint beside a service's variable", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": moto}, []string{"http://127.0.0.1:9999"},
			map[string]string{"DynamoDB": moto, "SQS": "http://127.0.0.1:9999", "CloudFormation": "http://127.0.0.1:9999"}},
		{"--endpoint for one service over its variable", map[string]string{"AWS_ENDPOINT_URL": ls, "AWS_ENDPOINT_URL_DYNAMODB": moto}, []string{"DynamoDB=http://127.0.0.1:7777"},
			map[string]string{"DynamoDB": "http://127.0.0.1:7777", "SQS": ls}},
		{"the local stack by default", map[string]string{}, []string{"ssm=" + moto},
			map[string]string{"DynamoDB": LocalEndpoint, "SSM": moto, "SSM (secrets)": moto}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The process says otherwise: inboxctl reads its settings
			// through getenv, all of them.
			t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.9:9")
			t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.8:8")
			tc.env["AWS_REGION"] = "us-east-1"
			a := &app{getenv: func(k string) string { return tc.env[k] }, endpoints: tc.flags}
			cfg, err := a.aws(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{
				"DynamoDB":       aws.ToString(dynamodb.NewFromConfig(cfg).Options().BaseEndpoint),
				"SQS":            aws.ToString(sqs.NewFromConfig(cfg).Options().BaseEndpoint),
				"SSM":            aws.ToString(ssm.NewFromConfig(cfg).Options().BaseEndpoint),
				"CloudFormation": aws.ToString(cloudformation.NewFromConfig(cfg).Options().BaseEndpoint),
				"SSM (secrets)":  secretsEndpoint(t, cfg),
			}
			for service, want := range tc.want {
				if got[service] != want {
					t.Errorf("%s: endpoint %q, want %q", service, got[service], want)
				}
			}
		})
	}
}

func TestEndpointFlagErrors(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"lambda=http://127.0.0.1:1", `no service "lambda"`},
		{"dynamodb=localhost:5000", "is not an http(s) URL"},
		{"not a url", "is not an http(s) URL"},
	} {
		a := &app{getenv: func(string) string { return "" }, endpoints: []string{tc.flag}}
		_, err := a.aws(context.Background())
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--endpoint %s: got %v, want a usage error saying %q", tc.flag, err, tc.want)
		}
	}
	a := &app{getenv: func(string) string { return "" }, endpoints: []string{"sqs=http://a:1", "SQS=http://b:2"}}
	if _, err := a.aws(context.Background()); err == nil || !strings.Contains(err.Error(), "given twice for sqs") {
		t.Errorf("two endpoints for SQS: got %v", err)
	}
}

// secretsEndpoint is where package secrets' client (the reconciler's, for
// the API key) sends a GetParameter made with cfg.
func secretsEndpoint(t *testing.T, cfg aws.Config) string {
	t.Helper()
	var got string
	cfg.HTTPClient = &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		got = r.URL.Scheme + "://" + r.URL.Host
		return &http.Response{
			StatusCode: 200,
			Header:     http.Header{},
			Body:       io.NopCloser(strings.NewReader(`{"Parameter":{"Type":"SecureString","Value":"v"}}`)),
		}, nil
	})}
	cfg.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
	})
	if _, err := secrets.NewClient(cfg).GetParameter(context.Background(), "/p"); err != nil {
		t.Fatal(err)
	}
	return got
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

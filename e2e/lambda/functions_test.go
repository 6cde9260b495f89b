package lambda

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// setup is a deployment of the template on the AWS emulator, as the
// functions see it: tables and queues provisioned from template.yaml, the
// secrets in Parameter Store, and a recording proxy as their endpoint.
type setup struct {
	stack  *testenv.Stack
	rec    *recorder
	secret string // the webhook signing secret
	apiKey string // the Stripe API key
}

func newSetup(tb testing.TB) *setup {
	tb.Helper()
	return newSetupWith(tb, nil, nil)
}

// underKey deploys with a customer-managed key (KmsKeyArn), so that the
// IAM check sees each function's grants on it and the services it uses
// them through. The emulator does not encrypt with it: the key's uses are
// the check's model (keyUses).
var underKey = map[string]string{"KmsKeyArn": "arn:aws:kms:" + template.Region + ":" + template.AccountID + ":key/1234abcd-12ab-34cd-56ef-1234567890ab"}

// newSetupWith deploys the template with extra parameter overrides, and
// stores extraSecrets (template parameter naming an SSM parameter -> its
// value) beside the signing secrets and the API key.
func newSetupWith(tb testing.TB, overrides, extraSecrets map[string]string) *setup {
	tb.Helper()
	// A stage and parameter names of this setup only: other tests share the
	// emulator and store their own secrets under the template's default
	// names. The functions read only parameters under their stage's path.
	stage := "rie-" + randomHex(4)
	base := "/webhook-inbox/" + stage + "/stripe/"
	params := map[string]string{
		"Stage":                   stage,
		"WebhookSecretsParameter": base + "webhook-secrets",
		"ApiKeyParameter":         base + "api-key",
	}
	for k, v := range overrides {
		params[k] = strings.ReplaceAll(v, "{base}", base)
	}
	stack := testenv.Provision(tb, params)
	s := &setup{stack: stack, secret: "whsec_rie_" + randomHex(12), apiKey: "sk_test_rie_" + randomHex(12)}
	// As the local stack does (devstack.seedSecrets) and as the deployment
	// steps of docs/operations.md do with `aws ssm put-parameter --type SecureString`.
	client := ssm.NewFromConfig(stack.AWS)
	secrets := map[string]string{"WebhookSecretsParameter": s.secret, "ApiKeyParameter": s.apiKey}
	for k, v := range extraSecrets {
		secrets[k] = v
	}
	// Under the stack's key, when it has one, as docs/operations.md asks.
	var keyID *string
	if key := params["KmsKeyArn"]; key != "" {
		keyID = aws.String(key)
	}
	for param, value := range secrets {
		name, ok := stack.Template.Parameter(param)
		if !ok {
			tb.Fatalf("template: no parameter %s", param)
		}
		_, err := client.PutParameter(context.Background(), &ssm.PutParameterInput{
			Name: aws.String(name), Value: aws.String(value),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true), KeyId: keyID,
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	s.rec = startRecorder(tb, testenv.Endpoints(tb))
	return s
}

// env is the environment Lambda gives function id: the variables the
// template sets (Globals merged, references resolved to the provisioned
// resources), the runtime's own, and extra, which overrides.
func (s *setup) env(tb testing.TB, id string, extra map[string]string) map[string]string {
	tb.Helper()
	f, err := s.stack.Template.Function(id)
	if err != nil {
		tb.Fatal(err)
	}
	env, err := s.stack.Resources.Environment(f)
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range runtimeEnv(id, f.Timeout, s.rec.URL) {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// runtimeEnv is what the Lambda runtime sets for a function: its name and
// limits, LoggingConfig's JSON format and level (template Globals),
// credentials and region; plus the emulator's endpoint.
func runtimeEnv(id string, timeout int, endpoint string) map[string]string {
	home := filepath.Join(os.TempDir(), "lambda-home-"+randomHex(4))
	return map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":        id,
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(timeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_LOG_FORMAT":           "JSON",
		"AWS_LAMBDA_LOG_LEVEL":            "INFO",
		"AWS_REGION":                      template.Region,
		"AWS_DEFAULT_REGION":              template.Region,
		"AWS_ACCESS_KEY_ID":               "test",
		"AWS_SECRET_ACCESS_KEY":           "test",
		"AWS_SESSION_TOKEN":               "test",
		"AWS_ENDPOINT_URL":                endpoint,
		// No shared config of the developer's, and no instance metadata:
		// credentials come from the environment, as in Lambda.
		"HOME":                        home,
		"AWS_CONFIG_FILE":             filepath.Join(home, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"TZ":                          "UTC",
	}
}

// httpAPIEvent is the event API Gateway (HTTP API, payload format 2.0)
// sends the receiver for a delivery of body signed with sig.
func httpAPIEvent(tb testing.TB, body []byte, sig string, base64Body bool) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "apigw-http-v2-request.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		tb.Fatal(err)
	}
	headers := ev["headers"].(map[string]any)
	headers["stripe-signature"] = sig
	headers["content-length"] = strconv.Itoa(len(body))
	rc := ev["requestContext"].(map[string]any)
	now := time.Now().UTC()
	rc["requestId"] = randomHex(8)
	rc["time"] = now.Format("02/Jan/2006:15:04:05 -0700")
	rc["timeEpoch"] = now.UnixMilli()
	if base64Body {
		ev["body"], ev["isBase64Encoded"] = base64.StdEncoding.EncodeToString(body), true
	} else {
		ev["body"], ev["isBase64Encoded"] = string(body), false
	}
	out, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// receive takes one message off the queue, with the system attributes the
// SQS event source passes to Lambda.
func receive(tb testing.TB, s *setup, queueURL string) sqstypes.Message {
	tb.Helper()
	out, err := sqs.NewFromConfig(s.stack.AWS).ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queueURL),
		MaxNumberOfMessages:         1,
		WaitTimeSeconds:             10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		tb.Fatal(err)
	}
	if len(out.Messages) != 1 {
		tb.Fatalf("queue: got %d messages, want 1", len(out.Messages))
	}
	return out.Messages[0]
}

// sqsEvent is the event the SQS event source mapping sends the processor for
// messages received from the queue.
func sqsEvent(tb testing.TB, queueARN string, msgs ...sqstypes.Message) []byte {
	tb.Helper()
	records := []map[string]any{}
	for _, m := range msgs {
		records = append(records, map[string]any{
			"messageId":         aws.ToString(m.MessageId),
			"receiptHandle":     aws.ToString(m.ReceiptHandle),
			"body":              aws.ToString(m.Body),
			"attributes":        m.Attributes,
			"messageAttributes": map[string]any{},
			"md5OfBody":         aws.ToString(m.MD5OfBody),
			"eventSource":       "aws:sqs",
			"eventSourceARN":    queueARN,
			"awsRegion":         template.Region,
		})
	}
	out, err := json.Marshal(map[string]any{"Records": records})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// decodeAnswer decodes a function's answer, failing on a Lambda error
// (errorMessage/errorType, answered with HTTP 200 by the emulator).
func decodeAnswer(tb testing.TB, status int, body []byte, out *map[string]any) {
	tb.Helper()
	if status != http.StatusOK {
		tb.Fatalf("emulator: got HTTP %d %s, want 200", status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		tb.Fatalf("answer is not a JSON object: %s", body)
	}
	if _, ok := (*out)["errorType"]; ok {
		tb.Fatalf("the function failed: %s", body)
	}
}

func TestReceiverBinaryAnswersAPIGatewayEventsAsLambdaRunsIt(t *testing.T) {
	s := newSetupWith(t, underKey, nil)
	ctx := context.Background()
	fn := start(t, hostBootstrap(t, receiverID), s.env(t, receiverID, nil))
	events := &store.Events{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("EventsTable")}

	body, err := stripefixture.Build(
		"customer.subscription.created",
		stripefixture.Options{Customer: "cus_rie_" + randomHex(4), ObjectID: "sub_rie_" + randomHex(4)},
	)
	if err != nil {
		t.Fatal(err)
	}
	env, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}

	// The cold start and the first delivery.
	status, out := fn.call(t, httpAPIEvent(t, body, provider.SignStripe(body, s.secret, time.Now()), false))
	var answer map[string]any
	decodeAnswer(t, status, out, &answer)
	want := map[string]any{
		"statusCode": float64(200),
		"headers":    map[string]any{"content-type": "application/json"},
		"body":       `{"received":true}`,
	}
	for k, v := range want {
		if !reflect.DeepEqual(answer[k], v) {
			t.Errorf("answer %s: got %#v, want %#v (answer %s)", k, answer[k], v, out)
		}
	}
	if got, want := names(s.rec.Calls(0)), []string{"ssm:GetParameter", "dynamodb:PutItem", "dynamodb:PutItem", "sqs:SendMessage"}; !reflect.DeepEqual(
		got,
		want,
	) {
		t.Errorf(
			"AWS calls of the cold start and first delivery: got %v, want %v (init reads nothing; the first delivery reads the secrets, then stores the record and its payload and queues)",
			got,
			want,
		)
	}
	rec, err := events.Get(ctx, event.ProviderStripe, env.ID)
	if err != nil {
		t.Fatalf("stored record: %v", err)
	}
	if rec.Status != event.StatusReceived || rec.Source != event.SourceWebhook || !bytes.Equal(rec.Payload, body) || rec.PayloadHash != ingest.Hash(body) {
		t.Errorf(
			"record: status %s source %s payload %d bytes (hash %s); want received, webhook, the %d signed bytes",
			rec.Status,
			rec.Source,
			len(rec.Payload),
			rec.PayloadHash,
			len(body),
		)
	}
	msg := receive(t, s, s.stack.Queue("WebhookQueue").URL)
	if ptr, err := queue.Decode(aws.ToString(msg.Body)); err != nil || ptr.ID != env.ID {
		t.Errorf("queued pointer: got %+v (%v), want one to %s", ptr, err, env.ID)
	}
	lines := fn.logLines(map[string]string{"message": "webhook", "event_id": env.ID, "outcome": "stored"})
	if len(lines) != 1 {
		t.Fatalf("log lines for the delivery: got %d, want 1\n%s", len(lines), fn.out.String())
	}
	if aws, ok := lines[0]["_aws"].(map[string]any); !ok || !strings.Contains(mustJSON(aws), `"Namespace":"WebhookInbox"`) {
		t.Errorf("the delivery's log line carries no EMF metrics: %v", lines[0])
	}

	// A redelivery, base64-encoded as API Gateway sends bodies it does not
	// treat as text: the same event, acknowledged again, and no new read
	// of the secrets.
	mark := s.rec.Len()
	status, out = fn.call(t, httpAPIEvent(t, body, provider.SignStripe(body, s.secret, time.Now()), true))
	decodeAnswer(t, status, out, &answer)
	if answer["statusCode"] != float64(200) {
		t.Errorf("redelivery: got %s, want statusCode 200", out)
	}
	for _, c := range s.rec.Calls(mark) {
		if c.Service == "ssm" {
			t.Errorf("redelivery read the secrets again (%s): they are read once, on the first request", c)
		}
	}

	// A forged delivery: a 400 with a generic body, and no AWS call.
	mark = s.rec.Len()
	status, out = fn.call(t, httpAPIEvent(t, body, provider.SignStripe(body, "whsec_forged", time.Now()), false))
	decodeAnswer(t, status, out, &answer)
	if answer["statusCode"] != float64(400) || answer["body"] != `{"error":"invalid webhook request"}` {
		t.Errorf("forged delivery: got %s, want statusCode 400 and the generic body", out)
	}
	if calls := s.rec.Calls(mark); len(calls) != 0 {
		t.Errorf("forged delivery made AWS calls: %v", names(calls))
	}

	checkLeastPrivilege(t, s.stack.Template, s.stack.Resources, receiverID, s.rec.Calls(0))
}

// fakeStripe answers GET /v1/events/{id} with the events it holds, or with
// a 500 while failing is set; it checks the API key.
type fakeStripe struct {
	key     string
	mu      sync.Mutex
	events  map[string][]byte
	failing bool
	calls   int
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}`))
		return
	}
	if f.failing {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":{"type":"api_error","message":"something went wrong"}}`))
		return
	}
	body, ok := f.events[strings.TrimPrefix(r.URL.Path, "/v1/events/")]
	if r.Method != http.MethodGet || !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"No such event"}}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func TestProcessorBinaryAnswersSQSEventsAsLambdaRunsIt(t *testing.T) {
	s := newSetupWith(t, underKey, nil)
	ctx := context.Background()
	q := s.stack.Queue("WebhookQueue")
	db := dynamodb.NewFromConfig(s.stack.AWS)
	events := &store.Events{DB: db, Table: s.stack.Table("EventsTable")}
	in := &ingest.Ingester{Store: events, Queue: &queue.Queue{Client: sqs.NewFromConfig(s.stack.AWS), URL: q.URL}, Provider: event.ProviderStripe}
	stripe := &fakeStripe{key: s.apiKey, events: map[string][]byte{}}
	api := httptest.NewServer(stripe)
	defer api.Close()
	// The retry below waits out the backoff: a second, not the template's
	// minute.
	fn := start(t, hostBootstrap(t, processorID), s.env(t, processorID, map[string]string{"STRIPE_API_BASE": api.URL, "RETRY_BACKOFF_BASE": "1s"}))

	// An event stored and queued by the receiver's ingest path.
	customer := "cus_rie_" + randomHex(4)
	body, err := stripefixture.Build("customer.subscription.created", stripefixture.Options{Customer: customer, ObjectID: "sub_rie_" + randomHex(4)})
	if err != nil {
		t.Fatal(err)
	}
	env, _ := event.DecodeEnvelope(body)
	if _, err := in.Ingest(ctx, env, body, event.SourceWebhook); err != nil {
		t.Fatal(err)
	}
	mark := s.rec.Len()
	status, out := fn.call(t, sqsEvent(t, q.ARN, receive(t, s, q.URL)))
	var answer map[string]any
	decodeAnswer(t, status, out, &answer)
	failures, ok := answer["batchItemFailures"]
	if !ok || (failures != nil && len(failures.([]any)) != 0) {
		t.Errorf("answer: got %s, want batchItemFailures present and empty", out)
	}
	// Init makes no AWS call, and an event with its payload needs no key:
	// the calls are the claim, the payload's read and the commit.
	if got, want := names(s.rec.Calls(mark)), []string{"dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:TransactWriteItems"}; !reflect.DeepEqual(
		got,
		want,
	) {
		t.Errorf("AWS calls of the cold start and first batch: got %v, want %v (no secret read: the API key is read on first need)", got, want)
	}
	rec, err := events.Get(ctx, event.ProviderStripe, env.ID)
	if err != nil || rec.Status != event.StatusProcessed || rec.Outcome != outcome.Applied {
		t.Fatalf("record: got %s/%s (%v), want processed/applied\n%s", rec.Status, rec.Outcome, err, fn.out.String())
	}
	reader := &mirror.Reader{DB: db, Table: s.stack.Table("MirrorTable")}
	if snap, err := reader.Object(ctx, env.ObjectID); err != nil || snap.LastEventID != env.ID || snap.Customer != customer {
		t.Errorf("mirror: got %+v (%v), want the subscription from %s", snap, err, env.ID)
	}
	if ent, err := reader.Entitlement(ctx, customer); err != nil || ent.Customer != customer {
		t.Errorf("entitlement: got %+v (%v)", ent, err)
	}

	// An event too large to store (its payload is fetched from Stripe),
	// while Stripe answers 500: a batch item failure, the message's retry
	// delayed, the record failed; then Stripe answers and it is processed.
	big, err := stripefixture.Build("customer.subscription.updated", stripefixture.Options{Customer: customer, ObjectID: "sub_rie_" + randomHex(4)})
	if err != nil {
		t.Fatal(err)
	}
	bigEnv, _ := event.DecodeEnvelope(big)
	stripe.mu.Lock()
	stripe.events[bigEnv.ID], stripe.failing = big, true
	stripe.mu.Unlock()
	omitted := event.NewRecord(event.ProviderStripe, bigEnv, nil, ingest.Hash(big), event.SourceWebhook, event.StatusReceived, time.Now())
	omitted.PayloadOmitted = true
	if _, err := events.Create(ctx, &omitted); err != nil {
		t.Fatal(err)
	}
	if err := in.Queue.Send(ctx, event.PointerTo(omitted)); err != nil {
		t.Fatal(err)
	}
	msg := receive(t, s, q.URL)
	mark = s.rec.Len()
	status, out = fn.call(t, sqsEvent(t, q.ARN, msg))
	decodeAnswer(t, status, out, &answer)
	if reads := secretReads(s.rec.Calls(mark)); reads != 1 {
		t.Errorf("secret reads for the first event without its payload: got %d, want 1 (the API key, on first need)", reads)
	}
	want := []any{map[string]any{"itemIdentifier": aws.ToString(msg.MessageId)}}
	if !reflect.DeepEqual(answer["batchItemFailures"], want) {
		t.Errorf("answer while Stripe fails: got %s, want batchItemFailures %v", out, want)
	}
	if rec, err := events.Get(ctx, event.ProviderStripe, bigEnv.ID); err != nil || rec.Status != event.StatusFailed || rec.LastError == "" {
		t.Errorf("record while Stripe fails: got %s %q (%v), want failed with its error", rec.Status, rec.LastError, err)
	}

	stripe.mu.Lock()
	stripe.failing = false
	stripe.mu.Unlock()
	// The retry comes back after the backoff the processor set.
	msg = receive(t, s, q.URL)
	if msg.Attributes["ApproximateReceiveCount"] != "2" {
		t.Errorf("retried message: receive count %s, want 2", msg.Attributes["ApproximateReceiveCount"])
	}
	status, out = fn.call(t, sqsEvent(t, q.ARN, msg))
	decodeAnswer(t, status, out, &answer)
	if failures := answer["batchItemFailures"]; failures != nil && len(failures.([]any)) != 0 {
		t.Errorf("answer once Stripe answers: got %s, want no failures", out)
	}
	if rec, err := events.Get(ctx, event.ProviderStripe, bigEnv.ID); err != nil || rec.Status != event.StatusProcessed {
		t.Errorf("record once Stripe answers: got %s (%v), want processed\n%s", rec.Status, err, fn.out.String())
	}

	if reads := secretReads(s.rec.Calls(0)); reads != 1 {
		t.Errorf("secret reads: got %d, want 1 (the API key, read on first need and kept)", reads)
	}
	checkLeastPrivilege(t, s.stack.Template, s.stack.Resources, processorID, s.rec.Calls(0))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

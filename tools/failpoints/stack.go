package failpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/githubfake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// The functions of a case, as the report names them. The event source
// (functionESM) is the SQS event source mapping's own calls: Lambda's
// deletes of the messages a batch handled.
const (
	functionReceiver   = "receiver"
	functionProcessor  = "processor"
	functionReconciler = "reconciler"
	functionESM        = "event-source"
	functionBridge     = "bridge"
	// serviceApp is the team's application, as the effects call it.
	serviceApp = "app"
)

// Logical ids of the template the stack reads.
const (
	receiverID   = "ReceiverFunction"
	processorID  = "ProcessorFunction"
	reconcilerID = "ReconcilerFunction"
	bridgeID     = "BridgeFunction"
)

// partnerSource is the bridge worlds' EventBridge partner event source.
const partnerSource = "aws.partner/stripe.com/ed_test_failpoints"

// The timings of a case (Scale): each the template's own, scaled, except
// where SQS's whole seconds or the lease's bound ask for more.
var (
	// overrides are the template parameters of every case.
	overrides = map[string]string{
		"ProcessorTimeout":       "3",
		"QueueVisibilityTimeout": "5",
		// 8 receives of 1 s doubling to 24 s (2 h): 79 s, 6 h 35 min of
		// the world's time, the template's 6 h 7 min.
		"MaxReceiveCount":  "8",
		"RetryBackoffBase": "1",
		"RetryBackoffMax":  "24",
	}
	reconcileEvery = scaled(10 * time.Minute)
	reconcilerEnv  = map[string]string{
		"RECONCILE_SETTLE":          scaled(5 * time.Minute).String(),
		"RECONCILE_STUCK_AFTER":     scaled(15 * time.Minute).String(),
		"RECONCILE_OVERLAP":         "1s",
		"RECONCILE_SINCE":           "1h",
		"RECONCILE_DEADLINE_MARGIN": "1s",
	}
	reconcileTimeout = 8 * time.Second
)

// Secrets of the world (local only).
const (
	stripeSecret  = "whsec_failpoints_stripe_local_only"
	apiKey        = "sk_test_failpoints_local_only"
	revokedAPIKey = "sk_test_failpoints_revoked"
	githubToken   = "ghp_failpoints_local_only"
	githubHook    = "repo:acme/shop/1"
	// connectSecret signs the connected account's events (the Connect
	// endpoint's secret); connectAccount is that account.
	connectSecret  = "whsec_failpoints_connect_local_only"
	connectAccount = "acct_failpoints"
)

// connectSecretsParameter is where the Connect endpoint's secret is
// stored.
const connectSecretsParameter = "/webhook-inbox/dev/failpoints/stripe/connect-webhook-secrets"

// providerSecret is the signing secret of a provider other than Stripe: a
// whsec_ value, which every provider's verifier takes (Standard Webhooks'
// needs its form) but LiveKit's, whose secrets are key pairs
// (secretOf).
const providerSecret = "whsec_ZmFpbHBvaW50cy1sb2NhbC1vbmx5LWtleQ=="

// secretOf is the signing secret of provider p in the enumeration.
func secretOf(p string) string {
	if p == provider.LiveKit {
		return "APIfailpoints:" + providerSecret
	}
	return providerSecret
}

// signedURL is the URL the world of a provider that signs its URL
// (Square, Twilio) is configured with and signs (SquareWebhookUrl, ...),
// whatever the gateway's own address.
func signedURL(p string) string { return "https://failpoints.example/webhooks/" + p }

// logs collects one function's JSON log lines.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) lines() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(l.buf.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// stack is one case's pipeline: its own tables and queues, the three
// functions built by package boot from the template's environment, each
// with its AWS clients and outside calls through a proxy of the case's
// tap, the event source polling the queue, the reconciler on its
// schedule, and the world's stand-ins (Stripe's API, GitHub's, the team's
// application).
type stack struct {
	w World
	// order settles an Audit world's race (Spec.Order); auditEnded is
	// closed when the audit run as the case starts has ended (Audit
	// worlds).
	order      Order
	auditEnded chan struct{}
	prefix     string
	tap        *tap
	res        *provision.Resources
	direct     aws.Config

	gateway *httptest.Server
	stripe  *stripefake.Server
	github  *githubfake.Server
	down    *downstream
	logs    map[string]*logs
	servers []*httptest.Server

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// started and ended count the reconciler's runs; a send on soon
	// brings the next run forward.
	runsMu         sync.Mutex
	started, ended int
	soon           chan struct{}
	// ingress is the bridge's queue (Bridge worlds), "" otherwise.
	ingress string
}

// env is an enumeration's shared setup: the emulators, the template, and
// a configuration that reaches the emulators directly.
type env struct {
	endpoints emulator.Endpoints
	direct    aws.Config
	template  string
	root      string
	alarms    alarms

	// templates holds the template as each world's cases load it (a
	// parse costs tens of milliseconds, and is serialized).
	templatesMu sync.Mutex
	templates   map[string]*template.Template
}

// worldTemplate returns the template with w's overrides, parsed once.
func (e *env) worldTemplate(w World) (*template.Template, error) {
	e.templatesMu.Lock()
	defer e.templatesMu.Unlock()
	if t, ok := e.templates[w.Name]; ok {
		return t, nil
	}
	over := map[string]string{
		"WebhookSecretsParameter": secretsParameter(event.ProviderStripe),
		"ApiKeyParameter":         apiKeyParameter,
	}
	for k, v := range overrides {
		over[k] = v
	}
	switch {
	case w.Declared != "":
		over["GenericSenders"] = "[" + w.Declared + "]"
		over["GenericSendersSecretsPath"] = sendersPath
	case w.Provider != event.ProviderStripe:
		over[secretsParameterParam(w.Provider)] = secretsParameter(w.Provider)
	}
	if w.Connect != "" {
		over["StripeConnectWebhookSecretsParameter"] = connectSecretsParameter
	}
	if w.ListAccounts {
		over["StripeConnectListAccounts"] = "true"
	}
	if w.Bridge {
		over["StripeEventSourceName"] = partnerSource
	}
	if spec, err := provider.Lookup(w.Provider); err == nil && slices.Contains(spec.Settings, provider.SettingURL) {
		over[strings.ToUpper(w.Provider[:1])+w.Provider[1:]+"WebhookUrl"] = signedURL(w.Provider)
	}
	t, err := template.Load(e.template, over)
	if err != nil {
		return nil, err
	}
	if e.templates == nil {
		e.templates = map[string]*template.Template{}
	}
	e.templates[w.Name] = t
	return t, nil
}

func (s *stack) serve(h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	s.servers = append(s.servers, srv)
	return srv
}

// putEvent is EventBridge's delivery of the Stripe event body to the
// ingress queue: the envelope the rule's SQS target delivers, sent
// directly (AWS's own call, never faulted). It answers as a courier's
// attempt: 200 once the message is on the queue.
func (s *stack) putEvent(ctx context.Context, typ string, body []byte) int {
	var detail bytes.Buffer
	if err := json.Compact(&detail, body); err != nil {
		return 0
	}
	env, err := json.Marshal(map[string]any{
		"version": "0", "id": newID(), "detail-type": typ, "source": partnerSource, "account": template.AccountID,
		"time": time.Now().UTC().Format(time.RFC3339), "region": template.Region, "resources": []string{}, "detail": json.RawMessage(detail.Bytes()),
	})
	if err != nil {
		return 0
	}
	if _, err := sqs.NewFromConfig(s.direct).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.ingress), MessageBody: aws.String(string(env))}); err != nil {
		return 0
	}
	return http.StatusOK
}

// runSoon brings the reconciler's next run forward: the world is quiet,
// nothing is due before it, so its time may pass at once.
func (s *stack) runSoon() {
	select {
	case s.soon <- struct{}{}:
	default:
	}
}

// reconcilerRuns returns how many of the reconciler's runs started and
// ended.
func (s *stack) reconcilerRuns() (started, ended int) {
	s.runsMu.Lock()
	defer s.runsMu.Unlock()
	return s.started, s.ended
}

// stop stops the world and deletes the case's tables and queues.
func (s *stack) stop() {
	s.halt()
	s.remove()
}

// halt stops the world: the event source, the reconciler, the stand-ins.
func (s *stack) halt() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.github != nil {
		s.github.Close()
	}
	for _, srv := range s.servers {
		srv.CloseClientConnections()
		srv.Close()
	}
	if s.stripe != nil {
		s.stripe.Close()
	}
}

// remove deletes the case's tables and queues.
func (s *stack) remove() {
	if s.res == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, q := dynamodb.NewFromConfig(s.direct), sqs.NewFromConfig(s.direct)
	for _, t := range s.res.Tables {
		_, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
	}
	for _, qu := range s.res.Queues {
		_, _ = q.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(qu.URL)})
	}
}

// secretsParameterParam is the template parameter naming a provider's
// secrets parameter (GithubWebhookSecretsParameter).
func secretsParameterParam(name string) string {
	return strings.ToUpper(name[:1]) + name[1:] + "WebhookSecretsParameter"
}

// secretsParameter is where a provider's signing secrets are stored for
// the enumeration: its own names, apart from the local stack's.
func secretsParameter(name string) string {
	return "/webhook-inbox/dev/failpoints/" + name + "/webhook-secrets"
}

// apiKeyParameter is where the Stripe API key is stored.
const apiKeyParameter = "/webhook-inbox/dev/failpoints/stripe/api-key"

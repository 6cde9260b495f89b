package failpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/bridgeboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/gateway"
	"github.com/webhook-inbox/webhook-inbox/tools/githubfake"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
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
	w      World
	prefix string
	tap    *tap
	res    *provision.Resources
	direct aws.Config

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

// start provisions and starts a case's stack for w, whose provider's
// handled type is typ, with the faults of plan.
func (e *env) start(ctx context.Context, w World, typ string, plan []Fault) (*stack, error) {
	s := &stack{w: w, prefix: "fp" + newID()[:10], direct: e.direct, logs: map[string]*logs{}}
	s.tap = newTap(s.prefix, plan)
	ok := false
	defer func() {
		if !ok {
			s.stop()
		}
	}()
	tmpl, err := e.worldTemplate(w)
	if err != nil {
		return nil, err
	}
	prov := &provision.Provisioner{DynamoDB: dynamodb.NewFromConfig(e.direct), SQS: sqs.NewFromConfig(e.direct), Prefix: s.prefix}
	if s.res, err = prov.Provision(ctx, tmpl); err != nil {
		return nil, err
	}

	// Each function's AWS clients, and its outside calls, go through a
	// proxy of its own that the tap decides for.
	awsFor := map[string]aws.Config{}
	for _, f := range []string{functionReceiver, functionProcessor, functionReconciler, functionESM, functionBridge} {
		p, err := faultproxy.New(e.endpoints)
		if err != nil {
			return nil, err
		}
		p.Decide = s.tap.decider(f)
		srv := s.serve(p)
		if awsFor[f], err = emulator.Config(ctx, emulator.One(srv.URL)); err != nil {
			return nil, err
		}
		s.logs[f] = &logs{}
	}
	outside := func(function, service, target string) (string, error) {
		p, err := faultproxy.NewHTTP(service, target)
		if err != nil {
			return "", err
		}
		p.Decide = s.tap.decider(function)
		return s.serve(p).URL, nil
	}

	// The world's stand-ins.
	s.stripe = stripefake.New()
	if w.ListAccounts {
		s.stripe.AddAccount(w.Connect)
	}
	if w.APIKey {
		s.stripe.RequireKey(apiKey)
	} else {
		s.stripe.RequireKey("sk_test_never_given")
	}
	s.down = newDownstream()
	downSrv := s.serve(s.down)
	procDown, err := outside(functionProcessor, serviceApp, downSrv.URL)
	if err != nil {
		return nil, err
	}
	effects := worldEffects(s.res.Tables["MirrorTable"], procDown+"/notify", w.Provider)

	fenv := map[string]map[string]string{}
	ids := []string{receiverID, processorID, reconcilerID}
	if w.Bridge {
		ids = append(ids, bridgeID)
	}
	for _, id := range ids {
		f, err := tmpl.Function(id)
		if err != nil {
			return nil, err
		}
		if fenv[id], err = s.res.Environment(f); err != nil {
			return nil, err
		}
	}
	if w.Provider != event.ProviderStripe {
		fenv[receiverID][boot.ProviderTypesVariable(w.Provider)] = typ
	}

	// The processor: Stripe's API (through its own proxy) for payloads not
	// stored, the team's application for the effects.
	procStripe, err := outside(functionProcessor, "stripe", s.stripe.URL)
	if err != nil {
		return nil, err
	}
	fenv[processorID]["STRIPE_API_BASE"] = procStripe
	if !w.APIKey {
		fenv[processorID]["STRIPE_API_KEY_PARAMETER"] = ""
	}
	if w.Provider == event.ProviderStripe {
		fenv[processorID]["FORWARD_URL"] = procDown + "/forward"
		fenv[processorID]["FORWARD_SECRET"] = "fwd_failpoints_local_only"
	}

	// The reconciler: Stripe's API, and GitHub's with its hook.
	recStripe, err := outside(functionReconciler, "stripe", s.stripe.URL)
	if err != nil {
		return nil, err
	}
	fenv[reconcilerID]["STRIPE_API_BASE"] = recStripe
	for k, v := range reconcilerEnv {
		fenv[reconcilerID][k] = v
	}
	if !w.APIKey {
		fenv[reconcilerID]["STRIPE_API_KEY"] = revokedAPIKey
	}
	if w.AuditEffects {
		fenv[reconcilerID]["AUDIT_RUN_EFFECTS"] = "true"
	}
	// The sweep reads the lanes of the world's provider alone: 16 queries
	// a run, where every provider's would be 64 for records no case has.
	fenv[reconcilerID]["RECONCILE_STUCK_PROVIDERS"] = w.Provider

	// The receiver behind API Gateway's stand-in, one invocation at a time.
	recvFn, _ := tmpl.Function(receiverID)
	gw := &gateway.Gateway{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Ready: func() bool { return true }}
	s.gateway = s.serve(gw)
	if w.Sender.Redelivers {
		s.github = githubfake.Start(githubfake.Config{Token: githubToken, Secret: providerSecret, Target: s.gateway.URL + "/webhooks/" + w.Provider})
		s.github.AddHook(githubfake.RepoHook("acme", "shop", 1))
		recGitHub, err := outside(functionReconciler, "github", s.github.URL)
		if err != nil {
			return nil, err
		}
		fenv[reconcilerID]["GITHUB_HOOKS"] = githubHook
		fenv[reconcilerID]["GITHUB_API_TOKEN"] = githubToken
		fenv[reconcilerID]["GITHUB_API_BASE"] = recGitHub
		fenv[reconcilerID]["GITHUB_REDELIVERY_BACKOFF"] = scaled(reconcile.DefaultGitHubRedeliveryBackoff).String()
	}

	envOf := func(id string) boot.Env {
		m := fenv[id]
		return func(k string) string { return m[k] }
	}
	logger := func(f string) *slog.Logger { return slog.New(slog.NewJSONHandler(s.logs[f], nil)) }

	recv, err := receiverboot.FromEnv(ctx, envOf(receiverID), awsFor[functionReceiver], logger(functionReceiver), effects)
	if err != nil {
		return nil, err
	}
	// One invocation of a function at a time, as one Lambda instance
	// runs them: a killed process is its invocation's alone.
	var recvLock sync.Mutex
	for _, r := range recvFn.Routes() {
		gw.Routes = append(gw.Routes, gateway.Route{Method: r.Method, Path: r.Path, Function: receiverID,
			Timeout: time.Duration(recvFn.Timeout) * time.Second,
			Handler: func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				recvLock.Lock()
				defer recvLock.Unlock()
				resp, err := recv.Handle(ctx, req)
				if s.tap.ended(functionReceiver) {
					return events.APIGatewayV2HTTPResponse{}, errors.New("failpoints: the receiver's process was killed")
				}
				return resp, err
			}})
	}

	procFn, _ := tmpl.Function(processorID)
	src, err := procFn.SQS()
	if err != nil {
		return nil, err
	}
	proc, err := processorboot.FromEnv(ctx, envOf(processorID), awsFor[functionProcessor], logger(functionProcessor), effects)
	if err != nil {
		return nil, err
	}
	var procLock sync.Mutex
	q := s.res.Queues[src.Queue.LogicalID]
	p := &poller.Poller{
		SQS: sqs.NewFromConfig(awsFor[functionESM]), QueueURL: q.URL, QueueARN: q.ARN, Source: src,
		Function: processorID, Timeout: time.Duration(procFn.Timeout) * time.Second, Workers: 1,
		Logger: logger(functionESM),
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			procLock.Lock()
			defer procLock.Unlock()
			resp, err := proc.Handle(ctx, ev)
			if s.tap.ended(functionProcessor) {
				return events.SQSEventResponse{}, errors.New("failpoints: the processor's process was killed")
			}
			return resp, err
		},
	}
	rec, err := reconcilerboot.FromEnv(ctx, envOf(reconcilerID), awsFor[functionReconciler], logger(functionReconciler), effects)
	if err != nil {
		return nil, err
	}
	runs := []json.RawMessage{json.RawMessage(`{}`)}
	handle := func(ctx context.Context, payload json.RawMessage) error { return rec.Handle(ctx, payload) }
	if w.Audit {
		// The audit's effects call the application through the
		// reconciler's own proxy.
		recDown, err := outside(functionReconciler, serviceApp, downSrv.URL)
		if err != nil {
			return nil, err
		}
		auditEffects := worldEffects(s.res.Tables["MirrorTable"], recDown+"/notify", w.Provider)
		auditEffects.On(&notify{client: &http.Client{Timeout: 5 * time.Second}, url: recDown + "/notify"}, "*")
		handle = reconcilerboot.Handler(reconcilerboot.AuditFromEnv(envOf(reconcilerID), awsFor[functionReconciler], auditEffects), awsFor[functionReconciler], logger(functionReconciler), rec, auditEffects)
		runs = []json.RawMessage{json.RawMessage(`{"run":"audit"}`), json.RawMessage(`{}`)}
	}

	// The bridge behind the ingress queue, polled as the processor's is.
	var bp *poller.Poller
	if w.Bridge {
		bridgeFn, err := tmpl.Function(bridgeID)
		if err != nil {
			return nil, err
		}
		bsrc, err := bridgeFn.SQS()
		if err != nil {
			return nil, err
		}
		bh, err := bridgeboot.FromEnv(ctx, envOf(bridgeID), awsFor[functionBridge], logger(functionBridge), effects)
		if err != nil {
			return nil, err
		}
		var bridgeLock sync.Mutex
		bq := s.res.Queues[bsrc.Queue.LogicalID]
		s.ingress = bq.URL
		bp = &poller.Poller{
			SQS: sqs.NewFromConfig(awsFor[functionESM]), QueueURL: bq.URL, QueueARN: bq.ARN, Source: bsrc,
			Function: bridgeID, Timeout: time.Duration(bridgeFn.Timeout) * time.Second, Workers: 1,
			Logger: logger(functionESM),
			Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				bridgeLock.Lock()
				defer bridgeLock.Unlock()
				resp, err := bh.Handle(ctx, ev)
				if s.tap.ended(functionBridge) {
					return events.SQSEventResponse{}, errors.New("failpoints: the bridge's process was killed")
				}
				return resp, err
			},
		}
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.soon = make(chan struct{}, 1)
	if bp != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			bp.Run(runCtx)
		}()
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		p.Run(runCtx)
	}()
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(reconcileEvery)
		defer tick.Stop()
		if w.Audit {
			// An audit as the case starts: it races the event in flight.
			invCtx, cancel := context.WithTimeout(runCtx, reconcileTimeout)
			_ = handle(invCtx, runs[0])
			cancel()
			s.tap.ended(functionReconciler)
		}
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			case <-s.soon:
				tick.Reset(reconcileEvery)
			}
			s.runsMu.Lock()
			s.started++
			s.runsMu.Unlock()
			for _, payload := range runs {
				invCtx, cancel := context.WithTimeout(runCtx, reconcileTimeout)
				_ = handle(invCtx, payload)
				cancel()
				s.tap.ended(functionReconciler)
			}
			s.runsMu.Lock()
			s.ended++
			s.runsMu.Unlock()
		}
	}()
	ok = true
	return s, nil
}

func (s *stack) serve(h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	s.servers = append(s.servers, srv)
	return srv
}

// putEvent is EventBridge's delivery of the Stripe event body to the
// ingress queue: the envelope the rule's SQS target delivers, sent
// directly (AWS's own call, never faulted). It answers as a sender's
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

// downstream is the team's application: it applies each idempotency key
// once, as an idempotent application must, and counts every call.
type downstream struct {
	mu      sync.Mutex
	calls   map[string]int
	applied map[string]bool
}

func newDownstream() *downstream {
	return &downstream{calls: map[string]int{}, applied: map[string]bool{}}
}

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	d.mu.Lock()
	d.calls[key]++
	d.applied[key] = true
	d.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// keys returns the idempotency keys applied that start with prefix.
func (d *downstream) keys(prefix string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k := range d.applied {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// worldEffects are the team's effects in every case: a ledger that counts
// each event's commits in the transaction that marks it processed (a
// count above one is an effect committed twice), and, for the providers
// other than Stripe (whose events the built-in forward effect posts), a
// call to the team's application with the event's idempotency key. The
// world's provider has them too when it is a declared sender.
func worldEffects(mirrorTable, notifyURL, world string) *effect.Registry {
	r := &effect.Registry{}
	ledger := effect.Func{HandlerName: "ledger", Fn: func(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
		return []types.TransactWriteItem{{Update: &types.Update{
			TableName:                 aws.String(mirrorTable),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: ledgerKey(ev.Record.Provider, ev.Record.ID)}},
			UpdateExpression:          aws.String("ADD commits :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		}}}, nil
	}}
	providers := event.Providers
	if !slices.Contains(providers, world) {
		providers = append(slices.Clone(providers), world)
	}
	for _, p := range providers {
		r.OnProvider(p, ledger, "*")
		if p != event.ProviderStripe {
			r.OnProvider(p, &notify{client: &http.Client{Timeout: 5 * time.Second}, url: notifyURL}, "*")
		}
	}
	return r
}

func ledgerKey(provider, id string) string { return "ledger#" + provider + "#" + id }

// notify posts an event's idempotency key to the team's application;
// 429, 5xx and no answer are retried, any other answer is permanent.
type notify struct {
	client *http.Client
	url    string
}

func (n *notify) Name() string { return "notify" }

func (n *notify) Handle(ctx context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, strings.NewReader(ev.Record.ID))
	if err != nil {
		return nil, &fault.Permanent{Err: err}
	}
	req.Header.Set("Idempotency-Key", ev.IdempotencyKey)
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("notify: %d", resp.StatusCode)
	}
	return nil, &fault.Permanent{Err: fmt.Errorf("notify: %d", resp.StatusCode)}
}

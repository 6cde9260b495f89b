// Package devstack runs the whole pipeline on one machine: the template's
// tables and queues on an AWS emulator, the receiver behind a local API
// Gateway, the processor behind a local SQS event source mapping, and the
// reconciler on its schedule. With StripeEventSourceName set (an emulator
// that runs EventBridge: LocalStack), also Stripe's EventBridge
// destination: the bus and rule, and the bridge behind its ingress queue. The handlers are built by package boot, from
// the environment the template gives each function, exactly as in Lambda.
package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/webhook-inbox/webhook-inbox/internal/devsecret"
	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/bridgeboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/gateway"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// DefaultWebhookSecret is the signing secret of the local stack, for local
// use only: a deployment reads its secrets from SSM Parameter Store. It is
// package devsecret's, which inboxctl --dev links without the stack.
const DefaultWebhookSecret = devsecret.Webhook

// Logical ids of the functions in template.yaml.
const (
	ReceiverID   = "ReceiverFunction"
	ProcessorID  = "ProcessorFunction"
	ReconcilerID = "ReconcilerFunction"
	// BridgeID is in the template only with StripeEventSourceName set.
	BridgeID = "BridgeFunction"
)

// Options configure a Stack.
type Options struct {
	// Template is the path of template.yaml.
	Template string
	// Overrides replace template parameter defaults.
	Overrides map[string]string
	// Prefix names the provisioned resources; DefaultPrefix is make
	// dev's.
	Prefix string
	// Addr is the gateway's listen address, like 127.0.0.1:3000; port 0
	// picks a free one.
	Addr string
	// WebhookSecret is stored in the emulator's Parameter Store under the
	// template's WebhookSecretsParameter; comma-separate several.
	WebhookSecret string
	// ConnectWebhookSecret, when set, is a Connect endpoint's signing
	// secret (comma-separate several), stored under the template's
	// StripeConnectWebhookSecretsParameter (set to the stage's own name
	// unless Overrides sets it), so connected accounts' events verify.
	ConnectWebhookSecret string
	// APIKey, when set, is stored under the template's ApiKeyParameter.
	APIKey string
	// ProviderSecrets are the other providers' signing secrets by name
	// (github, shopify, standard), each comma-separated for several. A
	// provider with one is served: its secrets parameter (the template's
	// <Provider>WebhookSecretsParameter) is set to the stage's own name
	// unless Overrides sets it, and the secrets are stored there.
	ProviderSecrets map[string]string
	// Senders declares the senders without a provider of their own (the
	// template's GenericSenders: provider.ParseSenders); their secrets are
	// in ProviderSecrets under their names, stored as the parameters under
	// the template's GenericSendersSecretsPath (the stage's own path
	// unless Overrides sets it).
	Senders string
	// Env overrides function environment variables (STRIPE_API_BASE, ...).
	Env map[string]string
	// Effects are the team's effects, handed to the three functions as
	// their main packages hand them hooks.Registry(); nil for the team's
	// (shared/pipeline/hooks).
	Effects *effect.Registry
	// ReconcileEvery overrides the reconciler's schedule (the template's
	// ScheduleExpression); zero keeps it, negative turns the reconciler off.
	// The reconciler runs only when APIKey or Env["STRIPE_API_BASE"] is set.
	ReconcileEvery time.Duration
	// AWS is the configuration the stack's clients use.
	AWS    aws.Config
	Logger *slog.Logger
}

// Stack is a running local pipeline.
type Stack struct {
	// URL is the gateway's base URL, like http://127.0.0.1:3000.
	URL       string
	Resources *provision.Resources
	// FunctionEnv is each function's resolved environment.
	FunctionEnv map[string]map[string]string
	// ReconcileEvery is the reconciler's period; zero when it is off.
	ReconcileEvery time.Duration

	server *http.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ready  atomic.Bool
}

// Start provisions the resources, builds the handlers and starts serving.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	opts = withDefaults(opts)
	t, res, err := provisionStack(ctx, opts)
	if err != nil {
		return nil, err
	}
	s := &Stack{Resources: res, FunctionEnv: map[string]map[string]string{}}
	if err := s.functionEnvs(t, res, opts); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	fail := func(err error) (*Stack, error) {
		cancel()
		s.wg.Wait()
		return nil, err
	}
	gw, err := s.receiver(ctx, t, opts)
	if err != nil {
		return fail(err)
	}
	if err := s.startProcessor(ctx, runCtx, t, res, opts); err != nil {
		return fail(err)
	}
	if err := s.startBridge(ctx, runCtx, t, opts); err != nil {
		return fail(err)
	}
	if err := s.startReconciler(ctx, runCtx, t, opts); err != nil {
		return fail(err)
	}
	if err := s.serve(gw, opts); err != nil {
		return fail(err)
	}
	s.ready.Store(true)
	return s, nil
}

// withDefaults is opts with its defaults filled in.
func withDefaults(opts Options) Options {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	if opts.WebhookSecret == "" {
		opts.WebhookSecret = DefaultWebhookSecret
	}
	if opts.Effects == nil {
		opts.Effects = hooks.Registry()
	}
	// A local Stripe stand-in (stripefake, stripe-mock) needs some key, and
	// the reconciler reads it from Parameter Store as in a deployment.
	if opts.APIKey == "" && opts.Env["STRIPE_API_BASE"] != "" {
		opts.APIKey = placeholderAPIKey
	}
	return opts
}

// provisionStack loads the template with opts' overrides and provisions
// its resources and secrets.
func provisionStack(ctx context.Context, opts Options) (*template.Template, *provision.Resources, error) {
	overrides := providerOverrides(opts)
	t, err := template.Load(opts.Template, overrides)
	if err != nil {
		return nil, nil, err
	}
	// The routing (Stripe's EventBridge destination) needs an emulator
	// that runs it; on moto, setting StripeEventSourceName fails here and
	// says so.
	prov := &provision.Provisioner{
		DynamoDB:       dynamodb.NewFromConfig(opts.AWS),
		SQS:            sqs.NewFromConfig(opts.AWS),
		CloudFormation: cloudformation.NewFromConfig(opts.AWS),
		Prefix:         opts.Prefix,
	}
	res, err := prov.Provision(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	if err := seedSecrets(ctx, ssm.NewFromConfig(opts.AWS), t, opts); err != nil {
		return nil, nil, err
	}
	return t, res, nil
}

// functionEnvs resolves each function's environment from the template's,
// with opts.Env over it.
func (s *Stack) functionEnvs(t *template.Template, res *provision.Resources, opts Options) error {
	for _, id := range t.Functions() {
		f, err := t.Function(id)
		if err != nil {
			return err
		}
		env, err := res.Environment(f)
		if err != nil {
			return err
		}
		if id == ReconcilerID && env["RECONCILE_SINCE"] == "" {
			// The emulator forgets everything when it stops, so every local
			// stack starts without a checkpoint: looking back Stripe's full
			// 30 days would ingest a month of a test account's events on
			// each start.
			env["RECONCILE_SINCE"] = DefaultLocalReconcileSince.String()
		}
		for k, v := range opts.Env {
			env[k] = v
		}
		s.FunctionEnv[id] = env
	}
	return nil
}

// receiver is the gateway with the receiver behind its routes.
func (s *Stack) receiver(ctx context.Context, t *template.Template, opts Options) (*gateway.Gateway, error) {
	recvFn, err := t.Function(ReceiverID)
	if err != nil {
		return nil, err
	}
	recv, err := receiverboot.FromEnv(ctx, envOf(s.FunctionEnv[ReceiverID]), opts.AWS, opts.Logger.With(slog.String("lambda", ReceiverID)), opts.Effects)
	if err != nil {
		return nil, err
	}
	gw := &gateway.Gateway{Logger: opts.Logger, Ready: s.ready.Load}
	for _, r := range recvFn.Routes() {
		gw.Routes = append(
			gw.Routes,
			gateway.Route{Method: r.Method, Path: r.Path, Handler: recv.Handle, Timeout: time.Duration(recvFn.Timeout) * time.Second, Function: ReceiverID},
		)
	}
	return gw, nil
}

// startProcessor starts the processor behind its event source mapping.
func (s *Stack) startProcessor(ctx, runCtx context.Context, t *template.Template, res *provision.Resources, opts Options) error {
	procFn, err := t.Function(ProcessorID)
	if err != nil {
		return err
	}
	src, err := procFn.SQS()
	if err != nil {
		return err
	}
	q, ok := res.Queues[src.Queue.LogicalID]
	if !ok {
		return fmt.Errorf("devstack: processor queue %s not provisioned", src.Queue.LogicalID)
	}
	proc, err := processorboot.FromEnv(ctx, envOf(s.FunctionEnv[ProcessorID]), opts.AWS, opts.Logger.With(slog.String("lambda", ProcessorID)), opts.Effects)
	if err != nil {
		return err
	}
	p := &poller.Poller{
		SQS: sqs.NewFromConfig(opts.AWS), QueueURL: q.URL, QueueARN: q.ARN, Source: src,
		Handler: proc.Handle, Function: ProcessorID,
		Timeout: time.Duration(procFn.Timeout) * time.Second,
		Workers: min(src.MaxConcurrency, 4),
		Logger:  opts.Logger,
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		p.Run(runCtx)
	}()
	return nil
}

// serve serves gw on opts.Addr.
func (s *Stack) serve(gw *gateway.Gateway, opts Options) error {
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("devstack: listen on %s: %w", opts.Addr, err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.server = &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			opts.Logger.Error("gateway stopped", slog.String("error", err.Error()))
		}
	}()
	return nil
}

// Close stops serving and polling, letting in-flight work finish.
func (s *Stack) Close() {
	s.ready.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s.server != nil {
		_ = s.server.Shutdown(ctx)
	}
	s.cancel()
	s.wg.Wait()
}

// startBridge runs the bridge behind its ingress queue, as Lambda's event
// source mapping would, when the template has it (StripeEventSourceName
// set).
func (s *Stack) startBridge(ctx, runCtx context.Context, t *template.Template, opts Options) error {
	fn, err := t.Function(BridgeID)
	if err != nil {
		return nil
	}
	src, err := fn.SQS()
	if err != nil {
		return err
	}
	q, ok := s.Resources.Queues[src.Queue.LogicalID]
	if !ok {
		return fmt.Errorf("devstack: bridge queue %s not provisioned", src.Queue.LogicalID)
	}
	log := opts.Logger.With(slog.String("lambda", BridgeID))
	h, err := bridgeboot.FromEnv(ctx, envOf(s.FunctionEnv[BridgeID]), opts.AWS, log, opts.Effects)
	if err != nil {
		return err
	}
	p := &poller.Poller{
		SQS: sqs.NewFromConfig(opts.AWS), QueueURL: q.URL, QueueARN: q.ARN, Source: src,
		Handler: h.Handle, Function: BridgeID,
		Timeout: time.Duration(fn.Timeout) * time.Second,
		Workers: min(src.MaxConcurrency, 2),
		Logger:  opts.Logger,
	}
	log.InfoContext(ctx, "bridge polling the ingress queue", slog.String("partner_source", s.FunctionEnv[BridgeID]["EVENTBRIDGE_SOURCE"]))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		p.Run(runCtx)
	}()
	return nil
}

// placeholderAPIKey is the API key given to a local Stripe stand-in when no
// real key is configured.
const placeholderAPIKey = "sk_test_local_placeholder"

// DefaultLocalReconcileSince is how far back the local reconciler's first
// run looks, unless RECONCILE_SINCE says otherwise.
const DefaultLocalReconcileSince = time.Hour

// startReconciler runs the reconciler on its schedule, one run at a time,
// each with the function's timeout as its deadline, as EventBridge Scheduler
// and Lambda would; or logs once why it does not.
func (s *Stack) startReconciler(ctx, runCtx context.Context, t *template.Template, opts Options) error {
	log := opts.Logger.With(slog.String("lambda", ReconcilerID))
	fn, err := t.Function(ReconcilerID)
	if err != nil {
		log.InfoContext(ctx, "reconciler off: the template has no "+ReconcilerID)
		return nil
	}
	switch {
	case opts.ReconcileEvery < 0:
		log.InfoContext(ctx, "reconciler off: turned off by its schedule override")
		return nil
	case opts.APIKey == "":
		log.InfoContext(
			ctx,
			"reconciler off: no Stripe API key (set STRIPE_API_KEY to a test-mode restricted key, or STRIPE_API_BASE to a local Stripe stand-in)",
		)
		return nil
	}
	every := opts.ReconcileEvery
	if every == 0 {
		expr, ok := fn.Schedule()
		if !ok {
			log.InfoContext(ctx, "reconciler off: "+ReconcilerID+" has no schedule")
			return nil
		}
		if every, err = ScheduleInterval(expr); err != nil {
			log.WarnContext(ctx, "reconciler off: its schedule cannot run locally (override it with -reconcile-every)", slog.String("error", err.Error()))
			return nil
		}
	}
	rec, err := reconcilerboot.FromEnv(ctx, envOf(s.FunctionEnv[ReconcilerID]), opts.AWS, log, opts.Effects)
	if err != nil {
		return err
	}
	timeout := time.Duration(fn.Timeout) * time.Second
	s.ReconcileEvery = every
	log.InfoContext(ctx, "reconciler scheduled", slog.Duration("every", every), slog.Duration("timeout", timeout))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			invCtx, cancel := context.WithTimeout(runCtx, timeout)
			// The run logs its own line, errors included.
			_ = rec.Handle(invCtx, json.RawMessage(`{}`))
			cancel()
		}
	}()
	return nil
}

// ScheduleInterval returns the period of an EventBridge rate expression,
// like rate(10 minutes): reconcile.SchedulePeriod, the reconciler's own
// reading of its schedule.
func ScheduleInterval(expr string) (time.Duration, error) { return reconcile.SchedulePeriod(expr) }

func envOf(m map[string]string) boot.Env {
	return func(k string) string { return m[k] }
}

// seedSecrets stores the local secrets where the template says the functions
// read them, as SecureString parameters, so the local stack reads secrets
// through the same code path as a deployment.
func seedSecrets(ctx context.Context, client *ssm.Client, t *template.Template, opts Options) error {
	put := func(param, value string) error {
		name, ok := t.Parameter(param)
		if !ok || value == "" {
			return nil
		}
		_, err := client.PutParameter(ctx, &ssm.PutParameterInput{
			Name: aws.String(name), Value: aws.String(value),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true),
		})
		if err != nil {
			return fmt.Errorf("devstack: store parameter %s: %w", name, err)
		}
		return nil
	}
	if err := put("WebhookSecretsParameter", opts.WebhookSecret); err != nil {
		return err
	}
	if err := put(connectSecretsParameter, opts.ConnectWebhookSecret); err != nil {
		return err
	}
	for _, name := range provider.Names {
		if name == provider.Stripe {
			continue // WebhookSecretsParameter, above
		}
		if err := put(ProviderSecretsParameter(name), opts.ProviderSecrets[name]); err != nil {
			return err
		}
	}
	senders, err := provider.ParseSenders(opts.Senders)
	if err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	path, _ := t.Parameter(sendersSecretsPath)
	for _, s := range senders {
		if v := opts.ProviderSecrets[s.Name]; v != "" {
			_, err := client.PutParameter(ctx, &ssm.PutParameterInput{
				Name: aws.String(path + "/" + s.Name), Value: aws.String(v),
				Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true),
			})
			if err != nil {
				return fmt.Errorf("devstack: store sender %s's secrets: %w", s.Name, err)
			}
		}
	}
	return put("ApiKeyParameter", opts.APIKey)
}

// ProviderSecretsParameter is the template parameter naming a provider's
// secrets parameter: GithubWebhookSecretsParameter, ...
func ProviderSecretsParameter(name string) string {
	return strings.ToUpper(name[:1]) + name[1:] + "WebhookSecretsParameter"
}

// The template parameters declaring the senders and naming the path of
// their secrets.
const (
	sendersParameter   = "GenericSenders"
	sendersSecretsPath = "GenericSendersSecretsPath"
)

// connectSecretsParameter is the template parameter naming a Connect
// endpoint's secrets parameter.
const connectSecretsParameter = "StripeConnectWebhookSecretsParameter"

// DefaultPrefix is the prefix of make dev's stack.
const DefaultPrefix = "webhook-inbox-local"

// providerOverrides returns opts.Overrides with the secrets parameter of
// each provider that has secrets set to the stage's own name, unless it
// is set already: the template's conditions then serve it, as a
// deployment with the parameter set would. A stack of another prefix
// than DefaultPrefix (a test's) keeps every secret it stores, Stripe's
// signing secrets and API key included, under a path of its own
// (/webhook-inbox/<stage>/<prefix>/...): stacks sharing one emulator then
// never overwrite each other's secrets.
func providerOverrides(opts Options) map[string]string {
	out := maps.Clone(opts.Overrides)
	if out == nil {
		out = map[string]string{}
	}
	stage := out["Stage"]
	if stage == "" {
		stage = "dev"
	}
	base := "/webhook-inbox/" + stage + "/"
	if opts.Prefix != "" && opts.Prefix != DefaultPrefix {
		base += opts.Prefix + "/"
		for param, name := range map[string]string{"WebhookSecretsParameter": "stripe/webhook-secrets", "ApiKeyParameter": "stripe/api-key"} {
			if out[param] == "" {
				out[param] = base + name
			}
		}
	}
	if opts.ConnectWebhookSecret != "" && out[connectSecretsParameter] == "" {
		out[connectSecretsParameter] = base + "stripe/connect-webhook-secrets"
	}
	if opts.Senders != "" && out[sendersParameter] == "" {
		out[sendersParameter] = opts.Senders
	}
	if out[sendersParameter] != "" && out[sendersSecretsPath] == "" {
		out[sendersSecretsPath] = base + "senders"
	}
	for _, name := range provider.Names {
		if name == provider.Stripe {
			continue // always served
		}
		param := ProviderSecretsParameter(name)
		if opts.ProviderSecrets[name] != "" && out[param] == "" {
			out[param] = base + name + "/webhook-secrets"
		}
	}
	return out
}

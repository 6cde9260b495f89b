package failpoints

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/bridgeboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/redeliver"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/gateway"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/githubfake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// wiring is what start builds a case's stack from, step by step: the
// world's template, each function's AWS configuration (through its
// proxy) and environment, and the effects every function is given.
type wiring struct {
	s       *stack
	tmpl    *template.Template
	awsFor  map[string]aws.Config
	fenv    map[string]map[string]string
	effects *effect.Registry
	// downURL is the team's application; procDown is it as the
	// processor reaches it (through its proxy).
	downURL, procDown string
	gw                *gateway.Gateway
}

// start provisions and starts a case's stack for w, whose provider's
// handled type is typ, with the faults of plan.
func (e *env) start(ctx context.Context, w World, typ string, plan []Fault, order Order) (*stack, error) {
	s := &stack{w: w, order: order, prefix: "fp" + newID()[:10], direct: e.direct, logs: map[string]*logs{}}
	if w.Audit {
		s.auditEnded = make(chan struct{})
	}
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
	wr := &wiring{s: s, tmpl: tmpl}
	if wr.awsFor, err = s.proxies(ctx, e.endpoints); err != nil {
		return nil, err
	}
	if err := wr.standIns(); err != nil {
		return nil, err
	}
	if err := wr.environments(typ); err != nil {
		return nil, err
	}
	if err := wr.receiver(ctx); err != nil {
		return nil, err
	}
	p, err := wr.processor(ctx)
	if err != nil {
		return nil, err
	}
	handle, runs, err := wr.reconciler(ctx)
	if err != nil {
		return nil, err
	}
	var bp *poller.Poller
	if w.Bridge {
		if bp, err = wr.bridge(ctx); err != nil {
			return nil, err
		}
	}
	s.run(p, bp, handle, runs)
	ok = true
	return s, nil
}

// proxies gives each function's AWS clients, and its outside calls, a
// proxy of its own that the tap decides for.
func (s *stack) proxies(ctx context.Context, endpoints emulator.Endpoints) (map[string]aws.Config, error) {
	awsFor := map[string]aws.Config{}
	for _, f := range []string{functionReceiver, functionProcessor, functionReconciler, functionESM, functionBridge} {
		p, err := faultproxy.New(endpoints)
		if err != nil {
			return nil, err
		}
		p.Decide = s.tap.decider(f)
		srv := s.serve(p)
		cfg, err := emulator.Config(ctx, emulator.One(srv.URL))
		if err != nil {
			return nil, err
		}
		awsFor[f] = cfg
		s.logs[f] = &logs{}
	}
	return awsFor, nil
}

// outside is the address through which function reaches target, an
// outside service, through a proxy the tap decides for.
func (s *stack) outside(function, service, target string) (string, error) {
	p, err := faultproxy.NewHTTP(service, target)
	if err != nil {
		return "", err
	}
	p.Decide = s.tap.decider(function)
	return s.serve(p).URL, nil
}

// standIns starts the world's stand-ins: Stripe's API, the team's
// application (and the processor's effects calling it), and API
// Gateway's.
func (wr *wiring) standIns() error {
	s, w := wr.s, wr.s.w
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
	wr.downURL = s.serve(s.down).URL
	var err error
	if wr.procDown, err = s.outside(functionProcessor, serviceApp, wr.downURL); err != nil {
		return err
	}
	wr.effects = worldEffects(s.res.Tables["MirrorTable"], wr.procDown+"/notify", w.Provider)
	wr.gw = &gateway.Gateway{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Ready: func() bool { return true }}
	s.gateway = s.serve(wr.gw)
	return nil
}

// environments builds each function's environment from the template's,
// with the world's addresses and settings.
func (wr *wiring) environments(typ string) error {
	s, w, tmpl := wr.s, wr.s.w, wr.tmpl
	fenv := map[string]map[string]string{}
	ids := []string{receiverID, processorID, reconcilerID}
	if w.Bridge {
		ids = append(ids, bridgeID)
	}
	for _, id := range ids {
		f, err := tmpl.Function(id)
		if err != nil {
			return err
		}
		if fenv[id], err = s.res.Environment(f); err != nil {
			return err
		}
	}
	if w.Provider != event.ProviderStripe {
		fenv[receiverID][boot.ProviderTypesVariable(w.Provider)] = typ
	}
	wr.fenv = fenv
	if err := wr.processorEnv(); err != nil {
		return err
	}
	return wr.reconcilerEnv()
}

// processorEnv points the processor at Stripe's API (through its own
// proxy) for payloads not stored, and the team's application for the
// effects.
func (wr *wiring) processorEnv() error {
	s, w, fenv, procDown := wr.s, wr.s.w, wr.fenv, wr.procDown
	procStripe, err := s.outside(functionProcessor, "stripe", s.stripe.URL)
	if err != nil {
		return err
	}
	fenv[processorID]["STRIPE_API_BASE"] = procStripe
	if !w.APIKey {
		fenv[processorID]["STRIPE_API_KEY_PARAMETER"] = ""
	}
	if w.Provider == event.ProviderStripe {
		fenv[processorID]["FORWARD_URL"] = procDown + "/forward"
		fenv[processorID]["FORWARD_SECRET"] = "fwd_failpoints_local_only"
	}
	return nil
}

// reconcilerEnv points the reconciler at Stripe's API, and GitHub's
// (started here, redelivering to the gateway) with its hook.
func (wr *wiring) reconcilerEnv() error {
	s, w, fenv := wr.s, wr.s.w, wr.fenv
	recStripe, err := s.outside(functionReconciler, "stripe", s.stripe.URL)
	if err != nil {
		return err
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

	if w.Retry.Redelivers {
		s.github = githubfake.Start(githubfake.Config{Token: githubToken, Secret: providerSecret, Target: s.gateway.URL + "/webhooks/" + w.Provider})
		s.github.AddHook(githubfake.RepoHook("acme", "shop", 1))
		recGitHub, err := s.outside(functionReconciler, "github", s.github.URL)
		if err != nil {
			return err
		}
		fenv[reconcilerID]["GITHUB_HOOKS"] = githubHook
		fenv[reconcilerID]["GITHUB_API_TOKEN"] = githubToken
		fenv[reconcilerID]["GITHUB_API_BASE"] = recGitHub
		fenv[reconcilerID]["GITHUB_REDELIVERY_BACKOFF"] = scaled(redeliver.DefaultRedeliveryBackoff).String()
	}
	return nil
}

// envOf is function id's environment, as package boot reads it.
func (wr *wiring) envOf(id string) boot.Env {
	m := wr.fenv[id]
	return func(k string) string { return m[k] }
}

// logger is function f's logger, into its collected lines.
func (wr *wiring) logger(f string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(wr.s.logs[f], nil))
}

// receiver puts the receiver behind API Gateway's stand-in, one
// invocation at a time.
func (wr *wiring) receiver(ctx context.Context) error {
	s := wr.s
	recvFn, _ := wr.tmpl.Function(receiverID)
	recv, err := receiverboot.FromEnv(ctx, wr.envOf(receiverID), wr.awsFor[functionReceiver], wr.logger(functionReceiver), wr.effects)
	if err != nil {
		return err
	}
	// One invocation of a function at a time, as one Lambda instance
	// runs them: a killed process is its invocation's alone.
	var recvLock sync.Mutex
	for _, r := range recvFn.Routes() {
		wr.gw.Routes = append(wr.gw.Routes, gateway.Route{Method: r.Method, Path: r.Path, Function: receiverID,
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
	return nil
}

// sqsHandler is one function's handler of an SQS batch.
type sqsHandler interface {
	Handle(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
}

// eventSource is the event source polling the queue of function id
// (the tap's function, whose template function is fn) for h, as Lambda
// runs it: one invocation at a time, and, when the tap killed the
// function's process, an invocation that failed with killed.
func (wr *wiring) eventSource(id, function string, fn template.Function, h sqsHandler, killed string) (*poller.Poller, error) {
	src, err := fn.SQS()
	if err != nil {
		return nil, err
	}
	var lock sync.Mutex
	q := wr.s.res.Queues[src.Queue.LogicalID]
	return &poller.Poller{
		SQS: sqs.NewFromConfig(wr.awsFor[functionESM]), QueueURL: q.URL, QueueARN: q.ARN, Source: src,
		Function: id, Timeout: time.Duration(fn.Timeout) * time.Second, Workers: 1,
		Logger: wr.logger(functionESM),
		Handler: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			lock.Lock()
			defer lock.Unlock()
			resp, err := h.Handle(ctx, ev)
			if wr.s.tap.ended(function) {
				return events.SQSEventResponse{}, errors.New(killed)
			}
			return resp, err
		},
	}, nil
}

// processor is the processor behind its queue's event source.
func (wr *wiring) processor(ctx context.Context) (*poller.Poller, error) {
	procFn, _ := wr.tmpl.Function(processorID)
	if _, err := procFn.SQS(); err != nil {
		return nil, err
	}
	proc, err := processorboot.FromEnv(ctx, wr.envOf(processorID), wr.awsFor[functionProcessor], wr.logger(functionProcessor), wr.effects)
	if err != nil {
		return nil, err
	}
	return wr.eventSource(processorID, functionProcessor, procFn, proc, "failpoints: the processor's process was killed")
}

// reconciler is the reconciler's handler and the payloads of each of its
// runs: with the audit (Audit worlds) first, whose effects call the
// application through the reconciler's own proxy.
func (wr *wiring) reconciler(ctx context.Context) (func(context.Context, json.RawMessage) error, []json.RawMessage, error) {
	s := wr.s
	rec, err := reconcilerboot.FromEnv(ctx, wr.envOf(reconcilerID), wr.awsFor[functionReconciler], wr.logger(functionReconciler), wr.effects)
	if err != nil {
		return nil, nil, err
	}
	runs := []json.RawMessage{json.RawMessage(`{}`)}
	handle := func(ctx context.Context, payload json.RawMessage) error { return rec.Handle(ctx, payload) }
	if s.w.Audit {
		recDown, err := s.outside(functionReconciler, serviceApp, wr.downURL)
		if err != nil {
			return nil, nil, err
		}
		auditEffects := worldEffects(s.res.Tables["MirrorTable"], recDown+"/notify", s.w.Provider)
		auditEffects.On(&notify{client: &http.Client{Timeout: 5 * time.Second}, url: recDown + "/notify"}, "*")
		handle = reconcilerboot.Handler(reconcilerboot.AuditFromEnv(wr.envOf(reconcilerID), wr.awsFor[functionReconciler], auditEffects), wr.awsFor[functionReconciler], wr.logger(functionReconciler), rec, auditEffects)
		runs = []json.RawMessage{json.RawMessage(`{"run":"audit"}`), json.RawMessage(`{}`)}
	}
	return handle, runs, nil
}

// bridge is the bridge behind the ingress queue, polled as the
// processor's is.
func (wr *wiring) bridge(ctx context.Context) (*poller.Poller, error) {
	bridgeFn, err := wr.tmpl.Function(bridgeID)
	if err != nil {
		return nil, err
	}
	bsrc, err := bridgeFn.SQS()
	if err != nil {
		return nil, err
	}
	bh, err := bridgeboot.FromEnv(ctx, wr.envOf(bridgeID), wr.awsFor[functionBridge], wr.logger(functionBridge), wr.effects)
	if err != nil {
		return nil, err
	}
	wr.s.ingress = wr.s.res.Queues[bsrc.Queue.LogicalID].URL
	return wr.eventSource(bridgeID, functionBridge, bridgeFn, bh, "failpoints: the bridge's process was killed")
}

// run starts the event sources and the reconciler on its schedule.
func (s *stack) run(p, bp *poller.Poller, handle func(context.Context, json.RawMessage) error, runs []json.RawMessage) {
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
		s.reconcileLoop(runCtx, handle, runs)
	}()
}

// reconcileLoop runs the reconciler every reconcileEvery (or sooner, on
// runSoon) until ctx ends; in Audit worlds, an audit first, as the case
// starts: it races the event in flight (but with OrderEventFirst), and
// closes auditEnded when it ends.
func (s *stack) reconcileLoop(runCtx context.Context, handle func(context.Context, json.RawMessage) error, runs []json.RawMessage) {
	tick := time.NewTicker(reconcileEvery)
	defer tick.Stop()
	if s.w.Audit {
		if s.order != OrderEventFirst {
			invCtx, cancel := context.WithTimeout(runCtx, reconcileTimeout)
			_ = handle(invCtx, runs[0])
			cancel()
			s.tap.ended(functionReconciler)
		}
		close(s.auditEnded)
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
}

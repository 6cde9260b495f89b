package cost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/bridgeboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// setup provisions the template's resources and builds the handlers with
// shared/boot, from the environment the template gives each function, as
// the local stack does, each with an AWS configuration the recorder
// instruments.
func (m *meter) setup(ctx context.Context) error {
	if err := m.load(ctx); err != nil {
		return err
	}
	if err := m.provision(ctx); err != nil {
		return err
	}
	if err := m.functionEnvs(); err != nil {
		return err
	}
	if err := m.routes(); err != nil {
		return err
	}
	if err := m.handlers(ctx); err != nil {
		return err
	}
	m.created = time.Now().Add(-30 * time.Minute).Unix()
	return nil
}

// load reads the template (as deployed, and full), its schema, and the
// AWS configuration the meter runs against.
func (m *meter) load(ctx context.Context) error {
	var err error
	if m.tmpl, err = template.Load(m.opts.Template, nil); err != nil {
		return err
	}
	if m.full, err = template.Load(m.opts.Template, map[string]string{"StripeEventSourceName": costPartnerSource}); err != nil {
		return err
	}
	if m.schema, err = LoadSchema(m.tmpl); err != nil {
		return err
	}
	if m.opts.AWS != nil {
		m.base = *m.opts.AWS
	} else if m.base, err = emulator.Config(ctx, m.opts.Endpoints); err != nil {
		return err
	}
	return nil
}

// provision provisions the full template's tables and queues under a
// prefix of the meter's own, and the recorder over them.
func (m *meter) provision(ctx context.Context) error {
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	prefix := "cost-" + hex.EncodeToString(nonce[:])
	prov := &provision.Provisioner{DynamoDB: dynamodb.NewFromConfig(m.base), SQS: sqs.NewFromConfig(m.base), Prefix: prefix}
	var err error
	if m.res, err = prov.Provision(ctx, m.full); err != nil {
		return err
	}
	if m.rec, err = NewRecorder(ctx, m.base, m.schema, m.res.Tables); err != nil {
		return err
	}
	if m.opts.Consumed {
		m.rec.AskConsumed()
	}
	m.sqs = sqs.NewFromConfig(m.base)
	return nil
}

// functionEnvs gives each function the environment the template gives
// it, with the meter's secrets and stand-ins, and reads its timeout.
func (m *meter) functionEnvs() error {
	m.env = map[string]map[string]string{}
	m.timeouts = map[string]time.Duration{}
	for _, id := range m.full.Functions() {
		f, err := m.full.Function(id)
		if err != nil {
			return err
		}
		if m.env[id], err = m.res.Environment(f); err != nil {
			return err
		}
		m.timeouts[id] = time.Duration(f.Timeout) * time.Second
	}
	// The local-only secret variables: the functions read SSM otherwise,
	// once per execution environment, which is not a cost per event.
	m.env[devstack.ReceiverID]["STRIPE_WEBHOOK_SECRET"] = m.secret
	m.env[devstack.ReceiverID][boot.WebhookSecretVariable(provider.GitHub)] = m.githubSecret
	m.env[devstack.ReceiverID][boot.StripeConnectSecretVariable] = connectSecret
	m.env[devstack.ReceiverID][boot.ProviderTypesVariable(provider.GitHub)] = githubType
	// The retried scenario's backoff, scaled down as the drills scale it
	// (the template's is a minute): what a retry writes does not depend
	// on how long it waited.
	m.env[devstack.ProcessorID]["RETRY_BACKOFF_BASE"] = "1s"
	// With a key the processor settles ties from the API, as deployed.
	m.env[devstack.ProcessorID]["STRIPE_API_BASE"], m.env[devstack.ProcessorID]["STRIPE_API_KEY"] = m.api.URL, "rk_test_cost_meter"
	return nil
}

// routes reads the receiver's routes (Stripe's, and /webhooks/{provider}
// for GitHub's) and the processor's queue.
func (m *meter) routes() error {
	recvFn, err := m.tmpl.Function(devstack.ReceiverID)
	if err != nil {
		return err
	}
	routes := recvFn.Routes()
	if len(routes) == 0 {
		return errors.New("cost: the receiver has no HTTP route in the template")
	}
	m.route = routes[0]
	for _, r := range routes {
		if strings.Contains(r.Path, "{provider}") {
			m.githubRoute = r
		}
	}
	if m.githubRoute.Path == "" {
		return errors.New("cost: the receiver has no /webhooks/{provider} route in the template")
	}
	procFn, err := m.tmpl.Function(devstack.ProcessorID)
	if err != nil {
		return err
	}
	if m.source, err = procFn.SQS(); err != nil {
		return err
	}
	m.queue = m.res.Queues[m.source.Queue.LogicalID]
	return nil
}

// handlers builds the receiver, the processor and the bridge with
// shared/boot, each with an AWS configuration the recorder instruments.
func (m *meter) handlers(ctx context.Context) error {
	var err error
	level := m.logLevel(devstack.ReceiverID)
	// The team's effects, as every function gets them, plus one (for
	// every type) that fails once, retryably, for the events the
	// failed-then-retried scenario marks.
	effects := hooks.Registry()
	effects.On(m.failOnce, "*")
	recvCfg, procCfg := m.rec.Instrument(m.base, "receiver"), m.rec.Instrument(m.base, "processor")
	if m.recv, err = receiverboot.FromEnv(ctx, envOf(m.env[devstack.ReceiverID]), recvCfg, m.logs.Logger("receiver", level), effects); err != nil {
		return err
	}
	procLog := m.logs.Logger("processor", m.logLevel(devstack.ProcessorID))
	if m.proc, err = processorboot.FromEnv(ctx, envOf(m.env[devstack.ProcessorID]), procCfg, procLog, effects); err != nil {
		return err
	}
	bridgeFn, err := m.full.Function(devstack.BridgeID)
	if err != nil {
		return err
	}
	if m.ingressSource, err = bridgeFn.SQS(); err != nil {
		return err
	}
	m.ingress = m.res.Queues[m.ingressSource.Queue.LogicalID]
	if m.bridge, err = bridgeboot.FromEnv(ctx, envOf(m.env[devstack.BridgeID]), m.rec.Instrument(m.base, "bridge"), m.logs.Logger("bridge", m.logLevel(devstack.BridgeID)), effects); err != nil {
		return err
	}
	return nil
}

// logLevel is the function's ApplicationLogLevel in the template.
func (m *meter) logLevel(id string) slog.Level {
	lvl := slog.LevelInfo
	_ = lvl.UnmarshalText([]byte(template.Scalar(m.functionProperty(id, "LoggingConfig", "ApplicationLogLevel"))))
	return lvl
}

// functionProperty reads a function property, or a field of a map
// property, with the template's Globals applied as SAM applies them (the
// function's own value wins; maps merge).
func (m *meter) functionProperty(id string, path ...string) any {
	var v any
	t := m.full
	if t == nil {
		t = m.tmpl
	}
	for _, src := range []map[string]any{t.Globals("Function"), resourceProps(t, id)} {
		cur := any(src)
		for _, p := range path {
			mm, _ := cur.(map[string]any)
			cur = mm[p]
		}
		if cur != nil {
			v = cur
		}
	}
	return v
}

func resourceProps(t *template.Template, id string) map[string]any {
	r, _ := t.Resource(id)
	return r.Properties
}

func envOf(m map[string]string) boot.Env { return func(k string) string { return m[k] } }

// failOnce is an effect that fails the first attempt at each marked event
// with an unclassified error, which the processor retries.
type failOnce struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (f *failOnce) Name() string { return "cost-meter-fail-once" }

func (f *failOnce) mark(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids[id] = true
}

func (f *failOnce) Handle(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids[ev.Record.ID] {
		delete(f.ids, ev.Record.ID)
		return nil, errors.New("cost meter: the effect's downstream is unavailable (injected once)")
	}
	return nil, nil
}

package cost

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/bridgeboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/defaults"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/bridge"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/gateway"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// Options configure Measure.
type Options struct {
	// Endpoints are the AWS emulators'.
	Endpoints emulator.Endpoints
	// Template is the path of template.yaml.
	Template string
	// Samples is how many new 2.6 KB events are sampled to tell keys all
	// events share from keys of one event (hot keys); DefaultSamples when
	// zero, and at least 2: one event cannot tell the two apart. A key
	// split into N values (shards) is seen as shared only by more samples
	// than N, and its rate is divided by the values the samples saw, so
	// the samples must outnumber the shards of any key.
	Samples int
	// Rate is the steady rate hot keys are computed for; 3,000 events/s
	// when zero.
	Rate float64
	// Progress receives a line per phase; nil for none.
	Progress io.Writer
	// Consumed makes every DynamoDB request ask for the capacity it
	// consumes (ReturnConsumedCapacity=INDEXES) and fills
	// Report.Consumed with it beside the meter's own units.
	Consumed bool
	// TieRate is the share of events that tie with another event of their
	// object in the same second, each costing one read of the object from
	// Stripe's API (ScenarioTie); DefaultTieRate when zero.
	TieRate float64
	// AWS, when set, is the configuration to measure with instead of the
	// emulator's (Endpoints is then unused): AWS itself, in the account
	// and region of its credentials. The meter provisions its own copy of
	// the template's tables and queues there (named cost-<random>-...)
	// and deletes them when it is done, whatever happened.
	AWS *aws.Config
}

// DefaultSamples is the hot-key sample when Options sets none. 10 were
// enough while every shared key had one value; the store's 16-way sharded
// keys need more: 10 samples see all 10 of their values distinct one run
// in 40 (the key then reads as one event's, a few units a second) and about
// 8 of the 16 otherwise (twice the true rate). 64 see 15.7 of 16 on
// average, and never all distinct.
const DefaultSamples = 64

// Scenario labels, in report order. Each is measured for both sizes.
const (
	ScenarioNew        = "new event, processed"
	ScenarioDupDeliver = "duplicate delivery of a processed event"
	ScenarioDupMessage = "duplicate queue message of a processed event"
	ScenarioRetried    = "failed once (retryable), then retried"
	ScenarioSuperseded = "superseded (older event after a newer one)"
	// ScenarioTie is an event of the same second as the one its object
	// holds: the processor reads the object from Stripe's API (the Stripe
	// stand-in) and commits the API's state.
	ScenarioTie = "same-second tie, settled by Stripe's API"
	// ScenarioEventBridge is ScenarioNew by the other way in: Stripe's
	// EventBridge destination, the bridge behind the ingress queue.
	ScenarioEventBridge = "new event through EventBridge, processed"
)

// Scenarios lists the scenarios in report order.
var Scenarios = []string{ScenarioNew, ScenarioDupDeliver, ScenarioDupMessage, ScenarioRetried, ScenarioSuperseded, ScenarioTie, ScenarioEventBridge}

// DefaultTieRate is the share of events that tie (Options.TieRate) when
// none is given: 0.2. A subscription's renewal sends the mirror five
// events (customer.subscription.updated, invoice.created,
// invoice.finalized, invoice.paid, invoice.payment_succeeded), and Stripe
// creates invoice.paid and invoice.payment_succeeded of one invoice in the
// same second: one tie in five. Checkout's incomplete then active, and a
// failed payment retried at once, add ties; events of customers, products
// and prices seldom share a second. A stream of renewals is the common
// case, so a fifth; -tie-rate prices another.
const DefaultTieRate = 0.2

// costPartnerSource is the partner event source the metered template's
// EventBridge destination is on for: its bridge and ingress queue are
// metered. Nothing here needs the bus or the rule: EventBridge's own
// charge and its sends to the ingress queue are priced from the list.
const costPartnerSource = "aws.partner/stripe.com/ed_test_cost_meter"

// The GitHub scenarios, measured once, with GitHub's own sample delivery
// (GitHubSample): GitHub signs the body only, so the receiver claims each
// body for its delivery id before it stores the event, one write more.
const (
	ScenarioGitHubNew        = "new GitHub delivery, processed"
	ScenarioGitHubRedelivery = "GitHub redelivery of a processed event"
	ScenarioGitHubReplay     = "captured GitHub body under a fresh delivery id"
)

// ScenarioConnectFirst is the first event of a connected account (Stripe
// Connect) the receiver sees, signed with the Connect endpoint's secret:
// a new event, plus the account's item (store.Accounts), written once per
// account and container. Measured once, at the small size.
const ScenarioConnectFirst = "first event of a new connected account, processed"

// connectSecret signs ScenarioConnectFirst's delivery.
const connectSecret = "cost meter connect secret"

// GitHubScenarios lists the GitHub scenarios in report order.
var GitHubScenarios = []string{ScenarioGitHubNew, ScenarioGitHubRedelivery, ScenarioGitHubReplay}

// GitHubSample is the GitHub delivery the GitHub scenarios send, relative
// to the template's directory: inboxctl send's sample of issues.opened.
const GitHubSample = "internal/cli/testdata/samples/github/issues.opened.json"

// githubType is GitHubSample's type, which the receiver is told to handle.
const githubType = "issues.opened"

const (
	labelReconcile    = "reconciler comparison"
	labelReconcileRun = "reconciler run"
	labelSetup        = "setup"
	labelSample       = "hot-key sample "
)

func label(scenario string, size EventSize) string { return scenario + " / " + size.Name }

// meter is one measurement's state.
type meter struct {
	opts Options
	// tmpl is the template as deployed by default; full has Stripe's
	// EventBridge destination on too (costPartnerSource), which only adds
	// resources: what is provisioned and where functions are read from.
	// The fixed monthly cost is the default template's.
	tmpl, full *template.Template
	schema     *Schema
	rec        *Recorder
	logs       *Logs
	base       aws.Config
	res        *provision.Resources
	env        map[string]map[string]string
	sqs        *sqs.Client // unrecorded: stands in for Lambda's event source mapping
	queue      provision.Queue
	source     template.SQSSource
	route      template.HTTPRoute
	recv       *receiver.Handler
	proc       *processor.Processor
	bridge     *bridge.Handler
	ingress    provision.Queue
	// ingressSource is the bridge's event source mapping.
	ingressSource template.SQSSource
	timeouts      map[string]time.Duration
	failOnce      *failOnce
	secret        string
	// githubSecret signs the GitHub scenarios' deliveries; githubRoute
	// is the route they are posted to.
	githubSecret string
	githubRoute  template.HTTPRoute
	created      int64
	// api is the processor's Stripe API; apiReads counts its reads in
	// ScenarioTie, per size.
	api      *stripefake.Server
	apiReads map[string]int
	bodies   [][]byte       // every event delivered, for the reconciler
	bytes    map[string]int // each size's payload bytes
	// lastMessage is the body of the last queue message processed.
	lastMessage string

	recvMs, procMs []float64 // durations of new events' invocations
	bridgeMs       []float64
	// envelopes is each size's EventBridge event (its detail the event),
	// in bytes: what EventBridge and SQS bill in 64 KB chunks.
	envelopes map[string]int
}

// Measure runs the scenarios against the emulator and returns the report.
func Measure(ctx context.Context, opts Options) (*Report, error) {
	switch {
	case opts.Samples <= 0:
		opts.Samples = DefaultSamples
	case opts.Samples == 1:
		opts.Samples = 2
	}
	defaults.Set(&opts.Rate, 3000)
	defaults.Set(&opts.TieRate, DefaultTieRate)
	m := &meter{opts: opts, logs: &Logs{}, secret: devstack.DefaultWebhookSecret, githubSecret: "cost meter github secret",
		failOnce: &failOnce{ids: map[string]bool{}}, bytes: map[string]int{}, envelopes: map[string]int{}, apiReads: map[string]int{}}
	if opts.AWS != nil {
		// Provisioned here, so deleted here, even after a failure.
		defer m.teardown(context.WithoutCancel(ctx))
	}
	// The processor's Stripe API: it serves the objects the tie scenario
	// reads.
	m.api = stripefake.New()
	defer m.api.Close()
	if err := m.setup(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Rate: opts.Rate, Samples: opts.Samples, Sizes: []EventSize{Small, Large}, Against: m.against(), TieRate: opts.TieRate}
	for _, size := range rep.Sizes {
		m.progress("scenarios, %s %s", size.Name, size.Type)
		if err := m.scenarios(ctx, size); err != nil {
			return nil, fmt.Errorf("cost: %s: %w", size.Name, err)
		}
	}
	m.progress("GitHub")
	if err := m.github(ctx); err != nil {
		return nil, fmt.Errorf("cost: GitHub: %w", err)
	}
	m.progress("Connect")
	if err := m.connect(ctx); err != nil {
		return nil, fmt.Errorf("cost: Connect: %w", err)
	}
	m.progress("hot keys: %d new %s events", opts.Samples, Small.Name)
	for i := range opts.Samples {
		m.label(fmt.Sprintf("%s%d", labelSample, i))
		if err := m.newEvent(ctx, Small, nil); err != nil {
			return nil, fmt.Errorf("cost: hot-key sample %d: %w", i, err)
		}
	}
	m.progress("reconciler")
	run, err := m.reconciler(ctx)
	if err != nil {
		return nil, err
	}
	m.progress("audit")
	if rep.Audit, err = m.audit(ctx); err != nil {
		return nil, err
	}
	if err := m.fill(rep, run); err != nil {
		return nil, err
	}
	if opts.Consumed {
		for _, size := range rep.Sizes {
			for _, sc := range Scenarios {
				l := label(sc, size)
				rep.Consumed = append(rep.Consumed, consumption(l, m.rec.Calls(l)))
			}
		}
		rep.Consumed = append(rep.Consumed, consumption(labelReconcileRun, m.rec.Calls(labelReconcileRun)))
	}
	return rep, nil
}

// against names what the meter measured against, for the report.
func (m *meter) against() string {
	if m.opts.AWS != nil {
		return "AWS, region " + m.opts.AWS.Region + ": the reported units are DynamoDB's own"
	}
	return "the emulator at " + m.opts.Endpoints.For("DynamoDB") + ": the reported units are the emulator's, not DynamoDB's (package cost says why)"
}

// teardown deletes what setup provisioned on AWS: the template's tables
// and queues under the meter's prefix, and the recorder's scratch tables.
// It reports what it could not delete, to delete by hand.
func (m *meter) teardown(ctx context.Context) {
	if m.res == nil {
		return
	}
	db, q := dynamodb.NewFromConfig(m.base), sqs.NewFromConfig(m.base)
	tables := slices.Collect(maps.Values(m.res.Tables))
	if m.rec != nil {
		tables = append(tables, slices.Collect(maps.Values(m.rec.scratch))...)
	}
	for _, t := range tables {
		if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)}); err != nil {
			m.progress("could not delete table %s (delete it by hand): %v", t, err)
		}
	}
	for _, qu := range m.res.Queues {
		if _, err := q.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(qu.URL)}); err != nil {
			m.progress("could not delete queue %s (delete it by hand): %v", qu.URL, err)
		}
	}
	m.progress("deleted the meter's %d table(s) and %d queue(s)", len(tables), len(m.res.Queues))
}

func (m *meter) progress(format string, args ...any) {
	if m.opts.Progress != nil {
		fmt.Fprintf(m.opts.Progress, "cost: "+format+"\n", args...)
	}
}

func (m *meter) label(l string) {
	m.rec.SetLabel(l)
	m.logs.SetLabel(l)
}

// setup provisions the template's resources and builds the handlers with
// shared/boot, from the environment the template gives each function, as
// the local stack does, each with an AWS configuration the recorder
// instruments.
func (m *meter) setup(ctx context.Context) error {
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
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	prefix := "cost-" + hex.EncodeToString(nonce[:])
	prov := &provision.Provisioner{DynamoDB: dynamodb.NewFromConfig(m.base), SQS: sqs.NewFromConfig(m.base), Prefix: prefix}
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
	m.created = time.Now().Add(-30 * time.Minute).Unix()
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

// scenarios measures every scenario for one event size.
func (m *meter) scenarios(ctx context.Context, size EventSize) error {
	// A new event.
	m.label(label(ScenarioNew, size))
	var first delivered
	if err := m.newEvent(ctx, size, &first); err != nil {
		return err
	}

	// The same delivery again: the provider retried, or sent it twice.
	m.label(label(ScenarioDupDeliver, size))
	if status, err := m.deliver(ctx, first.body, false); err != nil || status != http.StatusOK {
		return fmt.Errorf("duplicate delivery: status %d: %v", status, err)
	}
	if _, _, err := m.process(ctx, 0, false); err != nil {
		return err
	}

	// The same queue message again: SQS delivers at least once.
	m.label(label(ScenarioDupMessage, size))
	if _, err := m.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(m.queue.URL), MessageBody: aws.String(first.message)}); err != nil {
		return err
	}
	if n, _, err := m.process(ctx, 5, false); err != nil || n != 1 {
		return fmt.Errorf("duplicate message: processed %d: %v", n, err)
	}

	// A new event whose effect fails once, then succeeds on the retry.
	m.label(label(ScenarioRetried, size))
	id := stripefixture.NewID("evt_")
	m.failOnce.mark(id)
	body, err := size.build(id, stripefixture.NewID("sub_"), stripefixture.NewID("cus_"), m.created)
	if err != nil {
		return err
	}
	if status, err := m.deliver(ctx, body, false); err != nil || status != http.StatusOK {
		return fmt.Errorf("retried event: status %d: %v", status, err)
	}
	if n, failed, err := m.process(ctx, 5, false); err != nil || n != 1 || failed != 1 {
		return fmt.Errorf("retried event: first attempt processed %d, failed %d: %v", n, failed, err)
	}
	// The processor delayed the retry (ChangeMessageVisibility); wait for
	// it as the event source mapping would.
	deadline := time.Now().Add(time.Minute)
	for {
		n, failed, err := m.process(ctx, 5, false)
		if err != nil {
			return err
		}
		if n == 1 && failed == 0 {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("retried event: not processed again within a minute")
		}
	}

	// An older event of an object arriving after a newer one.
	m.label(labelSetup)
	object, customer := stripefixture.NewID("sub_"), stripefixture.NewID("cus_")
	newer, err := size.build(stripefixture.NewID("evt_"), object, customer, m.created+60)
	if err != nil {
		return err
	}
	if err := m.deliverAndProcess(ctx, newer, false); err != nil {
		return fmt.Errorf("superseded: the newer event: %w", err)
	}
	m.label(label(ScenarioSuperseded, size))
	older, err := size.build(stripefixture.NewID("evt_"), object, customer, m.created)
	if err != nil {
		return err
	}
	if err := m.deliverAndProcess(ctx, older, false); err != nil {
		return err
	}

	// Two events of one object in the same second: the second reads the
	// object from Stripe's API.
	m.label(labelSetup)
	object, customer = stripefixture.NewID("sub_"), stripefixture.NewID("cus_")
	applied, err := size.build(stripefixture.NewID("evt_"), object, customer, m.created)
	if err != nil {
		return err
	}
	if err := m.deliverAndProcess(ctx, applied, false); err != nil {
		return fmt.Errorf("tie: the first event: %w", err)
	}
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(applied, &ev); err != nil {
		return err
	}
	if err := m.api.PutObject("", ev.Data.Object); err != nil {
		return err
	}
	m.label(label(ScenarioTie, size))
	tie, err := size.build(stripefixture.NewID("evt_"), object, customer, m.created)
	if err != nil {
		return err
	}
	reads := len(m.api.Retrievals())
	if err := m.deliverAndProcess(ctx, tie, false); err != nil {
		return fmt.Errorf("tie: %w", err)
	}
	if m.apiReads[size.Name] = len(m.api.Retrievals()) - reads; m.apiReads[size.Name] != 1 {
		return fmt.Errorf("tie: %d reads of the object from the API, want 1", m.apiReads[size.Name])
	}

	// A new event by Stripe's EventBridge destination.
	m.label(label(ScenarioEventBridge, size))
	return m.newEventByEventBridge(ctx, size)
}

// newEventByEventBridge has a new event of size arrive as Stripe's
// EventBridge destination delivers it: the EventBridge event (detail the
// Stripe event, compact, as EventBridge re-serializes it) on the ingress
// queue, handed to the bridge as the event source mapping would, then
// processed. EventBridge's own send to the queue is not an SDK call of
// ours: it is unrecorded here and priced from the list.
func (m *meter) newEventByEventBridge(ctx context.Context, size EventSize) error {
	body, err := size.build(stripefixture.NewID("evt_"), stripefixture.NewID("sub_"), stripefixture.NewID("cus_"), m.created)
	if err != nil {
		return err
	}
	m.bodies = append(m.bodies, body)
	var detail bytes.Buffer
	if err := json.Compact(&detail, body); err != nil {
		return err
	}
	env, err := json.Marshal(map[string]any{
		"version": "0", "id": newRequestID(), "detail-type": size.Type, "source": costPartnerSource,
		"account": m.env[devstack.BridgeID]["EVENTBRIDGE_ACCOUNT"], "time": time.Now().UTC().Format(time.RFC3339),
		"region": template.Region, "resources": []string{}, "detail": json.RawMessage(detail.Bytes()),
	})
	if err != nil {
		return err
	}
	m.envelopes[size.Name] = len(env)
	if _, err := m.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(m.ingress.URL), MessageBody: aws.String(string(env))}); err != nil {
		return err
	}
	out, err := m.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(m.ingress.URL), MaxNumberOfMessages: 1, WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	}, poller.LongPoll)
	if err != nil || len(out.Messages) != 1 {
		return fmt.Errorf("ingress queue: got %d messages: %v", len(out.Messages), err)
	}
	p := &poller.Poller{QueueARN: m.ingress.ARN}
	ictx, cancel := m.invocation(ctx, devstack.BridgeID)
	defer cancel()
	spent, start := m.rec.Spent("bridge"), time.Now()
	resp, err := m.bridge.Handle(ictx, p.Event(out.Messages))
	m.bridgeMs = append(m.bridgeMs, ms(time.Since(start)-(m.rec.Spent("bridge")-spent)))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		return fmt.Errorf("bridge: %+v, %v", resp.BatchItemFailures, err)
	}
	if _, err := m.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.ingress.URL), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
		return err
	}
	if n, failed, err := m.process(ctx, 5, false); err != nil || n != 1 || failed != 0 {
		return fmt.Errorf("processed %d, failed %d: %v", n, failed, err)
	}
	return nil
}

// github measures the GitHub scenarios: a new delivery, processed; its
// redelivery; and its body under a fresh delivery id, which the receiver
// refuses as a replay.
func (m *meter) github(ctx context.Context) error {
	body, err := os.ReadFile(filepath.Join(filepath.Dir(m.opts.Template), filepath.FromSlash(GitHubSample)))
	if err != nil {
		return err
	}
	m.bytes[labelGitHub] = len(body)
	id := newDeliveryID()
	m.label(ScenarioGitHubNew)
	if status, err := m.deliverGitHub(ctx, body, id); err != nil || status != http.StatusOK {
		return fmt.Errorf("new delivery: status %d: %v", status, err)
	}
	if n, failed, err := m.process(ctx, 5, false); err != nil || n != 1 || failed != 0 {
		return fmt.Errorf("new delivery: processed %d, failed %d: %v", n, failed, err)
	}
	m.label(ScenarioGitHubRedelivery)
	if status, err := m.deliverGitHub(ctx, body, id); err != nil || status != http.StatusOK {
		return fmt.Errorf("redelivery: status %d: %v", status, err)
	}
	m.label(ScenarioGitHubReplay)
	if status, err := m.deliverGitHub(ctx, body, newDeliveryID()); err != nil || status != http.StatusBadRequest {
		return fmt.Errorf("replay: status %d, want 400: %v", status, err)
	}
	return nil
}

// connect measures ScenarioConnectFirst: a connected account's first
// event, delivered on the Connect endpoint's secret and processed.
func (m *meter) connect(ctx context.Context) error {
	body, err := stripefixture.Build(Small.Type, stripefixture.Options{ID: stripefixture.NewID("evt_"), Customer: stripefixture.NewID("cus_"),
		Created: m.created, Set: Small.set, Account: stripefixture.NewID("acct_")})
	if err != nil {
		return err
	}
	m.label(ScenarioConnectFirst)
	if status, err := m.deliverWith(ctx, body, connectSecret, false); err != nil || status != http.StatusOK {
		return fmt.Errorf("status %d: %v", status, err)
	}
	if n, failed, err := m.process(ctx, 5, false); err != nil || n != 1 || failed != 0 {
		return fmt.Errorf("processed %d, failed %d: %v", n, failed, err)
	}
	return nil
}

// labelGitHub labels GitHubSample's size.
const labelGitHub = "GitHub"

// newDeliveryID is a fresh delivery id in GitHub's shape, a GUID.
func newDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// deliverGitHub signs body as GitHub does and hands it to the receiver as
// API Gateway would, on /webhooks/github.
func (m *meter) deliverGitHub(ctx context.Context, body []byte, id string) (int, error) {
	path := strings.Replace(m.githubRoute.Path, "{provider}", provider.GitHub, 1)
	req := httptest.NewRequest(m.githubRoute.Method, "https://webhooks.example"+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	headers, err := provider.Sign(provider.GitHub, m.githubSecret, provider.Delivery{ID: id, Type: githubType, Body: body, Now: time.Now()})
	if err != nil {
		return 0, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	ev := gateway.Event(req, body, gateway.Route{Method: m.githubRoute.Method, Path: m.githubRoute.Path})
	ev.PathParameters = map[string]string{"provider": provider.GitHub}
	ictx, cancel := m.invocation(ctx, devstack.ReceiverID)
	defer cancel()
	resp, err := m.recv.Handle(ictx, ev)
	return resp.StatusCode, err
}

// delivered is a delivery and the queue message it produced.
type delivered struct {
	body    []byte
	message string
}

// newEvent delivers and processes a new event of size, timing both.
func (m *meter) newEvent(ctx context.Context, size EventSize, out *delivered) error {
	body, err := size.build(stripefixture.NewID("evt_"), stripefixture.NewID("sub_"), stripefixture.NewID("cus_"), m.created)
	if err != nil {
		return err
	}
	if status, err := m.deliver(ctx, body, true); err != nil || status != http.StatusOK {
		return fmt.Errorf("new event: status %d: %v", status, err)
	}
	n, failed, err := m.process(ctx, 5, true)
	if err != nil || n != 1 || failed != 0 {
		return fmt.Errorf("new event: processed %d, failed %d: %v", n, failed, err)
	}
	if out != nil {
		out.body, out.message = body, m.lastMessage
		m.bytes[size.Name] = len(body)
	}
	return nil
}

func (m *meter) deliverAndProcess(ctx context.Context, body []byte, timed bool) error {
	if status, err := m.deliver(ctx, body, timed); err != nil || status != http.StatusOK {
		return fmt.Errorf("status %d: %v", status, err)
	}
	if n, failed, err := m.process(ctx, 5, timed); err != nil || n != 1 || failed != 0 {
		return fmt.Errorf("processed %d, failed %d: %v", n, failed, err)
	}
	return nil
}

// invocation returns the context Lambda gives an invocation of id.
func (m *meter) invocation(ctx context.Context, id string) (context.Context, context.CancelFunc) {
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       newRequestID(),
		InvokedFunctionArn: "arn:aws:lambda:" + template.Region + ":" + template.AccountID + ":function:" + id,
	})
	return context.WithTimeout(ctx, m.timeouts[id])
}

// deliver signs body and hands it to the receiver as API Gateway would.
func (m *meter) deliver(ctx context.Context, body []byte, timed bool) (int, error) {
	return m.deliverWith(ctx, body, m.secret, timed)
}

// deliverWith is deliver signed with secret.
func (m *meter) deliverWith(ctx context.Context, body []byte, secret string, timed bool) (int, error) {
	m.bodies = append(m.bodies, body)
	req := httptest.NewRequest(m.route.Method, "https://webhooks.example"+m.route.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", provider.SignStripe(body, secret, time.Now()))
	ev := gateway.Event(req, body, gateway.Route{Method: m.route.Method, Path: m.route.Path})
	ictx, cancel := m.invocation(ctx, devstack.ReceiverID)
	defer cancel()
	spent, start := m.rec.Spent("receiver"), time.Now()
	resp, err := m.recv.Handle(ictx, ev)
	if timed {
		m.recvMs = append(m.recvMs, ms(time.Since(start)-(m.rec.Spent("receiver")-spent)))
	}
	return resp.StatusCode, err
}

// process receives at most one message (waiting up to wait seconds) and
// hands it to the processor as Lambda's event source mapping would, then
// deletes it unless the processor reported it failed. It returns the
// messages handled and failed.
func (m *meter) process(ctx context.Context, wait int32, timed bool) (int, int, error) {
	out, err := m.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(m.queue.URL), MaxNumberOfMessages: 1, WaitTimeSeconds: wait,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}, poller.LongPoll)
	if err != nil || len(out.Messages) == 0 {
		return 0, 0, err
	}
	m.lastMessage = aws.ToString(out.Messages[0].Body)
	p := &poller.Poller{QueueARN: m.queue.ARN}
	ictx, cancel := m.invocation(ctx, devstack.ProcessorID)
	defer cancel()
	spent, start := m.rec.Spent("processor"), time.Now()
	resp, err := m.proc.Handle(ictx, p.Event(out.Messages))
	if timed {
		m.procMs = append(m.procMs, ms(time.Since(start)-(m.rec.Spent("processor")-spent)))
	}
	if err != nil {
		return 0, 0, fmt.Errorf("processor: %w", err)
	}
	done, ok := poller.Settle(out.Messages, resp, m.source.ReportBatchItemFailures)
	if !ok {
		return 0, 0, errors.New("processor: malformed batch item failures")
	}
	for _, msg := range done {
		if _, err := m.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.queue.URL), ReceiptHandle: msg.ReceiptHandle}); err != nil {
			return 0, 0, err
		}
	}
	return len(out.Messages), len(out.Messages) - len(done), nil
}

// reconcilerRun is what one scheduled reconciler run costs when it finds
// nothing to do: its checkpoints and its stuck-event sweep.
type reconcilerRun struct {
	calls []Call
	lines []LogLine
	ms    float64
}

// reconciler runs the real reconciler twice: over a Stripe stand-in that
// lists every event delivered above (each event's comparison, which every
// scheduled run whose window covers the event repeats), and as a scheduled
// run with nothing to list (what a run costs in itself).
func (m *meter) reconciler(ctx context.Context) (reconcilerRun, error) {
	var run reconcilerRun
	build := func(fake *stripefake.Server) (*reconcile.Reconciler, error) {
		env := map[string]string{}
		for k, v := range m.env[devstack.ReconcilerID] {
			env[k] = v
		}
		env["STRIPE_API_BASE"], env["STRIPE_API_KEY"] = fake.URL, "sk_test_cost_meter"
		if env["RECONCILE_SINCE"] == "" {
			env["RECONCILE_SINCE"] = devstack.DefaultLocalReconcileSince.String()
		}
		log := m.logs.Logger("reconciler", m.logLevel(devstack.ReconcilerID))
		return reconcilerboot.FromEnv(ctx, envOf(env), m.rec.Instrument(m.base, "reconciler"), log, hooks.Registry())
	}
	listed := stripefake.New()
	defer listed.Close()
	seen := map[string]bool{}
	for _, b := range m.bodies {
		if seen[string(b)] {
			continue // a duplicate delivery: Stripe lists the event once
		}
		seen[string(b)] = true
		if err := listed.Add(b); err != nil {
			return run, err
		}
	}
	rec, err := build(listed)
	if err != nil {
		return run, err
	}
	m.label(labelReconcile)
	if _, err := rec.Run(ctx, reconcile.RunOptions{Since: 2 * time.Hour, MaxPages: 1000}); err != nil {
		return run, fmt.Errorf("cost: reconciler comparison: %w", err)
	}

	empty := stripefake.New()
	defer empty.Close()
	if rec, err = build(empty); err != nil {
		return run, err
	}
	m.label(labelSetup)
	ictx, cancel := m.invocation(ctx, devstack.ReconcilerID)
	err = rec.Handle(ictx, nil) // the first run writes the checkpoints
	cancel()
	if err != nil {
		return run, err
	}
	m.label(labelReconcileRun)
	ictx, cancel = m.invocation(ctx, devstack.ReconcilerID)
	defer cancel()
	spent, start := m.rec.Spent("reconciler"), time.Now()
	if err := rec.Handle(ictx, nil); err != nil {
		return run, err
	}
	run.ms = ms(time.Since(start) - (m.rec.Spent("reconciler") - spent))
	run.calls = m.rec.Calls(labelReconcileRun)
	run.lines = m.logs.Lines(labelReconcileRun)
	m.label("")
	return run, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

package cost

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/defaults"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/bridge"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
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
const GitHubSample = "internal/cli/samples/github/issues.opened.json"

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

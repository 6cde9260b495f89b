package redeliver_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// oneGroup are handled types that fit one types[] filter.
var oneGroup = []string{
	"customer.subscription.created", "customer.subscription.updated",
	"invoice.paid", "invoice.payment_failed", "customer.updated",
}

// harness is one test's reconciler run, GitHub's sweep given its turn:
// resources provisioned from the template on the emulator, a Stripe fake
// (with no events) and the receiver's ingest path.
type harness struct {
	t        *testing.T
	stack    *testenv.Stack
	fake     *stripefake.Server
	db       *dynamodb.Client
	events   *store.Events
	ingester *ingest.Ingester
	queue    *queue.Queue
	types    []string
	logs     *testenv.Buffer
}

// provisionMu serializes template parsing: goformation's ProcessYAML
// registers its YAML tag handlers in a package-level map on every call, so
// two parallel tests parsing the template race.
var provisionMu sync.Mutex

func newHarness(t *testing.T, handled []string) *harness {
	t.Helper()
	needs.Emulator(t) // before the lock: a skip under it would hold it
	provisionMu.Lock()
	stack := testenv.Provision(t, nil)
	provisionMu.Unlock()
	h := &harness{t: t, stack: stack, fake: stripefake.New(), types: handled, logs: &testenv.Buffer{}}
	t.Cleanup(h.fake.Close)
	h.db = dynamodb.NewFromConfig(h.stack.AWS)
	h.events = &store.Events{DB: h.db, Table: h.stack.Table("EventsTable"), Retention: 90 * 24 * time.Hour}
	h.queue = &queue.Queue{Client: h.stack.SQS, URL: h.stack.Queue("WebhookQueue").URL}
	set := map[string]bool{}
	for _, ty := range handled {
		set[ty] = true
	}
	h.ingester = &ingest.Ingester{Store: h.events, Queue: h.queue, Provider: event.ProviderStripe, Handled: func(ty string) bool { return set[ty] }}
	return h
}

// reconciler builds a Reconciler with a stripe client holding key.
func (h *harness) reconciler(key string, mod func(*reconcile.Config)) *reconcile.Reconciler {
	h.t.Helper()
	stripe, err := stripeapi.New(stripeapi.Config{Key: key, BaseURL: h.fake.URL, RateLimit: 1000, HTTPClient: &http.Client{Timeout: time.Minute}})
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := reconcile.Config{
		Stripe:          stripe,
		Events:          h.events,
		Checkpoints:     &store.Checkpoints{DB: h.db, Table: h.stack.Table("EventsTable")},
		Ingester:        h.ingester,
		Queue:           h.queue,
		Types:           h.types,
		ThrottleBackoff: time.Millisecond,
		Logger:          slog.New(slog.NewJSONHandler(h.logs, nil)),
		FirstLookback:   reconcile.Retention,
	}
	if mod != nil {
		mod(&cfg)
	}
	r, err := reconcile.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// runLines returns the "reconcile run" log lines.
func (h *harness) runLines() []map[string]any { return runLinesIn(h.logs.String()) }

// runLinesIn returns the "reconcile run" lines of logs.
func runLinesIn(logs string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "reconcile run" {
			out = append(out, m)
		}
	}
	return out
}

package drills

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// downstream is the team's application as the forward effect sees it: it
// counts every call per idempotency key, applies each key once (as an
// idempotent application must), and fails or hangs on request.
type downstream struct {
	srv *httptest.Server

	mu       sync.Mutex
	calls    map[string]int // every call, by idempotency key
	ok       map[string]int // 2xx answers, by key
	applied  map[string]bool
	failLeft map[string]int // event id -> 500s still to answer (-1: always)
	// downUntil: every call before it is answered 503 (an outage).
	downUntil time.Time
	hang      map[string]chan struct{}
	entered   map[string]chan struct{}
	aborted   map[string]chan struct{}
}

func newDownstream(t *testing.T) *downstream {
	d := &downstream{calls: map[string]int{}, ok: map[string]int{}, applied: map[string]bool{},
		failLeft: map[string]int{}, hang: map[string]chan struct{}{}, entered: map[string]chan struct{}{}, aborted: map[string]chan struct{}{}}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *downstream) serve(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key, id := r.Header.Get("Idempotency-Key"), r.Header.Get("Webhook-Inbox-Event-Id")
	d.mu.Lock()
	d.calls[key]++
	hang, entered, aborted := d.hang[id], d.entered[id], d.aborted[id]
	fail := d.failLeft[id]
	if fail > 0 {
		d.failLeft[id]--
	}
	down := time.Now().Before(d.downUntil)
	d.mu.Unlock()
	if down {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if hang != nil {
		close(entered)
		select {
		case <-hang:
		case <-r.Context().Done():
			// The caller is gone: nothing was applied.
			close(aborted)
			return
		}
	}
	if fail != 0 {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	d.mu.Lock()
	d.ok[key]++
	d.applied[key] = true
	d.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// outage makes the application answer 503 to every call for d from now.
func (d *downstream) outage(dur time.Duration) (ends time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.downUntil = time.Now().Add(dur)
	return d.downUntil
}

func (d *downstream) failTimes(id string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failLeft[id] = n
}

// hangOn makes the call for id block until the returned release is called;
// entered is closed when the call arrives, aborted when its caller goes away
// while it hangs.
func (d *downstream) hangOn(id string) (entered, aborted <-chan struct{}, release func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h, e, a := make(chan struct{}), make(chan struct{}), make(chan struct{})
	d.hang[id], d.entered[id], d.aborted[id] = h, e, a
	var once sync.Once
	return e, a, func() {
		once.Do(func() {
			d.mu.Lock()
			delete(d.hang, id)
			d.mu.Unlock()
			close(h)
		})
	}
}

func (d *downstream) counts(id string) (calls, ok int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := id + ":forward"
	return d.calls[key], d.ok[key]
}

// pipeline is a local stack with a fault proxy between it and the emulator,
// forwarding to a counting downstream.
type pipeline struct {
	t      *testing.T
	stack  *testenv.Devstack
	proxy  *faultproxy.Proxy
	down   *downstream
	events *store.Events
	mirror *mirror.Reader
	sqs    *sqs.Client
}

// Local parameters: short timeouts so that leases and visibility timeouts
// expire within a drill, and a small redrive count.
var overrides = map[string]string{
	"ProcessorTimeout":       "5",
	"QueueVisibilityTimeout": "8",
	"MaxReceiveCount":        "3",
}

// killOverrides are for drills that kill the stack: a killed poller's long
// polls stay open in the emulator until their wait time ends and can still
// take a message (each such receive counts towards maxReceiveCount, as it
// would in SQS), so those drills allow more receives.
var killOverrides = map[string]string{
	"ProcessorTimeout":       "5",
	"QueueVisibilityTimeout": "8",
	"MaxReceiveCount":        "10",
}

func newPipeline(t *testing.T, env map[string]string, params map[string]string, args ...string) *pipeline {
	t.Helper()
	// Every service passes through the proxy, which sends each on to its
	// emulator.
	proxy, err := faultproxy.New(testenv.Endpoints(t))
	if err != nil {
		t.Fatal(err)
	}
	psrv := httptest.NewServer(proxy)
	t.Cleanup(psrv.Close)
	down := newDownstream(t)
	e := map[string]string{"FORWARD_URL": down.srv.URL, "FORWARD_SECRET": "fwd_drill_secret", "RETRY_BACKOFF_BASE": "1s"}
	for k, v := range env {
		e[k] = v
	}
	if params == nil {
		params = overrides
	}
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Endpoints: emulator.One(psrv.URL), Overrides: params, Env: e, Args: args})
	cfg := testenv.AWS(t)
	db := dynamodb.NewFromConfig(cfg)
	return &pipeline{
		t: t, stack: stack, proxy: proxy, down: down,
		events: &store.Events{DB: db, Table: stack.Prefix + "-EventsTable"},
		mirror: &mirror.Reader{DB: db, Table: stack.Prefix + "-MirrorTable"},
		sqs:    sqs.NewFromConfig(cfg),
	}
}

// deliver POSTs body signed with the local stack's secret, as Stripe would.
func (p *pipeline) deliver(body []byte) int {
	return p.deliverSigned(body, provider.SignStripe(body, devstack.DefaultWebhookSecret, time.Now()))
}

func (p *pipeline) deliverSigned(body []byte, sig string) int {
	p.t.Helper()
	status, err := p.tryDeliver(body, sig)
	if err != nil {
		p.t.Fatalf("POST: %v", err)
	}
	return status
}

// tryDeliver POSTs once; a connection error is returned, not fatal.
func (p *pipeline) tryDeliver(body []byte, sig string) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, p.stack.URL+"/webhooks/stripe", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func (p *pipeline) record(id string) (event.Record, error) {
	return p.events.Get(context.Background(), event.ProviderStripe, id)
}

func (p *pipeline) waitStatus(id string, want event.Status, timeout time.Duration) event.Record {
	p.t.Helper()
	var r event.Record
	testenv.Eventually(p.t, timeout, fmt.Sprintf("event %s to be %s", id, want), func() bool {
		var err error
		r, err = p.record(id)
		return err == nil && r.Status == want
	})
	return r
}

// queueDepth counts messages in a queue, visible or in flight.
func (p *pipeline) queueDepth(logicalID string) int {
	p.t.Helper()
	out, err := p.sqs.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(p.stack.Prefix + "-" + logicalID)})
	if err != nil {
		p.t.Fatal(err)
	}
	attrs, err := p.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{
			sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		p.t.Fatal(err)
	}
	var n, m int
	fmt.Sscan(attrs.Attributes["ApproximateNumberOfMessages"], &n)
	fmt.Sscan(attrs.Attributes["ApproximateNumberOfMessagesNotVisible"], &m)
	return n + m
}

// inboxctl runs the operator CLI against the stack's resources.
func (p *pipeline) inboxctl(args ...string) (string, error) {
	p.t.Helper()
	root, _ := repo.Root()
	e := testenv.Endpoints(p.t)
	all := []string{"run", "./cmd/inboxctl", "--endpoint", e.URL, "--prefix", p.stack.Prefix}
	for _, service := range []string{"dynamodb", "sqs", "ssm", "cloudformation"} {
		if url := e.For(service); url != e.URL {
			all = append(all, "--endpoint", service+"="+url)
		}
	}
	all = append(all, args...)
	cmd := exec.Command("go", all...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
}

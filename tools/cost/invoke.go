package cost

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/gateway"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

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

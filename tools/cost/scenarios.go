package cost

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/gateway"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// scenarios measures every scenario for one event size.
func (m *meter) scenarios(ctx context.Context, size EventSize) error {
	if err := m.duplicates(ctx, size); err != nil {
		return err
	}
	if err := m.retried(ctx, size); err != nil {
		return err
	}
	if err := m.superseded(ctx, size); err != nil {
		return err
	}
	if err := m.tie(ctx, size); err != nil {
		return err
	}
	// A new event by Stripe's EventBridge destination.
	m.label(label(ScenarioEventBridge, size))
	return m.newEventByEventBridge(ctx, size)
}

// duplicates measures a new event, then the same delivery again (the
// provider retried, or sent it twice) and the same queue message again
// (SQS delivers at least once).
func (m *meter) duplicates(ctx context.Context, size EventSize) error {
	m.label(label(ScenarioNew, size))
	var first delivered
	if err := m.newEvent(ctx, size, &first); err != nil {
		return err
	}

	m.label(label(ScenarioDupDeliver, size))
	if status, err := m.deliver(ctx, first.body, false); err != nil || status != http.StatusOK {
		return fmt.Errorf("duplicate delivery: status %d: %v", status, err)
	}
	if _, _, err := m.process(ctx, 0, false); err != nil {
		return err
	}

	m.label(label(ScenarioDupMessage, size))
	if _, err := m.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(m.queue.URL), MessageBody: aws.String(first.message)}); err != nil {
		return err
	}
	if n, _, err := m.process(ctx, 5, false); err != nil || n != 1 {
		return fmt.Errorf("duplicate message: processed %d: %v", n, err)
	}
	return nil
}

// retried measures a new event whose effect fails once, then succeeds on
// the retry.
func (m *meter) retried(ctx context.Context, size EventSize) error {
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
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("retried event: not processed again within a minute")
		}
	}
}

// superseded measures an older event of an object arriving after a
// newer one.
func (m *meter) superseded(ctx context.Context, size EventSize) error {
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
	return m.deliverAndProcess(ctx, older, false)
}

// tie measures two events of one object in the same second: the second
// reads the object from Stripe's API.
func (m *meter) tie(ctx context.Context, size EventSize) error {
	m.label(labelSetup)
	object, customer := stripefixture.NewID("sub_"), stripefixture.NewID("cus_")
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
	return nil
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

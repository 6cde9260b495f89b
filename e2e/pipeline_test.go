package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

func deliver(t *testing.T, url string, body []byte, secret string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/webhooks/stripe", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", provider.SignStripe(body, secret, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func eventsStore(t *testing.T, prefix string) *store.Events {
	cfg := testenv.AWS(t)
	return &store.Events{DB: dynamodb.NewFromConfig(cfg), Table: prefix + "-EventsTable"}
}

func TestSignedEventIsProcessedOnceEvenWhenDeliveredTwice(t *testing.T) {
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{})
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()

	body, err := stripefixture.Build("customer.subscription.created", stripefixture.Options{Customer: "cus_e2e"})
	if err != nil {
		t.Fatal(err)
	}
	env, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	if status, resp := deliver(t, stack.URL, body, devstack.DefaultWebhookSecret); status != 200 {
		t.Fatalf("first delivery: got %d %s, want 200", status, resp)
	}
	testenv.Eventually(t, 30*time.Second, "the event to be processed", func() bool {
		r, err := events.Get(ctx, "stripe", env.ID)
		return err == nil && r.Status == event.StatusProcessed
	})

	if status, resp := deliver(t, stack.URL, body, devstack.DefaultWebhookSecret); status != 200 {
		t.Fatalf("second delivery: got %d %s, want 200", status, resp)
	}
	testenv.Eventually(t, 10*time.Second, "the duplicate to be logged", func() bool {
		return len(stack.Lines(map[string]string{"msg": "webhook", "event_id": env.ID, "outcome": "duplicate"})) == 1
	})
	// Give a wrongly enqueued duplicate time to be processed before counting.
	time.Sleep(2 * time.Second)
	if n := len(stack.Lines(map[string]string{"msg": "processed", "event_id": env.ID})); n != 1 {
		t.Errorf("effects of the event: got %d, want exactly 1", n)
	}
	r, err := events.Get(ctx, "stripe", env.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempts != 1 || r.Outcome != outcome.Applied || r.Source != event.SourceWebhook {
		t.Errorf("record: attempts %d outcome %s source %s; want 1, applied, webhook", r.Attempts, r.Outcome, r.Source)
	}
	snap, err := (&mirror.Reader{DB: dynamodb.NewFromConfig(testenv.AWS(t)), Table: stack.Prefix + "-MirrorTable"}).Object(ctx, env.ObjectID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastEventID != env.ID || snap.Customer != "cus_e2e" {
		t.Errorf("mirror: got last event %s customer %s", snap.LastEventID, snap.Customer)
	}
}

func TestBadSignatureStoresNothing(t *testing.T) {
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{})
	events := eventsStore(t, stack.Prefix)
	body, _ := stripefixture.Build("invoice.paid", stripefixture.Options{})
	env, _ := event.DecodeEnvelope(body)
	status, resp := deliver(t, stack.URL, body, "whsec_not_the_secret")
	if status != 400 {
		t.Fatalf("got %d %s, want 400", status, resp)
	}
	if _, err := events.Get(context.Background(), "stripe", env.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record after a bad signature: got %v, want none", err)
	}
}

// TestLocalStackReachesEachServiceAtItsOwnEndpoint: the local stack's
// process, started with AWS_ENDPOINT_URL at the emulator and
// AWS_ENDPOINT_URL_DYNAMODB at a proxy in front of it, sends DynamoDB's
// requests, and only those, through the proxy: what make test-localstack
// needs (DynamoDB on moto, the rest on LocalStack), whatever the test's own
// environment said.
func TestLocalStackReachesEachServiceAtItsOwnEndpoint(t *testing.T) {
	real := testenv.Endpoints(t)
	proxy, err := faultproxy.New(real)
	if err != nil {
		t.Fatal(err)
	}
	psrv := httptest.NewServer(proxy)
	t.Cleanup(psrv.Close)
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Endpoints: emulator.Endpoints{
		URL: real.For("SQS"), Services: map[string]string{"DYNAMODB": psrv.URL, "SSM": real.For("SSM")},
	}})
	body, _ := stripefixture.Build("invoice.paid", stripefixture.Options{})
	if status, resp := deliver(t, stack.URL, body, devstack.DefaultWebhookSecret); status != 200 {
		t.Fatalf("delivery: got %d %s, want 200", status, resp)
	}
	requests, _ := proxy.Stats()
	var dynamo, other []string
	for op, n := range requests {
		switch {
		case op == ".":
			// The stack's check that the endpoint answers: no AWS call.
		case strings.HasPrefix(op, "dynamodb."):
			dynamo = append(dynamo, fmt.Sprintf("%s×%d", op, n))
		default:
			other = append(other, op)
		}
	}
	if len(dynamo) == 0 || requests["dynamodb.PutItem"] == 0 || len(other) > 0 {
		t.Errorf("through AWS_ENDPOINT_URL_DYNAMODB: DynamoDB %v, others %v; want DynamoDB's (the record's PutItem among them) and nothing else", dynamo, other)
	}
}

func TestEmulatorDownAnswers5xx(t *testing.T) {
	needs.Emulator(t)
	emu, err := emulator.Start(context.Background(), emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Stop()
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Endpoints: emulator.One(emu.URL)})

	body, _ := stripefixture.Build("invoice.paid", stripefixture.Options{})
	if status, resp := deliver(t, stack.URL, body, devstack.DefaultWebhookSecret); status != 200 {
		t.Fatalf("with the emulator up: got %d %s, want 200", status, resp)
	}
	emu.Kill()
	body2, _ := stripefixture.Build("invoice.paid", stripefixture.Options{})
	status, resp := deliver(t, stack.URL, body2, devstack.DefaultWebhookSecret)
	if status < 500 || status > 599 {
		t.Fatalf("with the emulator down: got %d %s, want 5xx (never a false 2xx)", status, resp)
	}
}

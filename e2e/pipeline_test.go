package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/signature"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/tools/testenv"
)

func deliver(t *testing.T, url string, body []byte, secret string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/webhooks/stripe", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", signature.Sign(body, secret, time.Now()))
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

func TestEmulatorDownAnswers5xx(t *testing.T) {
	emu, err := emulator.Start(context.Background(), emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Stop()
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Endpoint: emu.URL})

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

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/bridge"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// stripeEvent is one Stripe event as Stripe's partner event source puts it
// on the bus: source the partner source, detail-type the event's type,
// detail the event. LocalStack has no PutPartnerEvents (Stripe's own call):
// PutEvents with the partner source gives the bus the same envelope.
func stripeEvent(src, typ string, detail []byte) ebtypes.PutEventsRequestEntry {
	return ebtypes.PutEventsRequestEntry{
		EventBusName: aws.String(src),
		Source:       aws.String(src),
		DetailType:   aws.String(typ),
		Detail:       aws.String(string(detail)),
	}
}

func putEvents(t *testing.T, eb *eventbridge.Client, entries ...ebtypes.PutEventsRequestEntry) {
	t.Helper()
	out, err := eb.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedEntryCount != 0 {
		t.Fatalf("PutEvents: %d entries failed: %+v", out.FailedEntryCount, out.Entries)
	}
}

func newPartnerSource(t *testing.T) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return bridge.PartnerSourcePrefix + "/ed_test_" + hex.EncodeToString(b[:])
}

func fixture(t *testing.T, typ string) ([]byte, event.Envelope) {
	t.Helper()
	body, err := stripefixture.Build(typ, stripefixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	return body, env
}

// TestStripeEventBridgeDestination: Stripe's EventBridge destination
// through the local stack on LocalStack: the template's bus and rule (by
// CloudFormation), its ingress queue and dead-letter queue, the bridge
// behind the queue, the processor behind the webhook queue.
func TestStripeEventBridgeDestination(t *testing.T) {
	if !testenv.RunsEventBridge(t) {
		return
	}
	src := newPartnerSource(t)
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Overrides: map[string]string{"StripeEventSourceName": src}})
	cfg := testenv.AWS(t)
	eb := eventbridge.NewFromConfig(cfg)
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()
	processedOnce := func(t *testing.T, env event.Envelope, source event.Source) {
		t.Helper()
		var r event.Record
		testenv.Eventually(t, 45*time.Second, env.ID+" to be processed", func() bool {
			var err error
			r, err = events.Get(ctx, event.ProviderStripe, env.ID)
			return err == nil && r.Status == event.StatusProcessed
		})
		// A wrongly enqueued second copy would be processed meanwhile.
		time.Sleep(time.Second)
		if n := len(stack.Lines(map[string]string{"msg": "processed", "event_id": env.ID})); n != 1 || r.Attempts != 1 || r.Outcome != outcome.Applied ||
			r.Source != source {
			t.Errorf(
				"%s: processed %d times, record attempts %d outcome %s source %s; want once, 1, applied, %s",
				env.ID,
				n,
				r.Attempts,
				r.Outcome,
				r.Source,
				source,
			)
		}
	}

	t.Run("a handled event ends processed once", func(t *testing.T) {
		body, env := fixture(t, "customer.subscription.created")
		putEvents(t, eb, stripeEvent(src, env.Type, body))
		processedOnce(t, env, event.SourceEventBridge)
		if n := len(stack.Lines(map[string]string{"msg": "eventbridge event", "event_id": env.ID, "outcome": "stored"})); n != 1 {
			t.Errorf("bridge lines storing %s: got %d, want 1", env.ID, n)
		}
		r, _ := events.Get(ctx, event.ProviderStripe, env.ID)
		if r.Type != env.Type || r.Created != env.Created || r.ObjectID != env.ObjectID {
			t.Errorf("record: got %s %d %s, want the event's type, creation and object", r.Type, r.Created, r.ObjectID)
		}
	})

	t.Run("an unhandled type never reaches the ingress queue", func(t *testing.T) {
		unhandled, uenv := fixture(t, "charge.refunded")
		marker, menv := fixture(t, "invoice.paid")
		// The marker after it: once the marker is processed, the bridge
		// has had every message the rule routed.
		putEvents(t, eb, stripeEvent(src, uenv.Type, unhandled), stripeEvent(src, menv.Type, marker))
		processedOnce(t, menv, event.SourceEventBridge)
		if n := len(stack.Lines(map[string]string{"msg": "eventbridge event", "event_id": uenv.ID})); n != 0 {
			t.Errorf("the bridge had %s (%s) %d times, want never: the rule routes only the handled types", uenv.ID, uenv.Type, n)
		}
		if _, err := events.Get(ctx, event.ProviderStripe, uenv.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("record of %s: got %v, want none", uenv.ID, err)
		}
	})

	t.Run("a malformed detail fails alone and visibly", func(t *testing.T) {
		a, aenv := fixture(t, "invoice.paid")
		b, benv := fixture(t, "customer.subscription.updated")
		const badID = "evt_e2e_malformed_detail"
		bad := fmt.Sprintf(`{"id":%q,"object":"event","type":"invoice.paid","created":"yesterday","data":{"object":{"id":"in_1","object":"invoice"}}}`, badID)
		putEvents(t, eb, stripeEvent(src, aenv.Type, a), stripeEvent(src, "invoice.paid", []byte(bad)), stripeEvent(src, benv.Type, b))
		processedOnce(t, aenv, event.SourceEventBridge)
		processedOnce(t, benv, event.SourceEventBridge)
		var lines []map[string]any
		testenv.Eventually(t, 30*time.Second, "the rejection to be logged", func() bool {
			lines = stack.Lines(map[string]string{"msg": "eventbridge event", "outcome": string(outcome.RejectedMalformed)})
			return len(lines) == 1
		})
		if l := lines[0]; l["level"] != "WARN" || l["moved_to"] != "dead-letter queue" || l["events"] != 1.0 ||
			!strings.Contains(fmt.Sprint(l["error"]), "detail") {
			t.Errorf("rejection's log line: got %v, want WARN, moved to the dead-letter queue, counted, the error", l)
		}
		dlq := stack.Opts.Prefix + "-IngressDeadLetterQueue"
		msg := receiveOne(t, sqs.NewFromConfig(cfg), dlq)
		if !strings.Contains(aws.ToString(msg.Body), badID) ||
			aws.ToString(msg.MessageAttributes[bridge.AttrOutcome].StringValue) != string(outcome.RejectedMalformed) ||
			!strings.Contains(aws.ToString(msg.MessageAttributes[bridge.AttrError].StringValue), "created") {
			t.Errorf(
				"dead letter: got %s %v, want the EventBridge event of %s with outcome rejected_malformed and its error",
				aws.ToString(msg.Body),
				msg.MessageAttributes,
				badID,
			)
		}
		if _, err := events.Get(ctx, event.ProviderStripe, badID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("record of the malformed event: got %v, want none", err)
		}
	})

	t.Run("the same event through the webhook endpoint and EventBridge has one effect", func(t *testing.T) {
		// The webhook first, then EventBridge.
		body, env := fixture(t, "customer.subscription.created")
		if status, resp := deliver(t, stack.URL, body, devstack.DefaultWebhookSecret); status != 200 {
			t.Fatalf("webhook: got %d %s", status, resp)
		}
		processedOnce(t, env, event.SourceWebhook)
		putEvents(t, eb, stripeEvent(src, env.Type, body))
		testenv.Eventually(t, 30*time.Second, "the bridge's duplicate", func() bool {
			return len(stack.Lines(map[string]string{"msg": "eventbridge event", "event_id": env.ID, "outcome": "duplicate"})) == 1
		})
		processedOnce(t, env, event.SourceWebhook)

		// EventBridge first, then the webhook.
		body, env = fixture(t, "invoice.paid")
		putEvents(t, eb, stripeEvent(src, env.Type, body))
		processedOnce(t, env, event.SourceEventBridge)
		if status, resp := deliver(t, stack.URL, body, devstack.DefaultWebhookSecret); status != 200 {
			t.Fatalf("webhook after EventBridge: got %d %s", status, resp)
		}
		// The stack's log is read as its process writes it: the line may
		// come a moment after the answer.
		testenv.Eventually(t, 10*time.Second, "the receiver's duplicate line", func() bool {
			return len(stack.Lines(map[string]string{"msg": "webhook", "event_id": env.ID, "outcome": "duplicate"})) >= 1
		})
		if n := len(stack.Lines(map[string]string{"msg": "webhook", "event_id": env.ID, "outcome": "duplicate"})); n != 1 {
			t.Errorf("receiver's duplicate lines: got %d, want 1", n)
		}
		processedOnce(t, env, event.SourceEventBridge)

		// Both at once, as while a team runs both.
		body, env = fixture(t, "customer.subscription.updated")
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); putEvents(t, eb, stripeEvent(src, env.Type, body)) }()
		go func() {
			defer wg.Done()
			if status, resp := deliver(t, stack.URL, body, devstack.DefaultWebhookSecret); status != 200 {
				t.Errorf("webhook at once: got %d %s", status, resp)
			}
		}()
		wg.Wait()
		testenv.Eventually(t, 30*time.Second, "the bridge to have the event", func() bool {
			return len(stack.Lines(map[string]string{"msg": "eventbridge event", "event_id": env.ID})) == 1
		})
		r, err := events.Get(ctx, event.ProviderStripe, env.ID)
		if err != nil {
			t.Fatal(err)
		}
		processedOnce(t, env, r.Source)
	})
}

// receiveOne takes the one message of the queue named name, with its
// attributes.
func receiveOne(t *testing.T, client *sqs.Client, name string) sqstypes.Message {
	t.Helper()
	ctx := context.Background()
	u, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	out, err := client.ReceiveMessage(
		ctx,
		&sqs.ReceiveMessageInput{QueueUrl: u.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 5, MessageAttributeNames: []string{"All"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("%s: got %d messages, want 1", name, len(out.Messages))
	}
	return out.Messages[0]
}

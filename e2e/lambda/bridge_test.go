package lambda

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/version"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/bridge"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// bridgeID is in the template only with StripeEventSourceName set.
const bridgeID = "BridgeFunction"

// eventBridgeBody is an ingress message as the rule's SQS target delivers
// it (the nine-field envelope LocalStack's EventBridge delivers, as AWS's
// does), detail the Stripe event.
func eventBridgeBody(src, account, detailType, detail string) string {
	return fmt.Sprintf(`{"version":"0","id":"%s","detail-type":%q,"source":%q,"account":%q,"time":%q,"region":%q,"resources":[],"detail":%s}`,
		randomHex(8), detailType, src, account, time.Now().UTC().Format(time.RFC3339), template.Region, detail)
}

// TestBridgeBinaryAnswersIngressBatchesAsLambdaRunsIt: the bridge's real
// bootstrap under the runtime emulator, given one batch of the ingress
// queue as the SQS event source hands it over: a handled snapshot event
// (stored and queued), a thin event of a handled type (stored and queued
// as any event: the processor reads it whole from Stripe), a malformed detail and an event of another account (each
// moved to the ingress dead-letter queue). Its init makes no AWS call,
// and its calls are exactly what its policy in template.yaml grants.
func TestBridgeBinaryAnswersIngressBatchesAsLambdaRunsIt(t *testing.T) {
	src := bridge.PartnerSourcePrefix + "/ed_test_rie" + randomHex(4)
	s := newSetupWith(t, map[string]string{"StripeEventSourceName": src}, nil)
	ctx := context.Background()
	ingress, dlq := s.stack.Queue("IngressQueue"), s.stack.Queue("IngressDeadLetterQueue")
	client := sqs.NewFromConfig(s.stack.AWS)
	events := &store.Events{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("EventsTable")}
	env := s.env(t, bridgeID, nil)
	if env["EVENTBRIDGE_SOURCE"] != src || env["EVENTBRIDGE_ACCOUNT"] != template.AccountID || env["INGRESS_DLQ_URL"] != dlq.URL {
		t.Fatalf("environment from the template: %v", env)
	}
	fn := start(t, hostBootstrap(t, bridgeID), env)

	body, err := stripefixture.Build(
		"customer.subscription.created",
		stripefixture.Options{Customer: "cus_rie_" + randomHex(4), ObjectID: "sub_rie_" + randomHex(4)},
	)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	thinID := "evt_test_rie_thin_" + randomHex(4)
	thin := fmt.Sprintf(
		`{"id":%q,"object":"v2.core.event","type":"v1.invoice.paid","livemode":false,"created":"2027-01-15T08:00:00.123Z","related_object":{"id":"in_rie","type":"invoice","url":"/v1/invoices/in_rie"}}`,
		thinID,
	)
	bodies := []string{
		eventBridgeBody(src, template.AccountID, snap.Type, string(body)),
		eventBridgeBody(src, template.AccountID, "v1.invoice.paid", thin),
		eventBridgeBody(src, template.AccountID, "invoice.paid", `{"id":"evt_rie_bad","object":"event","type":"invoice.paid","created":"yesterday"}`),
		eventBridgeBody(src, "111122223333", snap.Type, string(body)),
	}
	for _, b := range bodies {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(ingress.URL), MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []sqstypes.Message
	testenv.Eventually(t, 20*time.Second, "the batch on the ingress queue", func() bool {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(ingress.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, out.Messages...)
		return len(msgs) == len(bodies)
	})

	mark := s.rec.Len()
	status, out := fn.call(t, sqsEvent(t, ingress.ARN, msgs...))
	var answer map[string]any
	decodeAnswer(t, status, out, &answer)
	if failures, ok := answer["batchItemFailures"]; !ok || (failures != nil && len(failures.([]any)) != 0) {
		t.Errorf("answer: got %s, want batchItemFailures present and empty (rejections are dead-lettered, not retried)", out)
	}
	got := names(s.rec.Calls(mark))
	slices.Sort(got)
	// Init reads nothing. Two puts (record, payload) per stored event, one
	// pointer for each, one dead letter per rejection.
	want := []string{"dynamodb:PutItem", "dynamodb:PutItem", "dynamodb:PutItem", "dynamodb:PutItem", "sqs:SendMessage", "sqs:SendMessage", "sqs:SendMessage", "sqs:SendMessage"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AWS calls of the cold start and the batch: got %v, want %v", got, want)
	}

	rec, err := events.Get(ctx, event.ProviderStripe, snap.ID)
	if err != nil || rec.Status != event.StatusReceived || rec.Source != event.SourceEventBridge || rec.ObjectID != snap.ObjectID {
		t.Errorf(
			"the snapshot event's record: got %s from %s about %s (%v), want received from eventbridge about %s",
			rec.Status,
			rec.Source,
			rec.ObjectID,
			err,
			snap.ObjectID,
		)
	}
	th, err := events.Get(ctx, event.ProviderStripe, thinID)
	if err != nil || th.Status != event.StatusReceived || th.Source != event.SourceEventBridge ||
		th.Created != time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC).Unix() ||
		th.ObjectID != "in_rie" ||
		string(th.Payload) != thin {
		t.Errorf(
			"the thin event's record: got %+v (%v), want received, from eventbridge, created from its RFC 3339 time, about in_rie, the detail as payload",
			th,
			err,
		)
	}
	queued := map[string]bool{}
	for range 2 {
		m := receive(t, s, s.stack.Queue("WebhookQueue").URL)
		ptr, err := queue.Decode(aws.ToString(m.Body))
		if err != nil {
			t.Fatalf("queued pointer: %v", err)
		}
		queued[ptr.ID] = true
	}
	if !queued[snap.ID] || !queued[thinID] {
		t.Errorf("queued pointers: got %v, want one to %s and one to %s", queued, snap.ID, thinID)
	}
	dead, err := client.ReceiveMessage(
		ctx,
		&sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]string{}
	for _, d := range dead.Messages {
		outcomes[aws.ToString(d.MessageAttributes[bridge.AttrOutcome].StringValue)] = aws.ToString(d.Body)
	}
	if len(dead.Messages) != 2 || outcomes[string(outcome.RejectedMalformed)] != bodies[2] || outcomes[string(outcome.RejectedWrongAccount)] != bodies[3] {
		t.Errorf("ingress dead letters: got %v, want the malformed one and the other account's, bodies unchanged", outcomes)
	}
	for _, tc := range []struct {
		outcome, level string
		n              int
	}{
		{"stored", "INFO", 2}, {"ignored", "INFO", 0}, {"rejected_malformed", "WARN", 1}, {"rejected_wrong_account", "WARN", 1},
	} {
		lines := fn.logLines(map[string]string{"message": "eventbridge event", "outcome": tc.outcome})
		if len(lines) != tc.n {
			t.Errorf("%s: log lines %v, want %d at %s with EMF metrics\n%s", tc.outcome, lines, tc.n, tc.level, fn.out.String())
		}
		for _, l := range lines {
			if l["level"] != tc.level || !strings.Contains(mustJSON(l["_aws"]), `"Namespace":"WebhookInbox"`) {
				t.Errorf("%s: log line %v, want it at %s with EMF metrics", tc.outcome, l, tc.level)
			}
		}
	}
	if lines := fn.logLines(map[string]string{"message": "cold start"}); len(lines) != 1 || lines[0]["version"] != version.Version {
		t.Errorf("cold start lines %v, want one with version %s", lines, version.Version)
	}
	checkLeastPrivilege(t, s.stack.Template, s.stack.Resources, bridgeID, s.rec.Calls(0))
}

// TestBridgeBinaryRecordsAConnectedAccount: on a Connect platform
// (StripeConnectListAccounts=true), the bridge's real bootstrap stores a
// connected account's event and records its account for the reconciler,
// with the put its policy grants and nothing more.
func TestBridgeBinaryRecordsAConnectedAccount(t *testing.T) {
	src := bridge.PartnerSourcePrefix + "/ed_test_rie" + randomHex(4)
	s := newSetupWith(t, map[string]string{"StripeEventSourceName": src, "StripeConnectListAccounts": "true"}, nil)
	ctx := context.Background()
	ingress := s.stack.Queue("IngressQueue")
	client := sqs.NewFromConfig(s.stack.AWS)
	env := s.env(t, bridgeID, nil)
	if env["STRIPE_CONNECT"] != "true" {
		t.Fatalf("environment from the template: STRIPE_CONNECT=%q, want true", env["STRIPE_CONNECT"])
	}
	fn := start(t, hostBootstrap(t, bridgeID), env)
	acct := "acct_rie" + randomHex(4)
	body, err := stripefixture.Build("customer.subscription.created",
		stripefixture.Options{Account: acct, Customer: "cus_rie_" + randomHex(4), ObjectID: "sub_rie_" + randomHex(4)})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(ingress.URL),
		MessageBody: aws.String(eventBridgeBody(src, template.AccountID, snap.Type, string(body)))}); err != nil {
		t.Fatal(err)
	}
	var msgs []sqstypes.Message
	testenv.Eventually(t, 20*time.Second, "the message on the ingress queue", func() bool {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(ingress.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, out.Messages...)
		return len(msgs) == 1
	})
	mark := s.rec.Len()
	status, out := fn.call(t, sqsEvent(t, ingress.ARN, msgs...))
	var answer map[string]any
	decodeAnswer(t, status, out, &answer)
	got := names(s.rec.Calls(mark))
	slices.Sort(got)
	// The record's and the payload's puts, the account's, the pointer.
	if want := []string{"dynamodb:PutItem", "dynamodb:PutItem", "dynamodb:PutItem", "sqs:SendMessage"}; !reflect.DeepEqual(got, want) {
		t.Errorf("AWS calls of the cold start and the batch: got %v, want %v\n%s", got, want, fn.out.String())
	}
	accounts := &store.Accounts{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("EventsTable")}
	if seen, _, err := accounts.Page(ctx, event.ProviderStripe, "", 100); err != nil || !slices.Contains(seen, acct) {
		t.Errorf("accounts seen: got %v (%v), want %s recorded", seen, err, acct)
	}
}

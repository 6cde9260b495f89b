package bridgeboot

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestAConnectedAccountsEventThroughTheBridgeRecordsItsAccount: a
// connected account's event arriving from Stripe's EventBridge
// destination records the account for the reconciler, as the receiver
// does, when the deployment is a Connect platform (STRIPE_CONNECT=true);
// without Connect it is stored and records nothing.
func TestAConnectedAccountsEventThroughTheBridgeRecordsItsAccount(t *testing.T) {
	for _, tc := range []struct {
		name    string
		connect string
		want    []string
	}{
		{name: "connect", connect: "true", want: []string{"acct_bridge"}},
		{name: "no connect", connect: "", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stack := testenv.Provision(t, nil)
			const source, account = "aws.partner/stripe.com/ed_test_accounts", "123456789012"
			env := map[string]string{
				"EVENTS_TABLE": stack.Table("EventsTable"), "MIRROR_TABLE": stack.Table("MirrorTable"), "QUEUE_URL": stack.Queue("WebhookQueue").URL,
				"EVENTBRIDGE_SOURCE": source, "EVENTBRIDGE_ACCOUNT": account, "INGRESS_DLQ_URL": stack.Queue("WebhookQueue").URL,
				"STRIPE_CONNECT": tc.connect,
			}
			var logs bytes.Buffer
			h, err := FromEnv(context.Background(), envMap(env), stack.AWS, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			detail := `{"id":"evt_bridge_acct","object":"event","type":"invoice.paid","created":1700000000,"livemode":false,"account":"acct_bridge",` +
				`"data":{"object":{"id":"in_bridge","object":"invoice","customer":"cus_bridge"}}}`
			body := fmt.Sprintf(`{"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":"invoice.paid","source":%q,"account":%q,`+
				`"time":"2027-01-15T08:00:00Z","region":"us-east-1","resources":[],"detail":%s}`, source, account, detail)
			resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: body}}})
			if err != nil || len(resp.BatchItemFailures) != 0 || !strings.Contains(logs.String(), `"outcome":"stored"`) {
				t.Fatalf("the connected account's event: %+v, %v\n%s", resp, err, logs.String())
			}
			accounts := &store.Accounts{DB: dynamodb.NewFromConfig(stack.AWS), Table: stack.Table("EventsTable")}
			got, _, err := accounts.Page(context.Background(), "stripe", "", 100)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Stripe's accounts seen: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

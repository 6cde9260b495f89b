package receiverboot

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestOnlyStripesConnectedAccountsAreRecorded: with a Connect endpoint's
// secret, a connected account's event records its account for the
// reconciler; another provider's account (a Shopify shop, on the record's
// account too) is no connected account and records nothing.
func TestOnlyStripesConnectedAccountsAreRecorded(t *testing.T) {
	stack := testenv.Provision(t, nil)
	env := map[string]string{
		"EVENTS_TABLE": stack.Table("EventsTable"), "MIRROR_TABLE": stack.Table("MirrorTable"), "QUEUE_URL": stack.Queue("WebhookQueue").URL,
		"STRIPE_WEBHOOK_SECRET": "whsec_platform", "STRIPE_CONNECT_WEBHOOK_SECRET": "whsec_connect",
		"SHOPIFY_WEBHOOK_SECRET": "shpss_accounts", "SHOPIFY_EVENT_TYPES": "orders/paid",
	}
	var logs bytes.Buffer
	h, err := FromEnv(context.Background(), envMap(env), stack.AWS, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	connected := `{"id":"evt_acct_rec","object":"event","type":"invoice.paid","created":1700000000,"livemode":false,"account":"acct_rec",` +
		`"data":{"object":{"id":"in_rec","object":"invoice","customer":"cus_rec"}}}`
	resp, err := h.Handle(ctx, events.APIGatewayV2HTTPRequest{Body: connected, PathParameters: map[string]string{"provider": "stripe"},
		Headers: map[string]string{"stripe-signature": provider.SignStripe([]byte(connected), "whsec_connect", time.Now())}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the connected account's event: %d %v\n%s", resp.StatusCode, err, logs.String())
	}
	order := []byte(`{"id":820982911946154500,"email":"jon@example.com","total_price":"10.00"}`)
	headers, err := provider.Sign(provider.Shopify, "shpss_accounts", provider.Delivery{ID: "shp_evt_rec", Type: "orders/paid", Shop: "rec-shop.myshopify.com", Body: order, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = h.Handle(ctx, events.APIGatewayV2HTTPRequest{Body: string(order), PathParameters: map[string]string{"provider": "shopify"}, Headers: lower(headers)})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the Shopify delivery: %d %v\n%s", resp.StatusCode, err, logs.String())
	}
	accounts := &store.Accounts{DB: dynamodb.NewFromConfig(stack.AWS), Table: stack.Table("EventsTable")}
	if got, _, err := accounts.Page(ctx, "stripe", "", 100); err != nil || !slices.Equal(got, []string{"acct_rec"}) {
		t.Errorf("Stripe's accounts seen: %v, %v; want acct_rec", got, err)
	}
	if got, _, err := accounts.Page(ctx, "shopify", "", 100); err != nil || len(got) != 0 {
		t.Errorf("Shopify's accounts seen: %v, %v; want none (a shop is no connected account)", got, err)
	}
}

func lower(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[strings.ToLower(k)] = v
	}
	return out
}

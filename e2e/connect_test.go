package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestAConnectedAccountsEventThroughTheGateway: on the local stack with a
// Connect endpoint's secret, a connected account's event signed with it
// is processed into that account's mirror and entitlement, the same
// customer id under the platform is another customer, and the same event
// signed with the platform's secret is refused (400) and stored nowhere.
func TestAConnectedAccountsEventThroughTheGateway(t *testing.T) {
	const connectSecret = "whsec_e2e_connect_endpoint"
	stack := testenv.StartDevstack(t, testenv.DevstackOptions{Env: map[string]string{"STRIPE_CONNECT_WEBHOOK_SECRET": connectSecret}})
	events := eventsStore(t, stack.Prefix)
	ctx := context.Background()
	const customer = "cus_e2e_connect"
	build := func(account, status string) ([]byte, event.Envelope) {
		b, err := stripefixture.Build(
			"customer.subscription.updated",
			stripefixture.Options{Account: account, Customer: customer, ObjectID: "sub_e2e_connect", Status: status},
		)
		if err != nil {
			t.Fatal(err)
		}
		env, err := event.DecodeEnvelope(b)
		if err != nil {
			t.Fatal(err)
		}
		return b, env
	}
	wrong, wrongEnv := build("acct_e2e", "active")
	if status, resp := deliver(t, stack.URL, wrong, devstack.DefaultWebhookSecret); status != 400 {
		t.Fatalf("a connected account's event signed with the platform's secret: got %d %s, want 400", status, resp)
	}
	if _, err := events.Get(ctx, "stripe", wrongEnv.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record of the refused event: got %v, want none", err)
	}
	connected, env := build("acct_e2e", "active")
	if status, resp := deliver(t, stack.URL, connected, connectSecret); status != 200 {
		t.Fatalf("a connected account's event signed with the Connect secret: got %d %s, want 200", status, resp)
	}
	platform, penv := build("", "past_due")
	if status, resp := deliver(t, stack.URL, platform, devstack.DefaultWebhookSecret); status != 200 {
		t.Fatalf("the platform's event: got %d %s, want 200", status, resp)
	}
	for _, id := range []string{env.ID, penv.ID} {
		testenv.Eventually(t, 30*time.Second, "event "+id+" to be processed", func() bool {
			r, err := events.Get(ctx, "stripe", id)
			return err == nil && r.Status == event.StatusProcessed
		})
	}
	testenv.Eventually(t, 10*time.Second, "the refused delivery's line", func() bool {
		return len(stack.Lines(map[string]string{"msg": "webhook", "outcome": "rejected_wrong_endpoint"})) >= 1
	})
	if len(stack.Lines(map[string]string{"msg": "webhook", "outcome": "rejected_wrong_endpoint"})) != 1 {
		t.Error("the refused delivery's line: want one with outcome rejected_wrong_endpoint")
	}
	reader := &mirror.Reader{DB: dynamodb.NewFromConfig(testenv.AWS(t)), Table: stack.Prefix + "-MirrorTable"}
	ent, err := reader.Entitlement(ctx, mirror.Key("acct_e2e", customer))
	if err != nil || !ent.Active || ent.Account != "acct_e2e" {
		t.Errorf("acct_e2e's entitlement: got %+v, %v; want active", ent, err)
	}
	ent, err = reader.Entitlement(ctx, customer)
	if err != nil || ent.Active || ent.Account != "" || len(ent.Subscriptions) != 1 || ent.Subscriptions[0].Status != "past_due" {
		t.Errorf("the platform's entitlement of %s: got %+v, %v; want its own past_due subscription only", customer, ent, err)
	}
}

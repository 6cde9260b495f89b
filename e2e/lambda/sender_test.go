package lambda

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// senderEvent is the HTTP API's event for a POST of body to
// /webhooks/<name> (the {provider} route) with headers.
func senderEvent(tb testing.TB, name string, body []byte, headers map[string]string) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "apigw-http-v2-request.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		tb.Fatal(err)
	}
	h := ev["headers"].(map[string]any)
	delete(h, "stripe-signature")
	for k, v := range headers {
		h[k] = v
	}
	ev["routeKey"], ev["rawPath"] = "POST /webhooks/{provider}", "/webhooks/"+name
	ev["pathParameters"] = map[string]any{"provider": name}
	rc := ev["requestContext"].(map[string]any)
	rc["routeKey"], rc["requestId"] = "POST /webhooks/{provider}", randomHex(8)
	rc["http"].(map[string]any)["path"] = "/webhooks/" + name
	ev["body"], ev["isBase64Encoded"] = string(body), false
	out, err := json.Marshal(ev)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestReceiverBinaryServesADeclaredSenderWithTheTemplatesGrant: deployed
// with GenericSenders and GenericSendersSecretsPath, the receiver binary
// serves the declared sender on /webhooks/<name>, reading its secret from
// <path>/<name> under the template's grant (the parameters under the path
// alone: checkLeastPrivilege); the delivery is stored under the sender's
// name, and its retry is answered 200 too.
func TestReceiverBinaryServesADeclaredSenderWithTheTemplatesGrant(t *testing.T) {
	const decl = `[{"name":"n8n","prefix":"sha256=","signature_header":"x-n8n-signature","timestamp_header":"x-n8n-timestamp","id_header":"x-n8n-delivery",` +
		`"template":"{timestamp}.{id}.{body}","type_field":"type"}]`
	s := newSetupWith(t, map[string]string{"GenericSenders": decl, "GenericSendersSecretsPath": "{base}senders"}, nil)
	path, _ := s.stack.Template.Parameter("GenericSendersSecretsPath")
	const secret = "n8n lambda secret"
	if _, err := ssm.NewFromConfig(s.stack.AWS).PutParameter(context.Background(), &ssm.PutParameterInput{
		Name: aws.String(path + "/n8n"), Value: aws.String(secret), Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true),
	}); err != nil {
		t.Fatal(err)
	}
	fn := start(t, hostBootstrap(t, receiverID), s.env(t, receiverID, map[string]string{"N8N_EVENT_TYPES": "workflow.completed"}))
	events := &store.Events{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("EventsTable")}
	senders, err := provider.ParseSenders(decl)
	if err != nil {
		t.Fatal(err)
	}
	id := "run_" + randomHex(6)
	body := []byte(`{"type":"workflow.completed","workflow":"lambda"}`)
	h, err := senders[0].Spec().Sign(secret, provider.Delivery{ID: id, Body: body, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, what := range []string{"first delivery", "n8n's retry"} {
		status, out := fn.call(t, senderEvent(t, "n8n", body, h))
		var answer map[string]any
		decodeAnswer(t, status, out, &answer)
		if answer["statusCode"] != float64(200) {
			t.Fatalf("%s: got %s, want 200", what, out)
		}
	}
	// Stripe's endpoint beside it, as before (and its grant used).
	stripeBody, err := stripefixture.Build("customer.subscription.created", stripefixture.Options{Customer: "cus_rie_" + randomHex(4)})
	if err != nil {
		t.Fatal(err)
	}
	status, out := fn.call(t, httpAPIEvent(t, stripeBody, provider.SignStripe(stripeBody, s.secret, time.Now()), false))
	var answer map[string]any
	decodeAnswer(t, status, out, &answer)
	if answer["statusCode"] != float64(200) {
		t.Fatalf("stripe delivery: got %s, want 200", out)
	}
	rec, err := events.Get(context.Background(), "n8n", id)
	if err != nil {
		t.Fatalf("stored record: %v", err)
	}
	if rec.Provider != "n8n" || rec.Type != "workflow.completed" || rec.Status != event.StatusReceived || rec.Source != event.SourceWebhook {
		t.Errorf("record: provider %s type %s status %s source %s; want n8n workflow.completed, received from a webhook", rec.Provider, rec.Type, rec.Status, rec.Source)
	}
	if n := secretReads(s.rec.Calls(0)); n != 2 {
		t.Errorf("secret reads: got %d, want 2 (the sender's, once; Stripe's)", n)
	}
	checkLeastPrivilege(t, s.stack.Template, s.stack.Resources, receiverID, s.rec.Calls(0))
}

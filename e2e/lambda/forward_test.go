package lambda

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stripe/stripe-go/v81/webhook"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// TestProcessorForwardsWithTheTemplatesForwardSettings deploys the template
// with ForwardUrl and ForwardSecretParameter set: the processor gets the
// target and the secret's parameter from the template alone, reads the
// secret once, when it first forwards, signs each forwarded event with it
// (one stored, one too large to store, whose payload is fetched with the
// API key, also read on first need), and its policy (the grant that exists
// only with ForwardSecretParameter) allows exactly what it did.
func TestProcessorForwardsWithTheTemplatesForwardSettings(t *testing.T) {
	type delivery struct {
		sig  string
		body []byte
	}
	var mu sync.Mutex
	var got []delivery
	// The application is down for the first delivery: the retry exercises
	// the rest of the processor's policy (its backoff), so the policy is
	// checked whole with forwarding on.
	app := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.Header.Get("Webhook-Inbox-Signature"), body})
		first := len(got) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer app.Close()
	// The function trusts the application's certificate as Go does on
	// Linux, through SSL_CERT_FILE: the template allows https targets only.
	certFile := filepath.Join(t.TempDir(), "app.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: app.Certificate().Raw})
	if err := os.WriteFile(certFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}

	fwdSecret := "fwd_rie_" + randomHex(12)
	s := newSetupWith(t,
		map[string]string{"ForwardUrl": app.URL + "/events", "ForwardSecretParameter": "{base}forward-secret"},
		map[string]string{"ForwardSecretParameter": fwdSecret})
	stripe := &fakeStripe{key: s.apiKey, events: map[string][]byte{}}
	api := httptest.NewServer(stripe)
	defer api.Close()
	env := s.env(t, processorID, map[string]string{"SSL_CERT_FILE": certFile, "RETRY_BACKOFF_BASE": "1s", "STRIPE_API_BASE": api.URL})
	if env["FORWARD_URL"] != app.URL+"/events" || !strings.HasSuffix(env["FORWARD_SECRET_PARAMETER"], "/forward-secret") {
		t.Fatalf(
			"processor environment: FORWARD_URL=%q FORWARD_SECRET_PARAMETER=%q, want the template's parameters",
			env["FORWARD_URL"],
			env["FORWARD_SECRET_PARAMETER"],
		)
	}
	fn := start(t, hostBootstrap(t, processorID), env)

	ctx := context.Background()
	q := s.stack.Queue("WebhookQueue")
	events := &store.Events{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("EventsTable")}
	in := &ingest.Ingester{Store: events, Queue: &queue.Queue{Client: sqs.NewFromConfig(s.stack.AWS), URL: q.URL}, Provider: event.ProviderStripe}
	firstSub := stripefixture.Options{Customer: "cus_rie_" + randomHex(4), ObjectID: "sub_rie_" + randomHex(4), Created: time.Now().Unix()}
	body, err := stripefixture.Build("customer.subscription.created", firstSub)
	if err != nil {
		t.Fatal(err)
	}
	envl, _ := event.DecodeEnvelope(body)
	if _, err := in.Ingest(ctx, envl, body, event.SourceWebhook); err != nil {
		t.Fatal(err)
	}
	var answer map[string]any
	for attempt := 1; attempt <= 2; attempt++ {
		status, out := fn.call(t, sqsEvent(t, q.ARN, receive(t, s, q.URL)))
		decodeAnswer(t, status, out, &answer)
	}
	if rec, err := events.Get(ctx, event.ProviderStripe, envl.ID); err != nil || rec.Status != event.StatusProcessed {
		t.Fatalf("record: got %s (%v), want processed\n%s", rec.Status, err, fn.out.String())
	}
	if reads := secretReads(s.rec.Calls(0)); reads != 1 {
		t.Errorf("secret reads for an event with its payload: got %d, want 1 (the forward secret, on the first forward)", reads)
	}

	// An event too large to store: its payload is fetched from Stripe with
	// the API key, read now, and forwarded.
	big, err := stripefixture.Build(
		"customer.subscription.updated",
		stripefixture.Options{Customer: "cus_rie_" + randomHex(4), ObjectID: "sub_rie_" + randomHex(4)},
	)
	if err != nil {
		t.Fatal(err)
	}
	bigEnv, _ := event.DecodeEnvelope(big)
	stripe.mu.Lock()
	stripe.events[bigEnv.ID] = big
	stripe.mu.Unlock()
	omitted := event.NewRecord(event.ProviderStripe, bigEnv, nil, ingest.Hash(big), event.SourceWebhook, event.StatusReceived, time.Now())
	omitted.PayloadOmitted = true
	if _, err := events.Create(ctx, &omitted); err != nil {
		t.Fatal(err)
	}
	if err := in.Queue.Send(ctx, event.PointerTo(omitted)); err != nil {
		t.Fatal(err)
	}
	status, out := fn.call(t, sqsEvent(t, q.ARN, receive(t, s, q.URL)))
	decodeAnswer(t, status, out, &answer)
	if rec, err := events.Get(ctx, event.ProviderStripe, bigEnv.ID); err != nil || rec.Status != event.StatusProcessed {
		t.Fatalf("fetched event's record: got %s (%v), want processed\n%s", rec.Status, err, fn.out.String())
	}

	// An older event of the first subscription, arriving after it: read
	// before its effect runs (the object's standing), superseded, its
	// commit checks that no audit claimed its change.
	older := firstSub
	older.Created -= 60
	olderBody, err := stripefixture.Build("customer.subscription.updated", older)
	if err != nil {
		t.Fatal(err)
	}
	olderEnv, _ := event.DecodeEnvelope(olderBody)
	if _, err := in.Ingest(ctx, olderEnv, olderBody, event.SourceWebhook); err != nil {
		t.Fatal(err)
	}
	status, out = fn.call(t, sqsEvent(t, q.ARN, receive(t, s, q.URL)))
	decodeAnswer(t, status, out, &answer)
	if rec, err := events.Get(ctx, event.ProviderStripe, olderEnv.ID); err != nil || rec.Status != event.StatusProcessed || rec.Outcome != outcome.Superseded {
		t.Fatalf("older event's record: got %s %s (%v), want processed, superseded\n%s", rec.Status, rec.Outcome, err, fn.out.String())
	}

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 4 {
		t.Fatalf("forwarded: got %d requests, want the first event twice (503, then 200), the fetched one and the older one once", len(got))
	}
	for i, d := range got {
		want := body
		switch i {
		case 2:
			want = big
		case 3:
			want = olderBody
		}
		// As the application verifies it (effect.Forward's doc): stripe-go's
		// verifier, the forward secret, the default 5-minute tolerance.
		if string(d.body) != string(want) || webhook.ValidatePayload(d.body, d.sig, fwdSecret) != nil {
			t.Errorf("forwarded request %d (Webhook-Inbox-Signature %q): want the event, signed with the secret ForwardSecretParameter holds", i, d.sig)
		}
	}
	if reads := secretReads(s.rec.Calls(0)); reads != 2 {
		t.Errorf("secret reads: got %d, want 2 (the forward secret and the API key, each once, on first need)", reads)
	}
	checkLeastPrivilege(t, s.stack.Template, s.stack.Resources, processorID, s.rec.Calls(0))
}

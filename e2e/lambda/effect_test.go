package lambda

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestProcessorRunsTheExampleEffectWithTheTemplatesSettings deploys the
// template with EffectSettings and EffectSecrets set, and the token stored,
// as docs/design.md's "Turn it on in a deployment" says for the example
// effect (its values read from there; only the API's address is this
// test's server, and the stage this test's own): the real processor
// binary gets the billing API's URL and the secret's path from the template
// alone, reads the token from the stage's effects path once, on the first
// invoice.paid, calls the API with it and the event's idempotency key, and
// its policy (the grant that exists only with EffectSecrets) allows exactly
// what it did, every grant used.
func TestProcessorRunsTheExampleEffectWithTheTemplatesSettings(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r)
		first := len(got) == 1
		mu.Unlock()
		if first {
			// Down once: the retry exercises the rest of the processor's
			// policy (its backoff).
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer api.Close()
	doc := documentedDeployment(t)
	settings := doc.settings
	if u, err := url.Parse(strings.TrimPrefix(settings, "BILLING_API_URL=")); err == nil && u.Host != "" {
		settings = strings.ReplaceAll(settings, u.Scheme+"://"+u.Host, api.URL)
	}
	s := newSetupWith(t, map[string]string{"EffectSettings": settings, "EffectSecrets": doc.secrets}, nil)
	stage, _ := s.stack.Template.Parameter("Stage")
	token := "bt_rie_" + randomHex(12)
	if _, err := ssm.NewFromConfig(s.stack.AWS).PutParameter(context.Background(), &ssm.PutParameterInput{
		// aws ssm put-parameter --value file://billing-token.txt keeps the
		// file's newline.
		Name: aws.String(strings.Replace(doc.parameter, "/webhook-inbox/dev/", "/webhook-inbox/"+stage+"/", 1)), Value: aws.String(token + "\n"),
		Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true),
	}); err != nil {
		t.Fatal(err)
	}
	stripe := &fakeStripe{key: s.apiKey, events: map[string][]byte{}}
	stripeAPI := httptest.NewServer(stripe)
	defer stripeAPI.Close()
	env := s.env(t, processorID, map[string]string{"RETRY_BACKOFF_BASE": "1s", "STRIPE_API_BASE": stripeAPI.URL})
	if env["EFFECT_SECRETS_PATH"] != "/webhook-inbox/"+stage+"/effects/" || !strings.HasPrefix(env["EFFECT_SETTINGS"], "BILLING_API_URL=") {
		t.Fatalf("processor environment: EFFECT_SETTINGS=%q EFFECT_SECRETS_PATH=%q, want the template's", env["EFFECT_SETTINGS"], env["EFFECT_SECRETS_PATH"])
	}
	fn := start(t, hostBootstrap(t, processorID), env)

	ctx := context.Background()
	q := s.stack.Queue("WebhookQueue")
	events := &store.Events{DB: dynamodb.NewFromConfig(s.stack.AWS), Table: s.stack.Table("EventsTable")}
	in := &ingest.Ingester{Store: events, Queue: &queue.Queue{Client: sqs.NewFromConfig(s.stack.AWS), URL: q.URL}, Provider: event.ProviderStripe}
	body, err := stripefixture.Build("invoice.paid", stripefixture.Options{Customer: "cus_rie_" + randomHex(4)})
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
	// The rest of the processor's policy, so that it is checked whole with
	// the effect on: a subscription (its customer's entitlement) too large
	// to store (its payload fetched with the API key).
	sub, err := stripefixture.Build(
		"customer.subscription.created",
		stripefixture.Options{Customer: "cus_rie_" + randomHex(4), ObjectID: "sub_rie_" + randomHex(4)},
	)
	if err != nil {
		t.Fatal(err)
	}
	subEnv, _ := event.DecodeEnvelope(sub)
	stripe.mu.Lock()
	stripe.events[subEnv.ID] = sub
	stripe.mu.Unlock()
	omitted := event.NewRecord(event.ProviderStripe, subEnv, nil, ingest.Hash(sub), event.SourceWebhook, event.StatusReceived, time.Now())
	omitted.PayloadOmitted = true
	if _, err := events.Create(ctx, &omitted); err != nil {
		t.Fatal(err)
	}
	if err := in.Queue.Send(ctx, event.PointerTo(omitted)); err != nil {
		t.Fatal(err)
	}
	status, out := fn.call(t, sqsEvent(t, q.ARN, receive(t, s, q.URL)))
	decodeAnswer(t, status, out, &answer)
	if rec, err := events.Get(ctx, event.ProviderStripe, subEnv.ID); err != nil || rec.Status != event.StatusProcessed {
		t.Fatalf("subscription's record: got %s (%v), want processed\n%s", rec.Status, err, fn.out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("billing API: got %d requests, want 2 (the 503, then the retry)", len(got))
	}
	for i, r := range got {
		if r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("Idempotency-Key") != envl.ID+":billing" {
			t.Errorf(
				"request %d: Authorization %q, Idempotency-Key %q; want the stored token and the event's key",
				i,
				r.Header.Get("Authorization"),
				r.Header.Get("Idempotency-Key"),
			)
		}
	}
	if reads := secretReads(s.rec.Calls(0)); reads != 2 {
		t.Errorf("secret reads: got %d, want 2 (the token on the first invoice.paid, the API key on the first fetch)", reads)
	}
	checkLeastPrivilege(t, s.stack.Template, s.stack.Resources, processorID, s.rec.Calls(0))
}

// deployment is what docs/design.md's "Turn it on in a deployment" tells a
// reader to run, for the samconfig.toml's default stage (dev).
type deployment struct {
	parameter string // the token's SecureString
	settings  string // EffectSettings
	secrets   string // EffectSecrets
}

var (
	docPut = regexp.MustCompile(
		`(?m)^aws ssm put-parameter --type SecureString --name (/webhook-inbox/dev/effects/\S+) --value file://billing-token\.txt$`,
	)
	docSettings = regexp.MustCompile(`"EffectSettings=([^"]+)"`)
	docSecrets  = regexp.MustCompile(`"EffectSecrets=([^"]+)"`)
)

// documentedDeployment reads the steps from docs/design.md; a step the
// test cannot find there fails it, as it would stop a reader.
func documentedDeployment(t *testing.T) deployment {
	t.Helper()
	_, block, _ := testenv.DocSteps(t, "docs/design.md", "**Turn it on in a deployment.**")
	var d deployment
	for _, f := range []struct {
		re  *regexp.Regexp
		dst *string
	}{{docPut, &d.parameter}, {docSettings, &d.settings}, {docSecrets, &d.secrets}} {
		m := f.re.FindStringSubmatch(block)
		if m == nil {
			t.Fatalf("docs/design.md: no match for %s in\n%s", f.re, block)
		}
		*f.dst = m[1]
	}
	return d
}

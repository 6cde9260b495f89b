package receiverboot

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEveryConfigurationProblemIsReportedAtOnce(t *testing.T) {
	_, err := FromEnv(context.Background(), envMap(map[string]string{
		"STRIPE_MODE":         "production",
		"SIGNATURE_TOLERANCE": "five minutes",
		"MAX_BODY_BYTES":      "1MB",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil {
		t.Fatal("got nil error for an empty configuration")
	}
	for _, want := range []string{"EVENTS_TABLE", "MIRROR_TABLE", "QUEUE_URL", "STRIPE_MODE", "SIGNATURE_TOLERANCE", "MAX_BODY_BYTES", "STRIPE_WEBHOOK_SECRETS_PARAMETER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func TestSecretNeverInTheError(t *testing.T) {
	// A local secret that is not a usable list still never reaches an error.
	_, err := FromEnv(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_WEBHOOK_SECRET": " , ",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil {
		t.Fatal("got nil error for a blank secret list")
	}
	if strings.Contains(err.Error(), "whsec") {
		t.Errorf("error leaks a secret: %v", err)
	}
}

func TestBuildsFromALocalSecret(t *testing.T) {
	h, err := FromEnv(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_WEBHOOK_SECRET": "whsec_a,whsec_b",
	}), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
	if err != nil || h == nil {
		t.Fatalf("got %v, %v", h, err)
	}
}

// ssmStub is Parameter Store holding value (or failing with status), and
// counting reads.
type ssmStub struct {
	mu     sync.Mutex
	value  string
	status int
	reads  int
}

func (s *ssmStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if s.status != 0 {
		w.WriteHeader(s.status)
		_, _ = w.Write([]byte(`{"__type":"AccessDeniedException","message":"not authorized to perform ssm:GetParameter"}`))
		return
	}
	b, _ := json.Marshal(map[string]any{"Parameter": map[string]string{"Name": "/p", "Type": "SecureString", "Value": s.value}})
	_, _ = w.Write(b)
}

func (s *ssmStub) set(value string, status int) {
	s.mu.Lock()
	s.value, s.status = value, status
	s.mu.Unlock()
}

func (s *ssmStub) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// TestSigningSecretsAreReadOnTheFirstRequest: the cold start reads
// nothing; the first request reads the secrets, and later ones do not.
// While the secrets cannot be read, or the value holds no secret, each
// request is answered 503 with the generic body (outcome
// secrets_unavailable, logged and counted), never an invocation error
// (which API Gateway turns into an opaque 500), and a request after
// secrets.FailureBackoff reads again: a parameter fixed in Parameter Store
// is picked up without a redeploy.
func TestSigningSecretsAreReadOnTheFirstRequest(t *testing.T) {
	stub := &ssmStub{status: http.StatusBadRequest}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "a", SecretAccessKey: "b"}, nil
		})}
	var logs bytes.Buffer
	c, err := ConfigFromEnv(envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "AWS_LAMBDA_FUNCTION_NAME": "receiver",
		"STRIPE_WEBHOOK_SECRETS_PARAMETER": "/webhook-inbox/dev/stripe/webhook-secrets",
	}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The secrets' backoff is measured on a clock the test advances.
	clock := &fakeClock{t: time.Now()}
	c.Now = clock.now
	h, err := New(context.Background(), c, cfg, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := stub.count(); n != 0 {
		t.Fatalf("cold start: %d reads, want 0", n)
	}
	// A delivery signed with another secret: answered 400 once the
	// receiver can verify signatures, without any other AWS call.
	body := `{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false}`
	req := events.APIGatewayV2HTTPRequest{
		Body:    body,
		Headers: map[string]string{"stripe-signature": provider.SignStripe([]byte(body), "whsec_other", time.Now())},
	}

	unavailable := func(what string) {
		t.Helper()
		logs.Reset()
		resp, err := h.Handle(context.Background(), req)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Body != `{"error":"temporarily unable to accept the event; retry"}` {
			t.Fatalf("%s: got %d %q, %v; want 503 with the generic body and no invocation error", what, resp.StatusCode, resp.Body, err)
		}
		var line map[string]any
		if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
			t.Fatalf("%s: log %q: %v", what, logs.String(), err)
		}
		if line["outcome"] != "secrets_unavailable" || line["secrets_failures"] != 1.0 || line["status_code"] != 503.0 {
			t.Errorf("%s: log line %v, want outcome secrets_unavailable, secrets_failures 1, status 503", what, line)
		}
		if strings.Contains(logs.String(), "whsec") || strings.Contains(logs.String(), " , ") {
			t.Errorf("%s: the log shows a value: %s", what, logs.String())
		}
	}
	unavailable("secrets unreadable")
	if !strings.Contains(logs.String(), "AccessDeniedException") {
		t.Errorf("secrets unreadable: logs %q, want the read's error", logs.String())
	}
	stub.set(" , ", 0)
	// Read again once the backoff has passed, and answered 503 until then.
	readAgain := func(what string) {
		t.Helper()
		before := stub.count()
		unavailable(what + ", within the backoff")
		if n := stub.count(); n != before {
			t.Fatalf("%s: %d reads within the backoff, want none", what, n-before)
		}
		clock.advance(secrets.FailureBackoff)
		unavailable(what)
		if n := stub.count(); n != before+1 {
			t.Fatalf("%s: %d reads after the backoff, want 1", what, n-before)
		}
	}
	readAgain("no secret in the value")
	stub.set("whsec_right", 0)
	clock.advance(secrets.FailureBackoff)
	if resp, err := h.Handle(context.Background(), req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("the fixed secrets, after the backoff: got %d, %v; want the receiver's 400 for the wrong signature", resp.StatusCode, err)
	}
	for range 2 {
		resp, err := h.Handle(context.Background(), req)
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("secrets fixed: got %d, %v; want the receiver's 400 for the wrong signature", resp.StatusCode, err)
		}
	}
	if n := stub.count(); n != 3 {
		t.Errorf("reads: got %d, want 3 (failed, unusable, then kept: a refusal within a minute of the read reads nothing)", n)
	}
}

// fakeClock is a clock the test advances.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }

// TestProvidersAreServedOnlyWithTheirSecrets: a provider is served once its
// local secret variable (or its parameter) is set; without it, 404.
func TestProvidersAreServedOnlyWithTheirSecrets(t *testing.T) {
	base := map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_WEBHOOK_SECRET": "whsec_a"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	// Signed with another secret: 400 from a served provider, before any
	// AWS call; 404 from one not served.
	req := func(name string) events.APIGatewayV2HTTPRequest {
		return events.APIGatewayV2HTTPRequest{Body: `{}`, PathParameters: map[string]string{"provider": name},
			Headers: map[string]string{
				"x-hub-signature-256":   "sha256=" + strings.Repeat("0", 64),
				"x-shopify-hmac-sha256": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
				"webhook-id":            "m",
				"webhook-timestamp":     "1",
				"webhook-signature":     "v1,AAAA",
			}}
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want map[string]int
	}{
		{"none", with(), map[string]int{"github": 404, "shopify": 404, "standard": 404}},
		{"github", with("GITHUB_WEBHOOK_SECRET", "gh"), map[string]int{"github": 400, "shopify": 404, "standard": 404}},
		{"all", with("GITHUB_WEBHOOK_SECRET", "gh", "SHOPIFY_WEBHOOK_SECRET", "shp", "STANDARD_WEBHOOK_SECRET", "whsec_YQ=="), map[string]int{"github": 400, "shopify": 400, "standard": 400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := FromEnv(context.Background(), envMap(tc.env), aws.Config{Region: "us-east-1"}, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				resp, err := h.Handle(context.Background(), req(name))
				if err != nil || resp.StatusCode != want {
					t.Errorf("%s: got %d, %v; want %d", name, resp.StatusCode, err, want)
				}
			}
		})
	}
	// A Standard Webhooks secret that is no whsec_ value fails the cold
	// start, naming the variable but not the value.
	_, err := FromEnv(context.Background(), envMap(with("STANDARD_WEBHOOK_SECRET", "plain-secret-value")), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
	if err == nil || strings.Contains(err.Error(), "plain-secret-value") || !strings.Contains(err.Error(), "STANDARD_WEBHOOK_SECRET") {
		t.Errorf("bad standard secret: got %v, want an error naming the variable, not the value", err)
	}
	// In Lambda, a provider's plain variable fails the cold start, as
	// Stripe's does.
	_, err = FromEnv(
		context.Background(),
		envMap(with("AWS_LAMBDA_FUNCTION_NAME", "receiver", "STRIPE_WEBHOOK_SECRETS_PARAMETER", "/p", "GITHUB_WEBHOOK_SECRET", "gh")),
		aws.Config{Region: "us-east-1"},
		slog.Default(),
		nil,
	)
	if err == nil || !strings.Contains(err.Error(), "GITHUB_WEBHOOK_SECRET") {
		t.Errorf("plain variable in Lambda: got %v, want it refused", err)
	}
}

// TestAProvidersSettingsAreReadFromItsVariables: a provider whose Spec
// names settings gets each from <NAME>_WEBHOOK_<SETTING>; others get
// none.
func TestAProvidersSettingsAreReadFromItsVariables(t *testing.T) {
	all := provider.All
	t.Cleanup(func() { provider.All = all })
	provider.All = append(append([]provider.Spec(nil), all...), provider.Spec{Name: "square", Settings: []string{"url", "header"}})
	env := envMap(map[string]string{"SQUARE_WEBHOOK_URL": " https://hooks.example.com/webhooks/square ", "GITHUB_WEBHOOK_URL": "x"})
	got := withSettings(provider.Options{Tolerance: time.Minute}, settings(env, "square"))
	if got.Tolerance != time.Minute || len(got.Settings) != 1 || got.Settings["url"] != "https://hooks.example.com/webhooks/square" {
		t.Errorf("square: got %+v, want the url setting, trimmed, beside the options given", got)
	}
	if got := withSettings(provider.Options{}, settings(env, provider.GitHub)); got.Settings != nil {
		t.Errorf("github: got settings %v, want none (its Spec names none)", got.Settings)
	}
}

// TestConnectSecretsBesideThePlatforms: STRIPE_CONNECT_WEBHOOK_SECRET is
// a second set of Stripe secrets on /webhooks/stripe, for connected
// accounts' events only; without it, every event naming an account is
// refused. Each refusal is 400 rejected_wrong_endpoint, before any AWS
// call.
func TestConnectSecretsBesideThePlatforms(t *testing.T) {
	base := map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_WEBHOOK_SECRET": "whsec_platform"}
	own := `{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false}`
	connected := `{"id":"evt_2","object":"event","type":"invoice.paid","livemode":false,"account":"acct_1"}`
	for _, tc := range []struct {
		name          string
		connectSecret string
		body, secret  string
		want          string
	}{
		{"connected event, platform secret", "whsec_connect", connected, "whsec_platform", "rejected_wrong_endpoint"},
		{"platform event, connect secret", "whsec_connect", own, "whsec_connect", "rejected_wrong_endpoint"},
		{"connected event, no connect secret configured", "", connected, "whsec_platform", "rejected_wrong_endpoint"},
		{"connected event, forged", "whsec_connect", connected, "whsec_forged", "rejected_signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			if tc.connectSecret != "" {
				env["STRIPE_CONNECT_WEBHOOK_SECRET"] = tc.connectSecret
			}
			var logs bytes.Buffer
			h, err := FromEnv(context.Background(), envMap(env), aws.Config{Region: "us-east-1"}, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{Body: tc.body,
				Headers: map[string]string{"stripe-signature": provider.SignStripe([]byte(tc.body), tc.secret, time.Now())}})
			if err != nil || resp.StatusCode != 400 || !strings.Contains(logs.String(), `"outcome":"`+tc.want+`"`) {
				t.Errorf("got %d, %v (%s); want 400 %s", resp.StatusCode, err, logs.String(), tc.want)
			}
		})
	}
	// In Lambda the Connect secret, too, comes only from its parameter.
	_, err := FromEnv(
		context.Background(),
		envMap(map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "AWS_LAMBDA_FUNCTION_NAME": "receiver",
			"STRIPE_WEBHOOK_SECRETS_PARAMETER": "/p", "STRIPE_CONNECT_WEBHOOK_SECRET": "whsec_connect"}),
		aws.Config{Region: "us-east-1"},
		slog.Default(),
		nil,
	)
	if err == nil || !strings.Contains(err.Error(), "STRIPE_CONNECT_WEBHOOK_SECRET") || strings.Contains(err.Error(), "whsec_connect") {
		t.Errorf("plain Connect variable in Lambda: got %v, want it refused, naming the variable, not the value", err)
	}
}

// TestConfiguredSendersAreServed: each sender GENERIC_SENDERS declares is
// served on /webhooks/<name> with its own secret (another secret's
// signature: 400; a name not declared: 404); a declaration that trusts an unsigned id, a sender without a
// secret, and a path outside the stage fail the cold start with the
// reason.
func TestConfiguredSendersAreServed(t *testing.T) {
	const decl = `[{"name":"n8n","prefix":"sha256=","signature_header":"x-n8n-signature","id_field":"id","type_field":"type"}]`
	base := map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_WEBHOOK_SECRET": "whsec_a", "GENERIC_SENDERS": decl}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	h, err := FromEnv(context.Background(), envMap(with("N8N_WEBHOOK_SECRET", "n8n secret")), aws.Config{Region: "us-east-1"}, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	senders, err := provider.ParseSenders(decl)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"run-1","type":"workflow.completed"}`)
	for _, tc := range []struct {
		name, path, secret string
		want               int
	}{
		{"another secret", "n8n", "other", 400},
		{"not declared", "zapier", "n8n secret", 404},
	} {
		hdr, err := senders[0].Spec().Sign(tc.secret, provider.Delivery{Body: body, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := h.Handle(context.Background(), events.APIGatewayV2HTTPRequest{Body: string(body), Headers: hdr, PathParameters: map[string]string{"provider": tc.path}})
		if err != nil || resp.StatusCode != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.name, resp.StatusCode, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"an unsigned id header", with("N8N_WEBHOOK_SECRET", "s", "GENERIC_SENDERS", `[{"name":"n8n","signature_header":"x-sig","id_header":"x-id"}]`), "id_header x-id is not signed"},
		{"no secret", with(), "GENERIC_SENDERS_SECRETS_PATH"},
		{"a plain secret in Lambda", with("AWS_LAMBDA_FUNCTION_NAME", "receiver", "STRIPE_WEBHOOK_SECRETS_PARAMETER", "/p", "N8N_WEBHOOK_SECRET", "s"), "N8N_WEBHOOK_SECRET is set"},
		{"a path outside the stage", with("STAGE", "prod", "STRIPE_WEBHOOK_SECRETS_PARAMETER", "/webhook-inbox/prod/stripe", "STRIPE_WEBHOOK_SECRET", "", "AWS_LAMBDA_FUNCTION_NAME", "receiver", "GENERIC_SENDERS_SECRETS_PATH", "/webhook-inbox/staging/senders"), "not one of stage prod's paths"},
		{"a path over Stripe's secrets", with("AWS_LAMBDA_FUNCTION_NAME", "receiver", "STRIPE_WEBHOOK_SECRET", "", "STRIPE_WEBHOOK_SECRETS_PARAMETER", "/webhook-inbox/dev/stripe", "GENERIC_SENDERS_SECRETS_PATH", "/webhook-inbox"), "keep the senders' path for their secrets alone"},
		{"a name whose variable is Connect's", with("GENERIC_SENDERS", `[{"name":"stripe_connect","signature_header":"x-sig","id_field":"id"}]`), "another secret's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromEnv(context.Background(), envMap(tc.env), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "n8n secret") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
	// In Lambda, the parameter under the path, read on first use.
	if _, err := FromEnv(context.Background(), envMap(with("AWS_LAMBDA_FUNCTION_NAME", "receiver", "STRIPE_WEBHOOK_SECRET", "", "STAGE", "dev",
		"STRIPE_WEBHOOK_SECRETS_PARAMETER", "/webhook-inbox/dev/stripe", "GENERIC_SENDERS_SECRETS_PATH", "/webhook-inbox/dev/senders/")), aws.Config{Region: "us-east-1"}, slog.Default(), nil); err != nil {
		t.Errorf("a sender's parameter in Lambda: %v", err)
	}
}

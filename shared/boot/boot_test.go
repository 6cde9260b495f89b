package boot

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/mirror"
)

func envMap(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestEveryConfigurationProblemIsReportedAtOnce(t *testing.T) {
	_, err := Receiver(context.Background(), envMap(map[string]string{
		"STRIPE_MODE":         "production",
		"SIGNATURE_TOLERANCE": "five minutes",
		"MAX_BODY_BYTES":      "1MB",
	}), aws.Config{}, slog.Default())
	if err == nil {
		t.Fatal("got nil error for an empty configuration")
	}
	for _, want := range []string{"EVENTS_TABLE", "MIRROR_TABLE", "QUEUE_URL", "STRIPE_MODE", "SIGNATURE_TOLERANCE", "MAX_BODY_BYTES"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func TestProcessorNeedsTheRedriveCount(t *testing.T) {
	_, err := Processor(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "MAX_RECEIVE_COUNT") {
		t.Fatalf("got %v, want an error naming MAX_RECEIVE_COUNT", err)
	}
}

func TestProcessorRejectsAnUnreadableFieldList(t *testing.T) {
	_, err := Processor(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "MAX_RECEIVE_COUNT": "5",
		"MIRROR_KEEP_FIELDS": "charge:metadata",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "MIRROR_KEEP_FIELDS") || !strings.Contains(err.Error(), `"charge"`) {
		t.Fatalf("got %v, want an error naming MIRROR_KEEP_FIELDS and the unknown type", err)
	}
}

func TestHandledTypes(t *testing.T) {
	def := HandledTypes(envMap(nil), nil)
	if !def("invoice.paid") || def("charge.refunded") {
		t.Error("default allowlist: want the mirror's types only")
	}
	custom := HandledTypes(envMap(map[string]string{"EVENT_TYPES": "charge.refunded, invoice.paid"}), nil)
	if !custom("charge.refunded") || !custom("invoice.paid") || custom("customer.created") {
		t.Error("EVENT_TYPES: want exactly the listed types")
	}
}

func TestSecretNeverInTheError(t *testing.T) {
	// A local secret that is not a usable list still never reaches an error.
	_, err := Receiver(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_WEBHOOK_SECRET": " , ",
	}), aws.Config{}, slog.Default())
	if err == nil {
		t.Fatal("got nil error for a blank secret list")
	}
	if strings.Contains(err.Error(), "whsec") {
		t.Errorf("error leaks a secret: %v", err)
	}
}

func TestReconcilerReportsEveryProblemAtOnce(t *testing.T) {
	_, err := Reconciler(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"RECONCILE_OVERLAP":    "an hour",
		"RECONCILE_MAX_PAGES":  "many",
		"RECONCILE_RATE_LIMIT": "25", // Stripe's own test-mode limit: too close
	}), aws.Config{}, slog.Default())
	if err == nil {
		t.Fatal("got nil error")
	}
	for _, want := range []string{"RECONCILE_OVERLAP", "RECONCILE_MAX_PAGES", "RECONCILE_RATE_LIMIT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	_, err = Reconciler(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_MODE": "live", "RECONCILE_RATE_LIMIT": "90",
	}), aws.Config{}, slog.Default())
	if err == nil || !strings.Contains(err.Error(), "STRIPE_API_KEY_PARAMETER") || strings.Contains(err.Error(), "RECONCILE_RATE_LIMIT") {
		t.Fatalf("live mode, 90/s, no key: got %v, want only the missing key parameter", err)
	}
}

func TestReconcilerBuildsFromALocalKey(t *testing.T) {
	r, err := Reconciler(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"STRIPE_API_KEY": "sk_test_local", "STRIPE_API_BASE": "http://127.0.0.1:1",
	}), aws.Config{Region: "us-east-1"}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	// The mirror's 24 types take two types[] filters.
	if n := len(r.Groups()); n != 2 {
		t.Errorf("groups: got %d, want 2", n)
	}
}

func TestHandledTypeListMatchesHandledTypes(t *testing.T) {
	for _, env := range []map[string]string{nil, {"EVENT_TYPES": " invoice.paid,charge.refunded,invoice.paid, "}} {
		accepts := HandledTypes(envMap(env), nil)
		list := HandledTypeList(envMap(env), nil)
		for _, ty := range list {
			if !accepts(ty) {
				t.Errorf("EVENT_TYPES=%q: %s listed but not accepted", env["EVENT_TYPES"], ty)
			}
		}
		if env == nil && len(list) != len(mirror.Types) {
			t.Errorf("default list: got %d types, want the mirror's %d", len(list), len(mirror.Types))
		}
		if env != nil && strings.Join(list, ",") != "charge.refunded,invoice.paid" {
			t.Errorf("EVENT_TYPES list: got %v", list)
		}
	}
}

func TestEffectTypesAreHandled(t *testing.T) {
	reg := &effect.Registry{}
	reg.On(effect.Func{HandlerName: "refund-notice", Fn: func(context.Context, effect.Event) ([]types.TransactWriteItem, error) { return nil, nil }}, "charge.refunded")
	if !HandledTypes(envMap(nil), reg)("charge.refunded") {
		t.Error("a type the team registered an effect for is not accepted: its events would be recorded as ignored")
	}
	if got := HandledTypeList(envMap(nil), reg); len(got) != len(mirror.Types)+1 {
		t.Errorf("list: got %d types, want the mirror's and the effect's", len(got))
	}
}

func TestEventFetcher(t *testing.T) {
	var gotAuth, gotPath string
	status, body := http.StatusOK, `{"id":"evt_1","object":"event"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	f, err := newEventFetcher("sk_test_key", srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}

	got, err := f.Fetch(context.Background(), "evt_1")
	if err != nil || string(got) != body {
		t.Fatalf("got %q, %v; want the event's JSON", got, err)
	}
	if gotAuth != "Bearer sk_test_key" || gotPath != "/v1/events/evt_1" {
		t.Errorf("request: got %q %q, want the bearer key and /v1/events/evt_1", gotAuth, gotPath)
	}
	for _, tc := range []struct {
		status    int
		permanent bool
	}{
		{http.StatusNotFound, true},
		// A bad key is fixable: retried, so the event is not stranded in
		// failed_permanent, which nothing claims again.
		{http.StatusUnauthorized, false},
		{http.StatusForbidden, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, false},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			status, body = tc.status, `{"error":{"message":"No such event: 'evt_1'"}}`
			_, err := f.Fetch(context.Background(), "evt_1")
			if err == nil {
				t.Fatal("got nil error")
			}
			if fault.IsPermanent(err) != tc.permanent {
				t.Errorf("permanent: got %v, want %v (%v)", fault.IsPermanent(err), tc.permanent, err)
			}
			if !strings.Contains(err.Error(), "No such event") || strings.Contains(err.Error(), "sk_test_key") {
				t.Errorf("error: got %v, want Stripe's message and never the key", err)
			}
		})
	}
}

func TestHTTPClientResumesTLSSessions(t *testing.T) {
	tr := HTTPClient().GetTransport()
	if tr.TLSClientConfig == nil || tr.TLSClientConfig.ClientSessionCache == nil {
		t.Fatal("no TLS session cache: a connection closed while frozen would need a full handshake")
	}
	if tr.TLSClientConfig.MinVersion < tls.VersionTLS12 {
		t.Errorf("TLS minimum version: got %x, want at least TLS 1.2", tr.TLSClientConfig.MinVersion)
	}
}

// processorEnv is a processor configuration that builds without AWS: no
// secret is read from SSM.
func processorEnv(extra map[string]string) Env {
	m := map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "MAX_RECEIVE_COUNT": "5"}
	for k, v := range extra {
		m[k] = v
	}
	return envMap(m)
}

func TestForwardTargetMustBeHTTPSOrLoopback(t *testing.T) {
	_, err := Processor(context.Background(), processorEnv(map[string]string{
		"FORWARD_URL": "http://app.example.com/hooks?token=s3cret", "FORWARD_SECRET": "fwd_local",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "FORWARD_URL") || !strings.Contains(err.Error(), "https") {
		t.Fatalf("plain http to another host: got %v, want a configuration error naming FORWARD_URL and https", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q shows the target's query", err)
	}
	for _, target := range []string{"https://app.example.com/hooks", "http://127.0.0.1:8080/hooks", "http://localhost:8080/hooks", "http://[::1]:8080/hooks"} {
		if _, err := Processor(context.Background(), processorEnv(map[string]string{"FORWARD_URL": target, "FORWARD_SECRET": "fwd_local"}), aws.Config{}, slog.Default(), nil); err != nil {
			t.Errorf("FORWARD_URL=%s: %v, want it accepted", target, err)
		}
	}
}

func TestLiveModeRefusesAnUnsignedForward(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	_, err := Processor(context.Background(), processorEnv(map[string]string{
		"STRIPE_MODE": "live", "FORWARD_URL": "https://app.example.com/hooks",
	}), aws.Config{}, logger, nil)
	if err == nil || !strings.Contains(err.Error(), "FORWARD_SECRET_PARAMETER") || !strings.Contains(err.Error(), "live") {
		t.Fatalf("live mode, no forward secret: got %v, want a cold-start error naming FORWARD_SECRET_PARAMETER", err)
	}
	if _, err := Processor(context.Background(), processorEnv(map[string]string{
		"STRIPE_MODE": "live", "FORWARD_URL": "https://app.example.com/hooks", "FORWARD_SECRET": "fwd_live",
	}), aws.Config{}, logger, nil); err != nil {
		t.Errorf("live mode with a secret: %v", err)
	}
	// Test mode keeps the warning, so a first local try needs no secret.
	logs.Reset()
	if _, err := Processor(context.Background(), processorEnv(map[string]string{
		"FORWARD_URL": "https://app.example.com/hooks",
	}), aws.Config{}, logger, nil); err != nil {
		t.Fatalf("test mode, no forward secret: %v, want a warning only", err)
	}
	if !strings.Contains(logs.String(), "without a signing secret") {
		t.Errorf("test mode, no forward secret: logs %q, want the warning", logs.String())
	}
}

func TestStripeAPIBaseMustBeHTTPSOrLoopback(t *testing.T) {
	base := map[string]string{"STRIPE_API_BASE": "http://stripe.example.com", "STRIPE_API_KEY": "sk_test_local"}
	if _, err := Processor(context.Background(), processorEnv(base), aws.Config{}, slog.Default(), nil); err == nil || !strings.Contains(err.Error(), "STRIPE_API_BASE") {
		t.Errorf("processor, plain http API base: got %v, want an error naming STRIPE_API_BASE", err)
	}
	base["EVENTS_TABLE"], base["MIRROR_TABLE"], base["QUEUE_URL"] = "e", "m", "q"
	if _, err := Reconciler(context.Background(), envMap(base), aws.Config{Region: "us-east-1"}, slog.Default()); err == nil || !strings.Contains(err.Error(), "STRIPE_API_BASE") {
		t.Errorf("reconciler, plain http API base: got %v, want an error naming STRIPE_API_BASE", err)
	}
	if _, err := newEventFetcher("sk_test_key", "http://stripe.example.com"); err == nil {
		t.Error("event fetcher, plain http API base: got nil error")
	}
	f, err := newEventFetcher("sk_test_key", "")
	if err != nil {
		t.Fatal(err)
	}
	if f.base != "https://api.stripe.com" {
		t.Errorf("event fetcher, no API base: got %q, want Stripe's", f.base)
	}
}

// builders are the three functions' cold starts, for tests that hold for
// each of them.
var builders = map[string]func(Env) error{
	"receiver": func(env Env) error {
		_, err := Receiver(context.Background(), env, aws.Config{}, slog.Default())
		return err
	},
	"processor": func(env Env) error {
		_, err := Processor(context.Background(), env, aws.Config{}, slog.Default(), nil)
		return err
	},
	"reconciler": func(env Env) error {
		_, err := Reconciler(context.Background(), env, aws.Config{}, slog.Default())
		return err
	},
}

func baseEnv(kv ...string) map[string]string {
	m := map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "MAX_RECEIVE_COUNT": "5", "STRIPE_API_BASE": "http://127.0.0.1:1"}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestLambdaRefusesSecretsInPlainVariables: inside Lambda a secret in a
// plain environment variable fails the cold start (naming the variable,
// never the value) instead of overriding the SSM parameter; outside Lambda
// the local stack's variables still work.
func TestLambdaRefusesSecretsInPlainVariables(t *testing.T) {
	for _, local := range []string{"STRIPE_WEBHOOK_SECRET", "STRIPE_API_KEY", "FORWARD_SECRET"} {
		for name, build := range builders {
			t.Run(local+"/"+name, func(t *testing.T) {
				env := baseEnv("AWS_LAMBDA_FUNCTION_NAME", "webhook-inbox-"+name, local, "s3cr3t_plain",
					"STRIPE_WEBHOOK_SECRET", "whsec_plain", "STRIPE_API_KEY", "sk_test_plain")
				env[local] = "s3cr3t_plain"
				err := build(envMap(env))
				if err == nil || !strings.Contains(err.Error(), local+" is set in the function's environment") {
					t.Fatalf("got %v, want a refusal naming %s", err, local)
				}
				if strings.Contains(err.Error(), "s3cr3t_plain") {
					t.Errorf("error leaks the secret: %v", err)
				}
			})
		}
	}
	// Outside Lambda, the same variables are the local stack's secrets.
	if err := builders["reconciler"](envMap(baseEnv("STRIPE_API_KEY", "sk_test_local"))); err != nil {
		t.Errorf("outside Lambda: %v", err)
	}
}

// TestSecretParametersBelongToTheStage: with STAGE set, as the template
// sets it, a parameter outside the stage's path fails the cold start of
// every function that has it in its environment.
func TestSecretParametersBelongToTheStage(t *testing.T) {
	for _, param := range []string{"STRIPE_WEBHOOK_SECRETS_PARAMETER", "STRIPE_API_KEY_PARAMETER", "FORWARD_SECRET_PARAMETER"} {
		for name, build := range builders {
			t.Run(param+"/"+name, func(t *testing.T) {
				for _, tc := range []struct {
					value   string
					refused bool
				}{
					{"/webhook-inbox/prod/stripe/secret", true},
					{"/webhook-inbox/staging-old/stripe/secret", true}, // a segment, not a prefix
					{"/staging", false},
					{"/webhook-inbox/staging/stripe/secret", false},
				} {
					err := build(envMap(baseEnv("STAGE", "staging", param, tc.value)))
					refused := err != nil && strings.Contains(err.Error(), param+"="+tc.value+" is not one of stage staging's parameters")
					if refused != tc.refused {
						t.Errorf("%s=%s: got %v, want refused=%v", param, tc.value, err, tc.refused)
					}
				}
			})
		}
	}
}

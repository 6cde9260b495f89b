package boot_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
)

func envMap(m map[string]string) boot.Env { return func(k string) string { return m[k] } }

// builders are the three functions' cold starts, as their main packages
// call them, for tests that hold for each of them.
var builders = map[string]func(boot.Env, aws.Config) error{
	"receiver": func(env boot.Env, cfg aws.Config) error {
		_, err := receiverboot.FromEnv(context.Background(), env, cfg, slog.Default(), hooks.Registry())
		return err
	},
	"processor": func(env boot.Env, cfg aws.Config) error {
		_, err := processorboot.FromEnv(context.Background(), env, cfg, slog.Default(), hooks.Registry())
		return err
	},
	"reconciler": func(env boot.Env, cfg aws.Config) error {
		_, err := reconcilerboot.FromEnv(context.Background(), env, cfg, slog.Default(), hooks.Registry())
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
				err := build(envMap(env), aws.Config{})
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
	if err := builders["reconciler"](envMap(baseEnv("STRIPE_API_KEY", "sk_test_local")), aws.Config{}); err != nil {
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
					err := build(envMap(baseEnv("STAGE", "staging", param, tc.value)), aws.Config{})
					refused := err != nil && strings.Contains(err.Error(), param+"="+tc.value+" is not one of stage staging's parameters")
					if refused != tc.refused {
						t.Errorf("%s=%s: got %v, want refused=%v", param, tc.value, err, tc.refused)
					}
				}
			})
		}
	}
}

// TestColdStartNetworkCalls: with every secret in Parameter Store, as in
// Lambda, no function's cold start reads one: each is read on first need.
func TestColdStartNetworkCalls(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = w.Write([]byte(`{"Parameter":{"Name":"/p","Type":"SecureString","Value":"whsec_ssm"}}`))
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "a", SecretAccessKey: "b"}, nil
		})}
	env := baseEnv("AWS_LAMBDA_FUNCTION_NAME", "f", "STAGE", "dev",
		"STRIPE_WEBHOOK_SECRETS_PARAMETER", "/webhook-inbox/dev/stripe/webhook-secrets",
		"STRIPE_API_KEY_PARAMETER", "/webhook-inbox/dev/stripe/api-key",
		"FORWARD_SECRET_PARAMETER", "/webhook-inbox/dev/forward-secret",
		"FORWARD_URL", "https://app.example.com/hooks", "STRIPE_MODE", "live", "RECONCILE_RATE_LIMIT", "50")
	for name, want := range map[string]int32{"receiver": 0, "processor": 0, "reconciler": 0} {
		requests.Store(0)
		if err := builders[name](envMap(env), cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := requests.Load(); got != want {
			t.Errorf("%s: cold start made %d requests, want %d", name, got, want)
		}
	}
}

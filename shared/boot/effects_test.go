package boot_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
)

// counted declares an effect that counts how often it is built.
func counted(built *atomic.Int32, optional bool) *effect.Registry {
	r := &effect.Registry{}
	r.Add(
		effect.Spec{Name: "notify", Types: []string{"charge.refunded"}, Settings: []string{"NOTIFY_URL"}, Secrets: []string{"notify-token"}, Optional: optional,
			New: func(c effect.Config) (effect.Handler, error) {
				built.Add(1)
				return effect.Func{HandlerName: "notify", Fn: func(context.Context, effect.Event) ([]types.TransactWriteItem, error) { return nil, nil }}, nil
			}},
	)
	return r
}

// TestEffectsAreBuiltOnlyWhereTheyRun: the receiver and the reconciler
// read a declared effect's types and build nothing (an effect's set-up
// once ran at their cold start too, where a failing one broke ingestion);
// the processor builds it, once.
func TestEffectsAreBuiltOnlyWhereTheyRun(t *testing.T) {
	var built atomic.Int32
	reg := counted(&built, false)
	env := envMap(baseEnv("STRIPE_WEBHOOK_SECRET", "whsec_local", "STRIPE_API_KEY", "sk_test_local",
		"EFFECT_SETTINGS", "NOTIFY_URL=https://notify.example.com", "EFFECT_SECRET_NOTIFY_TOKEN", "nt_local"))
	ctx := context.Background()
	if _, err := receiverboot.FromEnv(ctx, env, aws.Config{Region: "us-east-1"}, slog.Default(), reg); err != nil {
		t.Fatal(err)
	}
	rec, err := reconcilerboot.FromEnv(ctx, env, aws.Config{Region: "us-east-1"}, slog.Default(), reg)
	if err != nil {
		t.Fatal(err)
	}
	if built.Load() != 0 {
		t.Fatalf("the receiver and the reconciler built the effect %d times, want 0", built.Load())
	}
	if len(rec.Groups()) == 0 || !strings.Contains(strings.Join(rec.Groups()[0].Types, ","), "charge.refunded") {
		t.Errorf("the reconciler lists %v, want the effect's type among them", rec.Groups())
	}
	if _, err := processorboot.FromEnv(ctx, env, aws.Config{Region: "us-east-1"}, slog.Default(), reg); err != nil || built.Load() != 1 {
		t.Errorf("processor: %v, built %d times; want once", err, built.Load())
	}
}

// TestEffectConfiguration: the processor's cold start names every problem
// of the effects' configuration at once; an optional effect is off while
// none of its settings is given.
func TestEffectConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name     string
		optional bool
		env      []string
		inLambda bool
		want     []string // in the error; none: builds
		built    int32
	}{
		{name: "optional, not configured: off", optional: true, built: 0},
		{name: "required, not configured", want: []string{"effect notify needs the setting(s) NOTIFY_URL", "reads the secret notify-token"}},
		{name: "configured locally", env: []string{"EFFECT_SETTINGS", "NOTIFY_URL=https://n.example.com", "EFFECT_SECRET_NOTIFY_TOKEN", "nt"}, built: 1},
		{name: "configured as in Lambda", inLambda: true, built: 1,
			env: []string{"EFFECT_SETTINGS", "NOTIFY_URL=https://n.example.com", "EFFECT_SECRETS", "notify-token", "EFFECT_SECRETS_PATH", "/webhook-inbox/dev/effects/", "STAGE", "dev"}},
		{name: "secret not granted", inLambda: true, env: []string{"EFFECT_SETTINGS", "NOTIFY_URL=https://n.example.com", "EFFECT_SECRETS_PATH", "/webhook-inbox/dev/effects/"},
			want: []string{"name it in EFFECT_SECRETS"}},
		{name: "a secret's variable in Lambda", inLambda: true,
			env:  []string{"EFFECT_SETTINGS", "NOTIFY_URL=https://n.example.com", "EFFECT_SECRET_NOTIFY_TOKEN", "nt_plain", "EFFECT_SECRETS", "notify-token", "EFFECT_SECRETS_PATH", "/webhook-inbox/dev/effects/"},
			want: []string{"EFFECT_SECRET_NOTIFY_TOKEN is set in the function's environment"}},
		{name: "unknown setting and secret", env: []string{"EFFECT_SETTINGS", "NOTIFY_URL=https://n.example.com,NOTIFY_ULR=x", "EFFECT_SECRET_NOTIFY_TOKEN", "nt", "EFFECT_SECRETS", "notify-tokn", "EFFECT_SECRETS_PATH", "/webhook-inbox/dev/effects/"},
			want: []string{"EFFECT_SETTINGS sets NOTIFY_ULR, which no effect declares", "EFFECT_SECRETS names notify-tokn, which no effect declares"}},
		{name: "malformed settings", env: []string{"EFFECT_SETTINGS", "notify url https://x"}, want: []string{"EFFECT_SETTINGS: an entry is not NAME=value"}},
		{name: "another stage's path", env: []string{"EFFECT_SETTINGS", "NOTIFY_URL=https://n.example.com", "EFFECT_SECRETS", "notify-token", "EFFECT_SECRETS_PATH", "/webhook-inbox/prod/effects/", "STAGE", "dev"},
			want: []string{"EFFECT_SECRETS_PATH=/webhook-inbox/prod/effects/ is not under stage dev's path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var built atomic.Int32
			env := baseEnv(tc.env...)
			if tc.inLambda {
				env["AWS_LAMBDA_FUNCTION_NAME"] = "processor"
			}
			_, err := processorboot.FromEnv(context.Background(), envMap(env), aws.Config{Region: "us-east-1"}, slog.Default(), counted(&built, tc.optional))
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("got %v, want an error with %q", err, w)
				}
			}
			if len(tc.want) == 0 && (err != nil || built.Load() != tc.built) {
				t.Errorf("got %v, built %d times; want no error, built %d", err, built.Load(), tc.built)
			}
			if err != nil && (strings.Contains(err.Error(), "nt_plain") || strings.Contains(err.Error(), "https://x")) {
				t.Errorf("the error shows a value: %v", err)
			}
		})
	}
}

// TestTheExampleEffectIsOffUntilConfigured: the repository's own
// declaration (shared/pipeline/hooks, the billing example) costs a deployment that
// does not configure it nothing, and builds when configured as the docs
// say.
func TestTheExampleEffectIsOffUntilConfigured(t *testing.T) {
	if _, err := processorboot.FromEnv(context.Background(), envMap(baseEnv()), aws.Config{Region: "us-east-1"}, slog.Default(), hooks.Registry()); err != nil {
		t.Errorf("not configured: %v", err)
	}
	env := baseEnv("AWS_LAMBDA_FUNCTION_NAME", "processor", "STAGE", "dev",
		"EFFECT_SETTINGS", "BILLING_API_URL=https://billing.example.com/v1/paid",
		"EFFECT_SECRETS", "billing-api-token", "EFFECT_SECRETS_PATH", "/webhook-inbox/dev/effects/")
	if _, err := processorboot.FromEnv(context.Background(), envMap(env), aws.Config{Region: "us-east-1"}, slog.Default(), hooks.Registry()); err != nil {
		t.Errorf("configured: %v", err)
	}
	delete(env, "EFFECT_SECRETS")
	if _, err := processorboot.FromEnv(context.Background(), envMap(env), aws.Config{Region: "us-east-1"}, slog.Default(), hooks.Registry()); err == nil ||
		!strings.Contains(err.Error(), "billing-api-token") {
		t.Errorf("configured without its secret: got %v, want an error naming billing-api-token", err)
	}
	if got := boot.EffectSecretVariable("billing-api-token"); got != "EFFECT_SECRET_BILLING_API_TOKEN" {
		t.Errorf("local variable: got %s", got)
	}
}

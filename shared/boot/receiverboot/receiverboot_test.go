package receiverboot

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEveryConfigurationProblemIsReportedAtOnce(t *testing.T) {
	_, err := New(context.Background(), envMap(map[string]string{
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
	_, err := New(context.Background(), envMap(map[string]string{
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
	h, err := New(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_WEBHOOK_SECRET": "whsec_a,whsec_b",
	}), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
	if err != nil || h == nil {
		t.Fatalf("got %v, %v", h, err)
	}
}

package boot

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
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

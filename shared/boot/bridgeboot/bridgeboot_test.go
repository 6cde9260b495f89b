package bridgeboot

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEveryConfigurationProblemIsReportedAtOnce(t *testing.T) {
	_, err := FromEnv(
		context.Background(),
		envMap(map[string]string{"STRIPE_MODE": "production", "EVENTBRIDGE_SOURCE": "my.app/events"}),
		aws.Config{},
		slog.Default(),
		nil,
	)
	if err == nil {
		t.Fatal("got nil error for an empty configuration")
	}
	for _, want := range []string{"EVENTS_TABLE", "MIRROR_TABLE", "QUEUE_URL", "STRIPE_MODE", "EVENTBRIDGE_SOURCE", "not a Stripe partner event source", "EVENTBRIDGE_ACCOUNT", "INGRESS_DLQ_URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
}

func TestBuilds(t *testing.T) {
	h, err := FromEnv(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"EVENTBRIDGE_SOURCE": "aws.partner/stripe.com/ed_test_61RM", "EVENTBRIDGE_ACCOUNT": "123456789012", "INGRESS_DLQ_URL": "https://sqs.example/dlq",
	}), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
	if err != nil || h == nil {
		t.Fatalf("got %v, %v", h, err)
	}
}

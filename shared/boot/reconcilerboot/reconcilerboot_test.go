package reconcilerboot

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestReportsEveryProblemAtOnce(t *testing.T) {
	_, err := New(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"RECONCILE_OVERLAP":    "an hour",
		"RECONCILE_MAX_PAGES":  "many",
		"RECONCILE_RATE_LIMIT": "25", // Stripe's own test-mode limit: too close
		"STRIPE_API_BASE":      "http://stripe.example.com",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil {
		t.Fatal("got nil error")
	}
	for _, want := range []string{"RECONCILE_OVERLAP", "RECONCILE_MAX_PAGES", "RECONCILE_RATE_LIMIT", "STRIPE_API_BASE", "STRIPE_API_KEY_PARAMETER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	_, err = New(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_MODE": "live", "RECONCILE_RATE_LIMIT": "90",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "STRIPE_API_KEY_PARAMETER") || strings.Contains(err.Error(), "RECONCILE_RATE_LIMIT") {
		t.Fatalf("live mode, 90/s, no key: got %v, want only the missing key parameter", err)
	}
}

func TestBuildsFromALocalKey(t *testing.T) {
	r, err := New(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"STRIPE_API_KEY": "sk_test_local", "STRIPE_API_BASE": "http://127.0.0.1:1",
	}), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The mirror's 24 types take two types[] filters.
	if n := len(r.Groups()); n != 2 {
		t.Errorf("groups: got %d, want 2", n)
	}
}

package stripesign_test

import (
	"testing"
	"time"

	"github.com/stripe/stripe-go/v81/webhook"

	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripesign"
)

// The header is exactly stripe-go's, and stripe-go's verification accepts it.
func TestHeaderIsStripeGosSignature(t *testing.T) {
	payload := []byte(`{"id":"evt_1","object":"event"}`)
	now := time.Unix(1700000000, 0)
	got := stripesign.Header(payload, "whsec_test", now)
	want := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_test", Timestamp: now}).Header
	if got != want {
		t.Fatalf("header: got %q, want stripe-go's %q", got, want)
	}
	if err := webhook.ValidatePayloadWithTolerance(payload, got, "whsec_test", 1<<30*time.Second); err != nil {
		t.Fatalf("stripe-go refuses the header: %v", err)
	}
}

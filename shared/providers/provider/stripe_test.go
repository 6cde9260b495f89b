package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v81/webhook"
)

func TestVerify(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	payload := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	v, err := New(Stripe, []string{"whsec_current", " whsec_previous "}, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		payload []byte
		header  string
		want    error
	}{
		{"current secret", payload, SignStripe(payload, "whsec_current", now), nil},
		{"previous secret during rotation", payload, SignStripe(payload, "whsec_previous", now), nil},
		{
			"two signatures, second matches",
			payload,
			SignStripe(payload, "whsec_other", now) + ",v1=" + strings.Split(SignStripe(payload, "whsec_current", now), "v1=")[1],
			nil,
		},
		{"at the edge of the tolerance", payload, SignStripe(payload, "whsec_current", now.Add(-300*time.Second)), nil},
		{"missing header", payload, "", ErrMissingSignature},
		{"no timestamp", payload, "v1=abcd", ErrMalformedSignature},
		{"garbage header", payload, "garbage", ErrMalformedSignature},
		{"non-numeric timestamp", payload, "t=abc,v1=00", ErrMalformedSignature},
		{"no v1 signature", payload, "t=1700000000,v0=abcd", ErrNoMatch},
		{"unknown secret", payload, SignStripe(payload, "whsec_attacker", now), ErrNoMatch},
		{"body altered", append([]byte(" "), payload...), SignStripe(payload, "whsec_current", now), ErrNoMatch},
		{"stale timestamp", payload, SignStripe(payload, "whsec_current", now.Add(-301*time.Second)), ErrTooOld},
		{"future timestamp", payload, SignStripe(payload, "whsec_current", now.Add(61*time.Second)), ErrTooNew},
		{"slightly ahead is fine", payload, SignStripe(payload, "whsec_current", now.Add(30*time.Second)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := stripeVerify(v, tc.payload, tc.header)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// stripeVerify verifies a Stripe delivery of payload with its
// Stripe-Signature header.
func stripeVerify(v Verifier, payload []byte, header string) error {
	_, err := v.Verify(context.Background(), Request{Body: payload, Headers: map[string]string{"stripe-signature": header}})
	return err
}

func TestNewNeedsASecret(t *testing.T) {
	if _, err := New(Stripe, []string{"", "  "}, Options{}); err == nil {
		t.Fatal("got nil error for no secrets, want an error")
	}
}

func TestTolerancesAreConfigurable(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	payload := []byte(`{}`)
	v, err := New(Stripe, []string{"s"}, Options{Tolerance: 10 * time.Second, FutureSkew: time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := stripeVerify(v, payload, SignStripe(payload, "s", now.Add(-11*time.Second))); !errors.Is(err, ErrTooOld) {
		t.Errorf("11s old with 10s tolerance: got %v, want ErrTooOld", err)
	}
	if err := stripeVerify(v, payload, SignStripe(payload, "s", now.Add(2*time.Second))); !errors.Is(err, ErrTooNew) {
		t.Errorf("2s ahead with 1s skew: got %v, want ErrTooNew", err)
	}
}

// BenchmarkStripeSignature measures what the strict parser costs: Stripe's
// signature check (ParseStripeHeader, then stripe-go's check on the same
// header, then the window) beside stripe-go's check alone, on an
// event-sized body.
func BenchmarkStripeSignature(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1","description":"` + strings.Repeat("x", 2500) + `"}}}`)
	header := SignStripe(body, "whsec_current", now)
	v, err := New(Stripe, []string{"whsec_current"}, Options{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Verify", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := v.(*stripe).signature(body, header); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stripe-go", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := webhook.ValidatePayloadIgnoringTolerance(body, header, "whsec_current"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParseStripeHeader", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseStripeHeader(header); err != nil {
				b.Fatal(err)
			}
		}
	})
}

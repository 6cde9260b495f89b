package signature

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v81/webhook"
)

func TestVerify(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	payload := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	v, err := New([]string{"whsec_current", " whsec_previous "}, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		payload []byte
		header  string
		want    error
	}{
		{"current secret", payload, Sign(payload, "whsec_current", now), nil},
		{"previous secret during rotation", payload, Sign(payload, "whsec_previous", now), nil},
		{"two signatures, second matches", payload, Sign(payload, "whsec_other", now) + ",v1=" + strings.Split(Sign(payload, "whsec_current", now), "v1=")[1], nil},
		{"at the edge of the tolerance", payload, Sign(payload, "whsec_current", now.Add(-300*time.Second)), nil},
		{"missing header", payload, "", ErrMissingHeader},
		{"no timestamp", payload, "v1=abcd", ErrMalformedHeader},
		{"garbage header", payload, "garbage", ErrMalformedHeader},
		{"non-numeric timestamp", payload, "t=abc,v1=00", ErrMalformedHeader},
		{"no v1 signature", payload, "t=1700000000,v0=abcd", ErrNoMatch},
		{"unknown secret", payload, Sign(payload, "whsec_attacker", now), ErrNoMatch},
		{"body altered", append([]byte(" "), payload...), Sign(payload, "whsec_current", now), ErrNoMatch},
		{"stale timestamp", payload, Sign(payload, "whsec_current", now.Add(-301*time.Second)), ErrTooOld},
		{"future timestamp", payload, Sign(payload, "whsec_current", now.Add(61*time.Second)), ErrTooNew},
		{"slightly ahead is fine", payload, Sign(payload, "whsec_current", now.Add(30*time.Second)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Verify(tc.payload, tc.header)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNewNeedsASecret(t *testing.T) {
	if _, err := New([]string{"", "  "}, Options{}); err == nil {
		t.Fatal("got nil error for no secrets, want an error")
	}
}

func TestTolerancesAreConfigurable(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	payload := []byte(`{}`)
	v, err := New([]string{"s"}, Options{Tolerance: 10 * time.Second, FutureSkew: time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(payload, Sign(payload, "s", now.Add(-11*time.Second))); !errors.Is(err, ErrTooOld) {
		t.Errorf("11s old with 10s tolerance: got %v, want ErrTooOld", err)
	}
	if err := v.Verify(payload, Sign(payload, "s", now.Add(2*time.Second))); !errors.Is(err, ErrTooNew) {
		t.Errorf("2s ahead with 1s skew: got %v, want ErrTooNew", err)
	}
}

// BenchmarkVerify measures what the shared parser costs: Verify (ParseHeader,
// then stripe-go's check on the same header, then the window) beside
// stripe-go's check alone, on an event-sized body.
func BenchmarkVerify(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1","description":"` + strings.Repeat("x", 2500) + `"}}}`)
	header := Sign(body, "whsec_current", now)
	v, err := New([]string{"whsec_current"}, Options{Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Verify", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := v.Verify(body, header); err != nil {
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
	b.Run("ParseHeader", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseHeader(header); err != nil {
				b.Fatal(err)
			}
		}
	})
}

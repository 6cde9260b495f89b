package provider

import (
	"errors"
	"math"
	"testing"
	"time"
)

// FuzzVerify keeps a valid signature and fuzzes the text around it (more
// pairs, a second t=, a second header joined with a comma, whitespace) and
// when it was signed, from long ago to far in the future. Whatever the text:
//   - a delivery Verify accepts was signed inside the window, and its one
//     timestamp is the signed one;
//   - Diagnose (inboxctl verify) reaches the same verdict and reason class.
func FuzzVerify(f *testing.F) {
	f.Add("", "", int64(0))
	f.Add("", "", int64(-301))
	f.Add("", ",v0=abcd", int64(-12))
	f.Add("t=1700000000,", "", int64(-3600))
	f.Add("", ",t=1700000000", int64(-3600))
	f.Add("t=1700000000,v1=0000000000000000000000000000000000000000000000000000000000000000,", "", int64(-120*24*3600))
	f.Add(" ", " ", int64(0))
	f.Add("", ", v1=00", int64(0))
	f.Add("", "", int64(1)<<40)
	f.Add("", "", int64(math.MaxInt64-1_700_000_000))
	f.Add("", "", int64(-1_700_000_001))

	now := time.Unix(1_700_000_000, 0)
	payload := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid"}`)
	secrets := []string{"whsec_current", "whsec_previous"}
	opts := Options{Now: func() time.Time { return now }}
	v, err := New(Stripe, secrets, opts)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, before, after string, offset int64) {
		if offset > math.MaxInt64-now.Unix() {
			return // not a time a header can carry
		}
		signedAt := now.Unix() + offset
		header := before + SignStripe(payload, "whsec_current", time.Unix(signedAt, 0)) + after
		err := stripeVerify(v, payload, header)
		if err == nil {
			if offset < -int64(DefaultTolerance/time.Second) || offset > int64(DefaultFutureSkew/time.Second) {
				t.Fatalf("accepted a delivery signed %ds from now: %q", offset, header)
			}
			h, perr := ParseStripeHeader(header)
			if perr != nil || h.Timestamp != signedAt {
				t.Fatalf("accepted %q, but it parses as t=%d (%v), signed at %d", header, h.Timestamp, perr, signedAt)
			}
		}
		d := DiagnoseStripe(payload, header, secrets, opts)
		if want := d.Problem.Err(); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("%q: Diagnose says %s, Verify says %v", header, d.Problem, err)
		}
	})
}

package provider

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestReplayWithASecondTimestamp: a delivery signed long ago stays stale
// whatever timestamps are put around its header. Before the shared parser,
// the age came from the first t= and the HMAC from the last, so a fresh t=
// in front of a captured header made it valid again.
func TestReplayWithASecondTimestamp(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	payload := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	opts := Options{Now: func() time.Time { return now }}
	v, err := New(Stripe, []string{"whsec_current"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	old := SignStripe(payload, "whsec_current", now.Add(-120*24*time.Hour))
	fresh := fmt.Sprintf("t=%d", now.Unix())
	// What an attacker sends as a second Stripe-Signature header: a fresh
	// timestamp and a signature they cannot compute.
	second := fresh + ",v1=" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, header string
	}{
		{"fresh t= in front", fresh + "," + old},
		{"fresh t= behind", old + "," + fresh},
		{"two headers joined with a comma (API Gateway)", second + "," + old},
		{"two headers joined, the captured one first", old + "," + second},
		{"the captured header twice", old + "," + old},
		{"a fresh valid header and a second t=", SignStripe(payload, "whsec_current", now) + ",t=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := stripeVerify(v, payload, tc.header); !errors.Is(err, ErrMalformedSignature) {
				t.Errorf("Verify: got %v, want ErrMalformedSignature", err)
			}
			if d := DiagnoseStripe(payload, tc.header, []string{"whsec_current"}, opts); d.Valid || d.Problem != ProblemMalformedHeader {
				t.Errorf("Diagnose: got %s (valid=%v), want %s: %s", d.Problem, d.Valid, ProblemMalformedHeader, d.Message)
			}
		})
	}
}

// TestTimestampsFarFromNow: the age checks compare Unix seconds, so no
// timestamp is too far away to be stale or too new. A time.Duration
// saturates about 292 years out, and a signed t = now + 2^40 s once passed
// the future check.
func TestTimestampsFarFromNow(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	payload := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	opts := Options{Now: func() time.Time { return now }}
	v, err := New(Stripe, []string{"whsec_current"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	signedAt := func(sec int64) string { return SignStripe(payload, "whsec_current", time.Unix(sec, 0)) }
	for _, tc := range []struct {
		name    string
		header  string
		want    error
		problem Problem
	}{
		{"2^40 s ahead", signedAt(now.Unix() + 1<<40), ErrTooNew, ProblemFutureTimestamp},
		{"2^62 s ahead", signedAt(now.Unix() + 1<<62), ErrTooNew, ProblemFutureTimestamp},
		{"the largest int64", signedAt(math.MaxInt64), ErrTooNew, ProblemFutureTimestamp},
		{"61 s ahead", signedAt(now.Unix() + 61), ErrTooNew, ProblemFutureTimestamp},
		{"60 s ahead", signedAt(now.Unix() + 60), nil, ProblemNone},
		{"the epoch", signedAt(0), ErrTooOld, ProblemStaleTimestamp},
		{"negative", signedAt(-1), ErrMalformedSignature, ProblemMalformedHeader},
		{"the smallest int64", signedAt(math.MinInt64), ErrMalformedSignature, ProblemMalformedHeader},
		{"beyond int64", "t=9223372036854775808,v1=" + strings.Repeat("ab", 32), ErrMalformedSignature, ProblemMalformedHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := stripeVerify(v, payload, tc.header)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Verify: got %v, want %v", err, tc.want)
			}
			if d := DiagnoseStripe(payload, tc.header, []string{"whsec_current"}, opts); d.Problem != tc.problem {
				t.Errorf("Diagnose: got %s, want %s: %s", d.Problem, tc.problem, d.Message)
			}
		})
	}
}

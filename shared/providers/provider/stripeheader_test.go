package provider

import (
	"errors"
	"strings"
	"testing"
)

func TestParseHeader(t *testing.T) {
	sig := strings.Repeat("ab", 32)
	tests := []struct {
		name   string
		header string
		ts     int64
		v1     int
		err    error
		reason string // substring of the StripeHeaderError's Reason
	}{
		{name: "as Stripe sends it", header: "t=1700000000,v1=" + sig, ts: 1700000000, v1: 1},
		{name: "two v1 and a v0, in any order", header: "v0=" + sig + ",v1=" + sig + ",t=5,v1=" + strings.ToUpper(sig), ts: 5, v1: 2},
		{name: "unknown schemes are ignored", header: "t=5,v9=anything,V1=x", ts: 5},
		{name: "whitespace around the value is not part of it", header: " \tt=5,v1=" + sig + " ", ts: 5, v1: 1},
		{name: "zero", header: "t=0", ts: 0},
		{name: "the largest int64", header: "t=9223372036854775807", ts: 1<<63 - 1},
		{name: "empty", header: "", err: ErrMissingSignature},
		{name: "only whitespace", header: " \t", err: ErrMissingSignature},
		{name: "no timestamp", header: "v1=" + sig, err: ErrMalformedSignature, reason: "no t="},
		{name: "two timestamps", header: "t=5,v1=" + sig + ",t=6", err: ErrMalformedSignature, reason: "more than one t= timestamp (pairs 1 and 3)"},
		{name: "the same timestamp twice", header: "t=5,t=5,v1=" + sig, err: ErrMalformedSignature, reason: "more than one t="},
		{name: "a space after a comma", header: "t=5, v1=" + sig, err: ErrMalformedSignature, reason: "pair 2 contains whitespace"},
		{name: "a space before a comma", header: "t=5 ,v1=" + sig, err: ErrMalformedSignature, reason: "pair 1 contains whitespace"},
		{name: "a space around =", header: "t =5", err: ErrMalformedSignature, reason: "whitespace"},
		{name: "a tab inside", header: "t=5,\tv1=" + sig, err: ErrMalformedSignature, reason: "whitespace"},
		{name: "non-ASCII", header: "t=5,v0=é", err: ErrMalformedSignature, reason: "visible ASCII"},
		{name: "trailing comma", header: "t=5,", err: ErrMalformedSignature, reason: "pair 2 is empty"},
		{name: "leading comma", header: ",t=5", err: ErrMalformedSignature, reason: "pair 1 is empty"},
		{name: "two commas", header: "t=5,,v1=" + sig, err: ErrMalformedSignature, reason: "pair 2 is empty"},
		{name: "not a pair", header: "garbage", err: ErrMalformedSignature, reason: "not one key=value"},
		{name: "two =", header: "t=5,v0=a=b", err: ErrMalformedSignature, reason: "not one key=value"},
		{name: "empty key", header: "t=5,=x", err: ErrMalformedSignature, reason: "empty key"},
		{name: "empty value", header: "t=5,v0=", err: ErrMalformedSignature, reason: "empty key or value"},
		{name: "empty timestamp", header: "t=,v1=" + sig, err: ErrMalformedSignature, reason: "empty key or value"},
		{name: "key with punctuation", header: "t=5,v-1=x", err: ErrMalformedSignature, reason: "letters and digits"},
		{name: "timestamp not a number", header: "t=abc", err: ErrMalformedSignature, reason: "not a Unix time"},
		{name: "negative timestamp", header: "t=-5", err: ErrMalformedSignature, reason: "not a Unix time"},
		{name: "timestamp with a plus sign", header: "t=+5", err: ErrMalformedSignature, reason: "not a Unix time"},
		{name: "timestamp with a leading zero", header: "t=05", err: ErrMalformedSignature, reason: "not a Unix time"},
		{name: "timestamp in milliseconds beyond int64", header: "t=9223372036854775808", err: ErrMalformedSignature, reason: "not a Unix time"},
		{name: "timestamp with a fraction", header: "t=5.5", err: ErrMalformedSignature, reason: "not a Unix time"},
		{name: "v1 not hex", header: "t=5,v1=" + strings.Repeat("zz", 32), err: ErrMalformedSignature, reason: "v1= in pair 2"},
		{name: "v1 too short", header: "t=5,v1=" + sig[2:], err: ErrMalformedSignature, reason: "64 hex digits"},
		{name: "v1 too long", header: "t=5,v1=" + sig + "ab", err: ErrMalformedSignature, reason: "64 hex digits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseStripeHeader(tc.header)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("got %+v, %v; want %v", h, err, tc.err)
			}
			if err != nil {
				var bad *StripeHeaderError
				if tc.reason != "" && (!errors.As(err, &bad) || !strings.Contains(bad.Reason, tc.reason)) {
					t.Errorf("reason: got %v, want one containing %q", err, tc.reason)
				}
				if len(tc.header) > 8 && strings.Contains(err.Error(), tc.header) {
					t.Errorf("the error quotes the header: %v", err)
				}
				return
			}
			if h.Timestamp != tc.ts || h.Signatures != tc.v1 {
				t.Errorf("got t=%d and %d v1; want t=%d and %d", h.Timestamp, h.Signatures, tc.ts, tc.v1)
			}
		})
	}
}

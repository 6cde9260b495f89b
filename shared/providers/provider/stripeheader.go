package provider

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// StripeHeader is a Stripe-Signature header that ParseStripeHeader
// accepted.
//
// Stripe sends "t=<unix>,v1=<hex>[,v1=<hex>...]". ParseStripeHeader is the
// only reading of it: Stripe's Verify (the receiver) and DiagnoseStripe
// (inboxctl verify) both start with it, and the timestamp it returns is the
// one the age checks use. Its grammar is strict, a subset of what Stripe
// sends and of what stripe-go parses:
//
//	header = pair *( "," pair )
//	pair   = key "=" value
//	key    = 1*( ALPHA / DIGIT )
//	value  = 1*( any visible ASCII character except "," and "=" )
//
// with exactly one t, whose value is a Unix time in decimal digits (no sign,
// no leading zero, at most an int64); every v1 value exactly 64 hex digits;
// and other keys (v0, a scheme added later) ignored, as Stripe's libraries
// ignore them. Whitespace around the whole value is not part of it (RFC 9110
// field values); whitespace anywhere else, an empty pair, a second t and a
// v1 that is not an HMAC-SHA256 are malformed.
//
// Exactly one t matters: stripe-go takes the last t= for the HMAC, and a
// header carrying a second t= (put in front of a captured delivery's header,
// or a second Stripe-Signature header, which API Gateway joins to the first
// with a comma) could otherwise be checked for its age against one
// timestamp and for its signature against another, so a captured delivery
// could be replayed at will. Stripe never sends two, so a second t= is a
// replay attempt (ErrReplay as well as ErrMalformedSignature). Once
// ParseStripeHeader has accepted a header, stripe-go reads exactly the same
// t and v1 values from it, so the signature check is still stripe-go's own
// (webhook.ValidatePayloadIgnoringTolerance) on the header as parsed, and
// nothing here computes or compares an HMAC.
type StripeHeader struct {
	// Timestamp is the t= value, in Unix seconds: the one the signatures
	// cover, and the one the age checks use. Never negative.
	Timestamp int64
	// Signatures counts the v1 signatures.
	Signatures int
	// value is the header as parsed (without surrounding whitespace),
	// for stripe-go.
	value string
}

// StripeHeaderError says why ParseStripeHeader rejected a header. It
// matches ErrMalformedSignature with errors.Is, and ErrReplay too when the
// header has a second timestamp. Its text never quotes the header: a
// receiver logs it, and the header carries signatures.
type StripeHeaderError struct {
	// Reason is a short explanation, as "more than one t= timestamp
	// (pairs 1 and 3)".
	Reason string
	// Pair is the 1-based position of the pair at fault among the
	// header's comma-separated pairs, or 0.
	Pair int
	// Replay is set for a second t= timestamp.
	Replay bool
}

func (e *StripeHeaderError) Error() string {
	return "provider: malformed Stripe-Signature header: " + e.Reason
}

// Is makes errors.Is(err, ErrMalformedSignature) true, and
// errors.Is(err, ErrReplay) for a second timestamp.
func (e *StripeHeaderError) Is(target error) bool {
	return target == ErrMalformedSignature || (e.Replay && target == ErrReplay)
}

func malformed(pair int, format string, args ...any) error {
	return &StripeHeaderError{Reason: fmt.Sprintf(format, args...), Pair: pair}
}

// sha256Hex is the length of a v1 signature: an HMAC-SHA256 in hex.
const sha256Hex = 64

// ParseStripeHeader parses a Stripe-Signature header's value with the
// strict grammar above. It fails with ErrMissingSignature when value is
// empty or only whitespace, and with a *StripeHeaderError
// (ErrMalformedSignature) when it breaks the grammar.
func ParseStripeHeader(value string) (StripeHeader, error) {
	value = strings.Trim(value, " \t")
	if value == "" {
		return StripeHeader{}, ErrMissingSignature
	}
	h := StripeHeader{value: value}
	tPair := 0
	n := 0
	for pair := range strings.SplitSeq(value, ",") {
		n++
		if pair == "" {
			return StripeHeader{}, malformed(n, "pair %d is empty (a comma too many)", n)
		}
		for i := 0; i < len(pair); i++ {
			if c := pair[i]; c <= ' ' || c >= 0x7f {
				return StripeHeader{}, malformed(n, "pair %d contains whitespace or a byte that is not visible ASCII", n)
			}
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(v, "=") {
			return StripeHeader{}, malformed(n, "pair %d is not one key=value", n)
		}
		if k == "" || v == "" || strings.IndexFunc(k, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}) >= 0 {
			return StripeHeader{}, malformed(n, "pair %d has an empty key or value, or a key that is not letters and digits", n)
		}
		switch k {
		case "t":
			if tPair != 0 {
				return StripeHeader{}, &StripeHeaderError{
					Reason: fmt.Sprintf("more than one t= timestamp (pairs %d and %d)", tPair, n), Pair: n, Replay: true,
				}
			}
			tPair = n
			ts, err := strconv.ParseInt(v, 10, 64)
			// The canonical form only: the HMAC covers the decimal
			// number, so "+5" or "05" would be signed as "5".
			if err != nil || ts < 0 || strconv.FormatInt(ts, 10) != v {
				return StripeHeader{}, malformed(
					n,
					"t= in pair %d is not a Unix time in seconds (decimal digits, no sign or leading zero, at most 19 digits)",
					n,
				)
			}
			h.Timestamp = ts
		case "v1":
			if _, err := hex.DecodeString(v); err != nil || len(v) != sha256Hex {
				return StripeHeader{}, malformed(n, "v1= in pair %d is not an HMAC-SHA256 (64 hex digits)", n)
			}
			h.Signatures++
		}
	}
	if tPair == 0 {
		return StripeHeader{}, malformed(0, "no t= timestamp")
	}
	return h, nil
}

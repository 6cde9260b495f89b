package signature

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Header is a Stripe-Signature header that ParseHeader accepted.
type Header struct {
	// Timestamp is the t= value, in Unix seconds: the one the signatures
	// cover, and the one the age checks use. Never negative.
	Timestamp int64
	// Signatures counts the v1 signatures.
	Signatures int
	// value is the header as parsed (without surrounding whitespace),
	// for stripe-go.
	value string
}

// MalformedError says why ParseHeader rejected a header. It matches
// ErrMalformedHeader with errors.Is. Its text never quotes the header: a
// receiver logs it, and the header carries signatures.
type MalformedError struct {
	// Reason is a short explanation, as "more than one t= timestamp
	// (pairs 1 and 3)".
	Reason string
	// Pair is the 1-based position of the pair at fault among the
	// header's comma-separated pairs, or 0.
	Pair int
}

func (e *MalformedError) Error() string { return ErrMalformedHeader.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrMalformedHeader) true.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformedHeader }

func malformed(pair int, format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...), Pair: pair}
}

// reasonTwoTimestamps starts the Reason of a header with a second t=;
// Diagnose explains what that usually is.
const reasonTwoTimestamps = "more than one t= timestamp"

// sha256Hex is the length of a v1 signature: an HMAC-SHA256 in hex.
const sha256Hex = 64

// ParseHeader parses a Stripe-Signature header's value with the package's
// strict grammar (see the package documentation). It fails with
// ErrMissingHeader when value is empty or only whitespace, and with a
// *MalformedError (ErrMalformedHeader) when it breaks the grammar.
func ParseHeader(value string) (Header, error) {
	value = strings.Trim(value, " \t")
	if value == "" {
		return Header{}, ErrMissingHeader
	}
	h := Header{value: value}
	tPair := 0
	n := 0
	for pair := range strings.SplitSeq(value, ",") {
		n++
		if pair == "" {
			return Header{}, malformed(n, "pair %d is empty (a comma too many)", n)
		}
		for i := 0; i < len(pair); i++ {
			if c := pair[i]; c <= ' ' || c >= 0x7f {
				return Header{}, malformed(n, "pair %d contains whitespace or a byte that is not visible ASCII", n)
			}
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.Contains(v, "=") {
			return Header{}, malformed(n, "pair %d is not one key=value", n)
		}
		if k == "" || v == "" || strings.IndexFunc(k, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}) >= 0 {
			return Header{}, malformed(n, "pair %d has an empty key or value, or a key that is not letters and digits", n)
		}
		switch k {
		case "t":
			if tPair != 0 {
				return Header{}, malformed(n, reasonTwoTimestamps+" (pairs %d and %d)", tPair, n)
			}
			tPair = n
			ts, err := strconv.ParseInt(v, 10, 64)
			// The canonical form only: the HMAC covers the decimal
			// number, so "+5" or "05" would be signed as "5".
			if err != nil || ts < 0 || strconv.FormatInt(ts, 10) != v {
				return Header{}, malformed(n, "t= in pair %d is not a Unix time in seconds (decimal digits, no sign or leading zero, at most 19 digits)", n)
			}
			h.Timestamp = ts
		case "v1":
			if _, err := hex.DecodeString(v); err != nil || len(v) != sha256Hex {
				return Header{}, malformed(n, "v1= in pair %d is not an HMAC-SHA256 (64 hex digits)", n)
			}
			h.Signatures++
		}
	}
	if tPair == 0 {
		return Header{}, malformed(0, "no t= timestamp")
	}
	return h, nil
}

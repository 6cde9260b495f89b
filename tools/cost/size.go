package cost

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is a DynamoDB item, or an index entry.
type Item = map[string]types.AttributeValue

// ItemSize is an item's size as DynamoDB bills it ("DynamoDB item sizes and
// formats"): the sum of its attribute names and values. Nil (no item) is 0.
func ItemSize(it Item) int {
	n := 0
	for name, v := range it {
		n += len(name) + ValueSize(v)
	}
	return n
}

// ValueSize is the size of one attribute value, without its name:
//   - a string: its UTF-8 bytes (Go strings are UTF-8 already);
//   - a number: 1 byte per two significant digits (leading and trailing
//     zeroes trimmed), plus 1 byte: the documentation says "approximately";
//   - binary: its raw bytes (not their base64 form on the wire);
//   - null and Boolean: 1 byte;
//   - a list or map: 3 bytes, plus each element's size and 1 byte per
//     element (a map element's size includes its name);
//   - a set: the sum of its elements (the page gives no overhead for sets).
func ValueSize(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return numberSize(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range x.Value {
			n += len(name) + ValueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range x.Value {
			n += ValueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range x.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range x.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range x.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

// numberSize applies the number rule to a number as DynamoDB's API writes
// it ("-12.50", "1E+3").
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i] // the exponent moves the point; it adds no digits
	}
	digits := strings.Replace(s, ".", "", 1)
	digits = strings.TrimRight(strings.TrimLeft(digits, "0"), "0")
	return (len(digits)+1)/2 + 1
}

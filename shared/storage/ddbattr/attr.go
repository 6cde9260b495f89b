package ddbattr

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Item is a DynamoDB item, as the SDK holds it.
type Item = map[string]types.AttributeValue

// S is a string value.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// N is a number value.
func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// Bool is a boolean value.
func Bool(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

// B is a binary value.
func B(v []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }

// Millis is t as a number of Unix milliseconds.
func Millis(t time.Time) types.AttributeValue { return N(t.UnixMilli()) }

// GetS reads string attribute name of item; "" when absent.
func GetS(item Item, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// GetN reads number attribute name of item as an integer; 0 when absent
// or not an integer.
func GetN(item Item, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	return 0
}

// GetBool reads boolean attribute name of item; false when absent.
func GetBool(item Item, name string) bool {
	if v, ok := item[name].(*types.AttributeValueMemberBOOL); ok {
		return v.Value
	}
	return false
}

// GetB reads binary attribute name of item, and whether it is there.
func GetB(item Item, name string) ([]byte, bool) {
	if v, ok := item[name].(*types.AttributeValueMemberB); ok {
		return v.Value, true
	}
	return nil, false
}

// GetMillis reads a time stored by Millis; the zero time when absent or 0.
func GetMillis(item Item, name string) time.Time {
	v := GetN(item, name)
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// Strings is a list of string values (an L of S, not a string set: order
// and duplicates kept, and an empty list allowed).
func Strings(vs []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(vs))
	for i, v := range vs {
		l[i] = S(v)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// GetStrings reads a list stored by Strings; nil when absent. Elements that
// are not strings read as "".
func GetStrings(item Item, name string) []string {
	l, ok := item[name].(*types.AttributeValueMemberL)
	if !ok {
		return nil
	}
	out := make([]string, len(l.Value))
	for i, v := range l.Value {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			out[i] = s.Value
		}
	}
	return out
}

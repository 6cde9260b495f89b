package ddbattr_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

func TestValuesReadBack(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_123)
	item := ddbattr.Item{
		"s": ddbattr.S("x"), "n": ddbattr.N(-42), "t": ddbattr.Bool(true),
		"b": ddbattr.B([]byte{1, 2}), "at": ddbattr.Millis(at), "l": ddbattr.Strings([]string{"x", "y", "x"}),
	}
	if got := ddbattr.GetS(item, "s"); got != "x" {
		t.Errorf("GetS: got %q, want x", got)
	}
	if got := ddbattr.GetN(item, "n"); got != -42 {
		t.Errorf("GetN: got %d, want -42", got)
	}
	if !ddbattr.GetBool(item, "t") {
		t.Error("GetBool: got false, want true")
	}
	if got, ok := ddbattr.GetB(item, "b"); !ok || len(got) != 2 {
		t.Errorf("GetB: got %v %v, want 2 bytes", got, ok)
	}
	if got := ddbattr.GetMillis(item, "at"); !got.Equal(at) {
		t.Errorf("GetMillis: got %v, want %v", got, at)
	}
	if v, ok := item["at"].(*types.AttributeValueMemberN); !ok || v.Value != "1800000000123" {
		t.Errorf("Millis: got %#v, want Unix milliseconds", item["at"])
	}
}

func TestAbsentOrOtherTypeReadsAsZero(t *testing.T) {
	item := ddbattr.Item{"s": ddbattr.N(1), "n": ddbattr.S("1"), "bad": &types.AttributeValueMemberN{Value: "1.5"}}
	if ddbattr.GetS(item, "s") != "" || ddbattr.GetN(item, "n") != 0 || ddbattr.GetN(item, "bad") != 0 ||
		ddbattr.GetBool(item, "none") || !ddbattr.GetMillis(item, "none").IsZero() || ddbattr.GetStrings(item, "none") != nil {
		t.Error("got a value from an attribute that is absent or of another type")
	}
	if _, ok := ddbattr.GetB(item, "none"); ok {
		t.Error("GetB: got ok for an absent attribute")
	}
}

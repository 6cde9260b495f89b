package mirror

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

func item(entries ...SubscriptionEntry) map[string]types.AttributeValue {
	m := map[string]types.AttributeValue{attrPK: ddbattr.S(EntitlementKey("cus_1"))}
	for _, e := range entries {
		m[subAttrPrefix+e.ID] = e.attr()
	}
	return m
}

func TestDeriveEntitlement(t *testing.T) {
	tests := []struct {
		name       string
		entries    []SubscriptionEntry
		wantActive bool
		wantPrice  string
		wantUntil  int64
		wantReason string
	}{
		{name: "no subscription", wantReason: "no_subscription"},
		{
			name:       "active",
			entries:    []SubscriptionEntry{{ID: "sub_1", Status: "active", Price: "price_pro", CurrentPeriodEnd: 200, EventCreated: 10}},
			wantActive: true,
			wantPrice:  "price_pro",
			wantUntil:  200,
		},
		{
			name:       "trialing until trial end",
			entries:    []SubscriptionEntry{{ID: "sub_1", Status: "trialing", Price: "price_pro", CurrentPeriodEnd: 300, TrialEnd: 150, EventCreated: 10}},
			wantActive: true,
			wantPrice:  "price_pro",
			wantUntil:  150,
		},
		{
			name:       "past due",
			entries:    []SubscriptionEntry{{ID: "sub_1", Status: "past_due", Price: "price_pro", EventCreated: 10}},
			wantPrice:  "price_pro",
			wantReason: "past_due",
		},
		{name: "deleted is canceled", entries: []SubscriptionEntry{{ID: "sub_1", Status: "active", Deleted: true, EventCreated: 10}}, wantReason: "canceled"},
		{name: "one active among several grants access", entries: []SubscriptionEntry{
			{ID: "sub_old", Status: "canceled", Price: "price_basic", EventCreated: 30},
			{ID: "sub_new", Status: "active", Price: "price_pro", CurrentPeriodEnd: 500, EventCreated: 20},
		}, wantActive: true, wantPrice: "price_pro", wantUntil: 500},
		{name: "reason from the most recent", entries: []SubscriptionEntry{
			{ID: "sub_a", Status: "canceled", EventCreated: 10},
			{ID: "sub_b", Status: "unpaid", EventCreated: 20},
		}, wantReason: "unpaid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DeriveEntitlement("cus_1", item(tc.entries...))
			if got.Active != tc.wantActive || got.Price != tc.wantPrice || got.Until != tc.wantUntil || got.Reason != tc.wantReason {
				t.Errorf("got active=%v price=%q until=%d reason=%q; want %v %q %d %q",
					got.Active, got.Price, got.Until, got.Reason, tc.wantActive, tc.wantPrice, tc.wantUntil, tc.wantReason)
			}
			if len(got.Subscriptions) != len(tc.entries) {
				t.Errorf("subscriptions: got %d, want %d", len(got.Subscriptions), len(tc.entries))
			}
		})
	}
}

// TestEntryItem: a subscription's state as stored, key for key (its size
// is billed on every subscription event), and read back.
func TestEntryItem(t *testing.T) {
	e := SubscriptionEntry{ID: "sub_1", Status: "active", Price: "price_1", CurrentPeriodEnd: 200, CancelAtPeriodEnd: true, EventCreated: 10, EventID: "evt_1"}
	v := e.attr()
	want := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"status": ddbattr.S("active"), "price": ddbattr.S("price_1"), "product": ddbattr.S(""),
		"current_period_end": ddbattr.N(200), "trial_end": ddbattr.N(0),
		"cancel_at_period_end": ddbattr.Bool(true), "deleted": ddbattr.Bool(false),
		attrEntryCreated: ddbattr.N(10), attrEntryEventID: ddbattr.S("evt_1"),
	}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("stored entry: got %#v, want %#v", v, want)
	}
	if back := entryFrom("sub_1", want.Value); back != e {
		t.Errorf("read back: got %+v, want %+v", back, e)
	}
}

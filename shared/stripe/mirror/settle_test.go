package mirror_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

func TestTie(t *testing.T) {
	r := event.Record{ID: "evt_b", Created: 100}
	snap := func(created int64, id string, deleted bool) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": ddbattr.S("sub_1"), "last_event_created": ddbattr.N(created),
			"last_event_id": ddbattr.S(id), "deleted": ddbattr.Bool(deleted)}
	}
	ent := func(created int64, id string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": ddbattr.S(mirror.EntitlementKey("cus_1")), "sub_sub_1": &types.AttributeValueMemberM{
			Value: map[string]types.AttributeValue{"c": ddbattr.N(created), "e": ddbattr.S(id), "deleted": ddbattr.Bool(false)}}}
	}
	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
		want bool
	}{
		{"another event of the same second", snap(100, "evt_a", false), true},
		{"a later event", snap(101, "evt_a", false), false},
		{"a tombstone of the same second", snap(100, "evt_a", true), false},
		{"the event's own write", snap(100, "evt_b", false), false},
		{"no item returned", nil, false},
		{"the entitlement's entry, same second", ent(100, "evt_a"), true},
		{"the entitlement's entry, later", ent(101, "evt_a"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mirror.Tie(r, "sub_1", tc.item); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

type readerFunc func(ctx context.Context, objectType, id, account string) (json.RawMessage, error)

func (f readerFunc) Retrieve(ctx context.Context, objectType, id, account string) (json.RawMessage, error) {
	return f(ctx, objectType, id, account)
}

func TestSettleReadsTheEventsObjectAsItsAccount(t *testing.T) {
	m := &mirror.Mirror{Table: "mirror", TiesByAPI: true}
	payload := []byte(
		`{"id":"evt_1","account":"acct_9","type":"customer.subscription.updated","data":{"object":{"id":"sub_1","object":"subscription","customer":"cus_1","status":"unpaid"}}}`,
	)
	r := event.Record{ID: "evt_1", Type: "customer.subscription.updated", Created: 100}
	var asked []string
	api := readerFunc(func(_ context.Context, objectType, id, account string) (json.RawMessage, error) {
		asked = append(asked, objectType, id, account)
		return json.RawMessage(`{"id":"sub_1","object":"subscription","customer":"cus_1","status":"active"}`), nil
	})
	plan, err := m.Settle(context.Background(), api, r, payload)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(asked, " ") != "subscription sub_1 acct_9" {
		t.Errorf("asked for %v, want subscription sub_1 as acct_9", asked)
	}
	// The connected account's object is its own: keyed by account and id.
	if len(plan.Writes) != 2 || plan.Key != "acct_9/sub_1" {
		t.Fatalf("plan: key %q, %d writes; want acct_9's sub_1 snapshot and entitlement", plan.Key, len(plan.Writes))
	}
	put := plan.Writes[0].Put
	if got := ddbattr.GetS(put.Item, "settled_by"); got != mirror.SourceAPI {
		t.Errorf("settled_by: got %q, want %q", got, mirror.SourceAPI)
	}
	// The API's state replaces any of its second: <=, not <.
	if cond := *put.ConditionExpression; !strings.Contains(cond, "last_event_created <= :g_c") {
		t.Errorf("condition %q: want any state of the second or earlier replaced", cond)
	}

	down := readerFunc(func(context.Context, string, string, string) (json.RawMessage, error) {
		return nil, errors.New("503 from the API")
	})
	if _, err := m.Settle(context.Background(), down, r, payload); err == nil || fault.IsPermanent(err) {
		t.Errorf("API down: got %v, want a retryable error", err)
	}
}

func TestTiesByAPIRefusesTheSameSecond(t *testing.T) {
	payload := []byte(
		`{"id":"evt_1","type":"customer.subscription.updated","data":{"object":{"id":"sub_1","object":"subscription","customer":"cus_1","status":"active"}}}`,
	)
	r := event.Record{ID: "evt_1", Type: "customer.subscription.updated", Created: 100}
	for _, tc := range []struct {
		byAPI bool
		want  string
	}{
		{false, "last_event_created = :g_c AND last_event_id < :g_e"},
		{true, "(deleted = :g_f AND last_event_created < :g_c)"},
	} {
		plan, err := (&mirror.Mirror{Table: "mirror", TiesByAPI: tc.byAPI}).Plan(r, payload)
		if err != nil {
			t.Fatal(err)
		}
		if cond := *plan.Writes[0].Put.ConditionExpression; !strings.Contains(cond, tc.want) {
			t.Errorf("TiesByAPI %v: condition %q, want it to contain %q", tc.byAPI, cond, tc.want)
		}
	}
}

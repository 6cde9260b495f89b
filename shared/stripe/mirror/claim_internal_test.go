package mirror

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// TestGuardPassesAsItsCondition: the pre-read's reading of the guard
// (passes) says what its condition expression says DynamoDB would.
func TestGuardPassesAsItsCondition(t *testing.T) {
	item := func(created int64, id string, deleted bool) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			attrLastEventCreated: ddbattr.N(created), attrLastEventID: ddbattr.S(id), attrDeleted: ddbattr.Bool(deleted),
		}
	}
	for _, tc := range []struct {
		name string
		g    guard
		item map[string]types.AttributeValue
		want bool
	}{
		{"nothing applied", guard{created: 10, id: "evt_b", rule: later}, nil, true},
		{"later", guard{created: 11, id: "evt_b", rule: later}, item(10, "evt_a", false), true},
		{"same second, later rule: a tie", guard{created: 10, id: "evt_b", rule: later}, item(10, "evt_a", false), false},
		{"same second, by id, greater", guard{created: 10, id: "evt_b", rule: laterOrGreaterID}, item(10, "evt_a", false), true},
		{"same second, by id, smaller", guard{created: 10, id: "evt_a", rule: laterOrGreaterID}, item(10, "evt_b", false), false},
		{"earlier", guard{created: 9, id: "evt_b", rule: later}, item(10, "evt_a", false), false},
		{"the API's state of the same second", guard{created: 10, id: "audit_x", rule: notEarlier}, item(10, "evt_a", false), true},
		{"a later update over a tombstone", guard{created: 11, id: "evt_b", rule: later}, item(10, "evt_a", true), false},
		{"a deletion over a live state", guard{created: 9, id: "evt_b", deleted: true, rule: later}, item(10, "evt_a", false), true},
		{"a later deletion over a tombstone", guard{created: 11, id: "evt_b", deleted: true, rule: later}, item(10, "evt_a", true), true},
		{"an earlier deletion over a tombstone", guard{created: 9, id: "evt_b", deleted: true, rule: later}, item(10, "evt_a", true), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.g.passes(tc.item); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// Sources of a state the provider's API gave (Version.Source), as the
// snapshot records them (Snapshot.SettledBy).
const (
	// SourceAPI: an event of the same second as the one applied; the
	// object was read from the API to settle which came last.
	SourceAPI = "api"
	// SourceAudit: the audit found the mirror differing from the API.
	SourceAudit = "audit"
	// SourceThin: the object a thin event names (it carries no state),
	// read from the API when the event was processed.
	SourceThin = "thin"
	// SourceHealth: Stripe reported it failed to generate events for the
	// object (event.TypeEventGenerationFailureResolved); it was read from
	// the API to repair the mirror.
	SourceHealth = "health"
)

// Version is what orders a write of the mirror: the created time (Unix
// seconds) and id of the event it comes from, its type, and, for a state
// read from the provider's API, why it was read (Source: SourceAPI,
// SourceAudit; "" for an event's own data.object).
type Version struct {
	Created  int64
	ID       string
	Type     string
	Livemode bool
	Source   string
	// Account is the connected account the object belongs to (Stripe
	// Connect); "" for the platform's own. It is part of the object's key.
	Account string
	// Changes, for a repair, says what differed (Differences); the
	// snapshot keeps it (Snapshot.Changes).
	Changes []string
	// Deleted, for a state read from the API on an event that says its
	// object was deleted (a thin "*.deleted" event), writes the object as
	// deleted (a tombstone), as the snapshot event would.
	Deleted bool
}

// what names v's origin in errors.
func (v Version) what() string {
	if v.Source == SourceAudit || v.Source == SourceHealth {
		return v.Source
	}
	return "event"
}

// ObjectReader reads one object's current state from the provider's API,
// as raw JSON; *stripeapi.Client implements it. account is the connected
// account to read as (Stripe's Stripe-Account), "" for the platform's
// own. Its errors keep their class (fault): the API down, rate-limited or
// refusing the key is retryable.
type ObjectReader interface {
	Retrieve(ctx context.Context, objectType, id, account string) (json.RawMessage, error)
}

// Tie reports whether an event lost the guard to another event of the same
// second, which the deliveries cannot order: item is the mirror's item as
// the failed condition found it (store.ConflictError.Item), key the
// object's key (Plan.Key: its id, or Key(account, id)). A later event, a tombstone or the event's own
// earlier write is no tie: the event is superseded.
func Tie(r event.Record, key string, item map[string]types.AttributeValue) bool {
	if len(item) == 0 {
		return false
	}
	c, e, d := attrLastEventCreated, attrLastEventID, attrDeleted
	if strings.HasPrefix(ddbattr.GetS(item, attrPK), EntitlementKey("")) {
		_, id := SplitKey(key) // an entitlement holds its subscriptions by id
		m, ok := item[subAttrPrefix+id].(*types.AttributeValueMemberM)
		if !ok {
			return false
		}
		item, c, e, d = m.Value, attrEntryCreated, attrEntryEventID, attrEntryDeleted
	}
	return !ddbattr.GetBool(item, d) && ddbattr.GetN(item, c) == r.Created && ddbattr.GetS(item, e) != r.ID
}

// Settle reads the object of event r (payload its body) from api and plans
// writing the API's state in its place, at r's version with Source
// SourceAPI, behind a guard that any state of the same second or earlier
// passes: the API's state was read after every event of that second
// happened, so it replaces whichever of them was applied, while a later
// event, applied already or arriving after, still wins. Every order of a
// group of same-second events therefore ends in the API's state. The
// object is read as the event's connected account (its top-level
// account), if it has one.
//
// An error of api keeps its class: the API down or rate-limited fails the
// event retryably, never settles it on a guess.
func (m *Mirror) Settle(ctx context.Context, api ObjectReader, r event.Record, payload []byte) (Plan, error) {
	_, o, err := decodeEvent(r, payload)
	if err != nil {
		return Plan{}, err
	}
	var head struct {
		Account string `json:"account"`
	}
	_ = json.Unmarshal(payload, &head) // decoded whole above
	raw, err := api.Retrieve(ctx, o.Object, o.ID, head.Account)
	if err != nil {
		return Plan{}, fmt.Errorf("mirror: settle event %s from the API: %w", r.ID, err)
	}
	return m.PlanState(raw, Version{Created: r.Created, ID: r.ID, Type: r.Type, Livemode: r.Livemode, Source: SourceAPI, Account: head.Account})
}

// PlanState plans writing obj, an object as the provider's API serves it
// now, at version v, behind the guard Settle describes: it replaces any
// state of v.Created or earlier, and loses to a later one and to a
// tombstone (a deleted object stays deleted). It is the one guarded write
// of a state read from the API, for Settle and the audit. obj must be of
// a type the mirror keeps (ObjectTypes). A thin event's object
// (SourceThin) and a health event's (SourceHealth) are written here too:
// read after their event, the state is at least as new as every event of
// its second.
func (m *Mirror) PlanState(obj json.RawMessage, v Version) (Plan, error) {
	var o object
	if err := json.Unmarshal(obj, &o); err != nil || o.ID == "" {
		return Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: %s %s: the API's object has no id", v.what(), v.ID)}
	}
	if !keeps(o.Object) {
		return Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: %s %s: object type %q is not one the mirror keeps", v.what(), v.ID, o.Object)}
	}
	if o.Livemode {
		v.Livemode = true
	}
	deleted := o.Deleted || v.Deleted
	return m.plan(o, obj, deleted, v, guard{created: v.Created, id: v.ID, deleted: deleted, rule: notEarlier})
}

func keeps(objectType string) bool {
	for _, t := range ObjectTypes {
		if t == objectType {
			return true
		}
	}
	return false
}

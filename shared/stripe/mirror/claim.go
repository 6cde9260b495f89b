package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// An effects claim says the audit ran the team's effects for one change of
// a subscription's state: its key names the object and the state
// (ClaimKey), claim_at the second the audit asked the API for it (the
// version its repair wrote), claim_by the audit's event id. It has no
// customer (it stays out of by_customer) and no personal data: the state
// is hashed.
const (
	prefixClaim = "effects#"
	attrClaimAt = "claim_at"
	attrClaimBy = "claim_by"
)

// ClaimKey is the key of the effects claim for obj's state (State) under
// account: "effects#<Key(account, id)>#<24 hex digits of the state's
// SHA-256>". An event whose data.object is in that state has the same
// key as the audit's repair to it.
func ClaimKey(account string, obj json.RawMessage) (string, error) {
	var o object
	if err := json.Unmarshal(obj, &o); err != nil || o.ID == "" {
		return "", fmt.Errorf("mirror: claim: the object has no id")
	}
	state, err := State(obj)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(state))
	return prefixClaim + Key(account, o.ID) + "#" + hex.EncodeToString(sum[:])[:24], nil
}

// ClaimPut is the audit's write of the effects claim key, in the
// transaction of a repair that runs the team's effects: at is the
// repair's version (the second its page was asked for), by its event id.
// A later repair to the same state writes it again.
func (m *Mirror) ClaimPut(key string, at int64, by string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName: aws.String(m.Table),
		Item: map[string]types.AttributeValue{
			attrPK:      ddbattr.S(key),
			attrClaimAt: ddbattr.N(at),
			attrClaimBy: ddbattr.S(by),
		},
	}}
}

// ClaimCheck is an event's check, in its commit, that no effects claim
// for the state of its data.object covers it: the audit claimed that
// change at the event's created second or after it, so the effects ran
// already. It fails when one does; the event then commits without its
// effects.
func (m *Mirror) ClaimCheck(key string, created int64) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(m.Table),
		Key:                       map[string]types.AttributeValue{attrPK: ddbattr.S(key)},
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR claim_at < :created"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":created": ddbattr.N(created)},
	}}
}

// Standing is what the mirror holds for an event's object before the
// event is applied, as one strongly consistent read found it: whether the
// event would win the ordering guard, tie with the state applied (Tie), or
// lose to a later one, and whether the audit claimed the effects of the
// change to the state of the event's data.object (Claimed). The
// processor reads it before any effect runs, so that an outside call is
// made only for an event whose commit can happen; its commit's conditions
// stay the backstop for what changes after the read.
type Standing struct {
	// Key is the object's key ("" for an event the mirror does not
	// handle: nothing was read).
	Key string
	// Wins: the event's write would pass the guard now.
	Wins bool
	// Tie: the object holds another event of the same second, which only
	// the API can order (Settle).
	Tie bool
	// ClaimKey is the effects claim's key for a subscription ("" for
	// other objects); Claimed says a claim covers the event (claim_at at
	// or after its created second).
	ClaimKey string
	Claimed  bool
	// Check is the commit's backstop for a claim written after the read:
	// ClaimCheck of ClaimKey at the event's created second (nil without a
	// ClaimKey).
	Check []types.TransactWriteItem
}

// Prereader reads an event's Standing; the processor's pre-read.
type Prereader struct {
	Reader *Reader
	// TiesByAPI is the Mirror's (Mirror.TiesByAPI): the guard the event
	// will be written behind.
	TiesByAPI bool
}

// Standing reads, in one strongly consistent BatchGetItem, the snapshot of
// r's object and, for a subscription, its effects claim for the state of
// r's data.object.
func (p Prereader) Standing(ctx context.Context, r event.Record, payload []byte) (Standing, error) {
	if !Handles(r.Type) {
		return Standing{}, nil
	}
	ev, o, err := decodeEvent(r, payload)
	if err != nil {
		return Standing{}, err
	}
	st := Standing{Key: Key(r.Account, o.ID)}
	keys := []string{st.Key}
	if o.Object == "subscription" {
		if st.ClaimKey, err = ClaimKey(r.Account, ev.Data.Object); err != nil {
			return Standing{}, err
		}
		keys = append(keys, st.ClaimKey)
		st.Check = []types.TransactWriteItem{(&Mirror{Table: p.Reader.Table}).ClaimCheck(st.ClaimKey, r.Created)}
	}
	items, err := p.Reader.batchGet(ctx, keys)
	if err != nil {
		return Standing{}, fmt.Errorf("mirror: read the standing of event %s: %w", r.ID, err)
	}
	var snap map[string]types.AttributeValue
	for _, item := range items {
		switch ddbattr.GetS(item, attrPK) {
		case st.Key:
			snap = item
		case st.ClaimKey:
			st.Claimed = ddbattr.GetN(item, attrClaimAt) >= r.Created
		}
	}
	rule := laterOrGreaterID
	if p.TiesByAPI {
		rule = later
	}
	deleted := o.Deleted || strings.HasSuffix(r.Type, ".deleted")
	st.Wins = guard{created: r.Created, id: r.ID, deleted: deleted, rule: rule}.passes(snap)
	st.Tie = p.TiesByAPI && Tie(r, st.Key, snap)
	return st, nil
}

// passes evaluates the guard's condition (condition, path "") on item, as
// DynamoDB would.
func (g guard) passes(item map[string]types.AttributeValue) bool {
	if len(item) == 0 {
		return true
	}
	c, e, d := ddbattr.GetN(item, attrLastEventCreated), ddbattr.GetS(item, attrLastEventID), ddbattr.GetBool(item, attrDeleted)
	var newer bool
	switch g.rule {
	case later:
		newer = c < g.created
	case notEarlier:
		newer = c <= g.created
	default:
		newer = c < g.created || (c == g.created && e < g.id)
	}
	if g.deleted {
		return !d || newer
	}
	return !d && newer
}

// PlanRepair plans the audit's repair of obj at version v (PlanState),
// conditioned besides on the mirror still holding what the audit read
// (seen: the snapshot Reader.Objects returned; nil when it had none):
// the same last event on the snapshot, or no snapshot, and on the
// entitlement's entry nothing written after it. An event applied between
// the audit's read and its write therefore stands, even one of the same
// second as the audit's version, which PlanState's guard alone would
// replace.
func (m *Mirror) PlanRepair(obj json.RawMessage, v Version, seen *Snapshot) (Plan, error) {
	plan, err := m.PlanState(obj, v)
	if err != nil {
		return Plan{}, err
	}
	for _, w := range plan.Writes {
		switch {
		case w.Put != nil && seen == nil:
			w.Put.ConditionExpression = aws.String("attribute_not_exists(pk)")
			w.Put.ExpressionAttributeValues = nil
		case w.Put != nil:
			w.Put.ConditionExpression = aws.String("(" + aws.ToString(w.Put.ConditionExpression) + ") AND last_event_id = :r_e AND last_event_created = :r_c")
			w.Put.ExpressionAttributeValues[":r_e"] = ddbattr.S(seen.LastEventID)
			w.Put.ExpressionAttributeValues[":r_c"] = ddbattr.N(seen.LastEventCreated)
		case w.Update != nil && seen != nil:
			w.Update.ConditionExpression = aws.String(fmt.Sprintf("(%s) AND (attribute_not_exists(#sub) OR #sub.%s < :r_c OR (#sub.%s = :r_c AND #sub.%s = :r_e))",
				aws.ToString(w.Update.ConditionExpression), attrEntryCreated, attrEntryCreated, attrEntryEventID))
			w.Update.ExpressionAttributeValues[":r_e"] = ddbattr.S(seen.LastEventID)
			w.Update.ExpressionAttributeValues[":r_c"] = ddbattr.N(seen.LastEventCreated)
		}
	}
	return plan, nil
}

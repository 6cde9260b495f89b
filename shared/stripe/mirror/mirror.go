package mirror

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror/handled"
)

// Types lists the event types the mirror handles: the receiver's default
// allowlist. The list lives in package handled, which the receiver links
// without the mirror.
var Types = handled.Types

// Handles reports whether the mirror handles eventType.
func Handles(eventType string) bool {
	for _, t := range Types {
		if t == eventType {
			return true
		}
	}
	return false
}

// Attribute names of mirror items.
const (
	attrPK               = "pk"
	attrObject           = "object"
	attrCustomer         = "customer"
	attrDeleted          = "deleted"
	attrData             = "data"
	attrDataGzip         = "data_gz"
	attrDataOmitted      = "data_omitted"
	attrLastEventID      = "last_event_id"
	attrLastEventCreated = "last_event_created"
	attrLastEventType    = "last_event_type"
	attrLivemode         = "livemode"
	attrUpdatedAt        = "updated_at"
	attrErased           = "erased"
	attrSettledBy        = "settled_by"
	attrSettledChanges   = "settled_changes"
	// attrAccount is the connected account of a Connect object (absent on
	// the platform's own); its key and customer hold it too (Key).
	attrAccount = "connect_account"
)

// indexCustomer lists a customer's objects and entitlement (keys only).
const indexCustomer = "by_customer"

// EntitlementKey is the key of a customer's entitlement item; customer is
// the customer's id, or Key(account, id) for a connected account's.
func EntitlementKey(customer string) string { return "entitlement#" + customer }

// Plan is what applying one event writes to the mirror.
type Plan struct {
	// Key names the mirrored object the event touched ("" for none): its
	// id, or for a connected account's object Key(account, id).
	Key string
	// Writes are conditioned on the ordering guard: when one fails, a newer
	// event was applied first and this one is superseded.
	Writes []types.TransactWriteItem
}

// Mirror plans the writes of the mirror table (the processor commits them
// with the event's status).
type Mirror struct {
	Table string
	Now   func() time.Time
	// Fields is the allowlist of data.object fields a snapshot keeps; nil
	// keeps DefaultFields.
	Fields *Fields
	// TiesByAPI makes an event of the same second as the one applied to
	// its object lose the guard, for the caller to settle from the
	// provider's API (Tie, Settle). False breaks such ties by event id:
	// a total order, but not the order things happened in, for a
	// deployment without an API key.
	TiesByAPI bool
}

// object is what the mirror reads of data.object.
type object struct {
	ID       string          `json:"id"`
	Object   string          `json:"object"`
	Customer json.RawMessage `json:"customer"`
	Deleted  bool            `json:"deleted"`
	Livemode bool            `json:"livemode"`
	// Subscriptions.
	Status            string `json:"status"`
	CurrentPeriodEnd  int64  `json:"current_period_end"`
	TrialEnd          int64  `json:"trial_end"`
	CancelAtPeriodEnd bool   `json:"cancel_at_period_end"`
	Items             struct {
		Data []struct {
			CurrentPeriodEnd int64 `json:"current_period_end"`
			Price            struct {
				ID      string          `json:"id"`
				Product json.RawMessage `json:"product"`
			} `json:"price"`
		} `json:"data"`
	} `json:"items"`
}

type payloadShape struct {
	Data struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}

// Plan returns the writes that apply r to the mirror. Types the mirror does
// not handle get an empty plan.
func (m *Mirror) Plan(r event.Record, payload []byte) (Plan, error) {
	if !Handles(r.Type) {
		return Plan{}, nil
	}
	p, o, err := decodeEvent(r, payload)
	if err != nil {
		return Plan{}, err
	}
	deleted := o.Deleted || strings.HasSuffix(r.Type, ".deleted")
	rule := laterOrGreaterID
	if m.TiesByAPI {
		rule = later
	}
	v := Version{Created: r.Created, ID: r.ID, Type: r.Type, Livemode: r.Livemode, Account: r.Account}
	return m.plan(o, p.Data.Object, deleted, v, guard{created: r.Created, id: r.ID, deleted: deleted, rule: rule})
}

// decodeEvent reads an event's data.object.
func decodeEvent(r event.Record, payload []byte) (payloadShape, object, error) {
	var p payloadShape
	if err := json.Unmarshal(payload, &p); err != nil {
		return p, object{}, &fault.Permanent{Err: fmt.Errorf("mirror: decode event %s: %w", r.ID, err)}
	}
	var o object
	if err := json.Unmarshal(p.Data.Object, &o); err != nil || o.ID == "" {
		return p, object{}, &fault.Permanent{Err: fmt.Errorf("mirror: event %s has no data.object with an id", r.ID)}
	}
	return p, o, nil
}

// plan returns the writes that put o (raw, as Stripe sent it) on the
// mirror at version v, behind guard g.
func (m *Mirror) plan(o object, raw json.RawMessage, deleted bool, v Version, g guard) (Plan, error) {
	// A tombstone keeps no data: only what the ordering guard, the
	// by_customer index and an erasure need (see the package doc).
	var data []byte
	if !deleted {
		fields := m.Fields
		if fields == nil {
			fields = defaultFields()
		}
		var err error
		if data, err = fields.Filter(o.Object, raw); err != nil {
			return Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: %s %s: %w", v.what(), v.ID, err)}
		}
	}
	customer := event.CustomerOf(o.Object, o.ID, o.Customer)
	// A connected account's objects are keyed by account and id, their
	// customer too (the by_customer index and the entitlement's key).
	key := Key(v.Account, o.ID)
	if customer != "" {
		customer = Key(v.Account, customer)
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}

	item := map[string]types.AttributeValue{
		attrPK:               ddbattr.S(key),
		attrObject:           ddbattr.S(o.Object),
		attrDeleted:          ddbattr.Bool(deleted),
		attrLastEventID:      ddbattr.S(v.ID),
		attrLastEventCreated: ddbattr.N(v.Created),
		attrLastEventType:    ddbattr.S(v.Type),
		attrLivemode:         ddbattr.Bool(v.Livemode),
		attrUpdatedAt:        ddbattr.N(now().UnixMilli()),
	}
	if v.Source != "" {
		item[attrSettledBy] = ddbattr.S(v.Source)
	}
	if len(v.Changes) > 0 {
		changes := make([]types.AttributeValue, len(v.Changes))
		for i, c := range v.Changes {
			changes[i] = ddbattr.S(c)
		}
		item[attrSettledChanges] = &types.AttributeValueMemberL{Value: changes}
	}
	if customer != "" {
		item[attrCustomer] = ddbattr.S(customer)
	}
	if v.Account != "" {
		item[attrAccount] = ddbattr.S(v.Account)
	}
	if !deleted {
		if err := putData(item, data); err != nil {
			return Plan{}, fmt.Errorf("mirror: %s %s: %w", v.what(), v.ID, err)
		}
	}
	// No ExpressionAttributeNames: DynamoDB rejects an empty map (moto
	// does not, in transactions). A failed condition returns the item as
	// it was (ALL_OLD, at no charge), so the caller can tell a tie (Tie)
	// from a newer event without reading it again.
	cond, values := g.condition("", "attribute_not_exists(pk)")
	writes := []types.TransactWriteItem{{Put: &types.Put{
		TableName:                           aws.String(m.Table),
		Item:                                item,
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}}

	if o.Object == "subscription" && customer != "" {
		writes = append(writes, m.entitlementWrite(v, o, customer, deleted, g, now()))
	}
	return Plan{Key: key, Writes: writes}, nil
}

// putData sets the snapshot's data on item by ddbattr's rule for large
// values: always gzipped (data_gz), so that a snapshot's item stays under
// the 1 KB a write unit covers as long as it can, or not at all
// (data_omitted) when even gzipped it would not fit, so a snapshot is
// never the reason an event fails. Items written before every snapshot
// was gzipped hold small data as JSON text (data); SnapshotFrom reads
// both.
func putData(item map[string]types.AttributeValue, data []byte) error {
	stored, err := ddbattr.Pack(data)
	switch {
	case err != nil:
		return err
	case stored == nil:
		item[attrDataOmitted] = ddbattr.Bool(true)
	default:
		item[attrDataGzip] = ddbattr.B(stored)
	}
	return nil
}

// entitlementWrite records the subscription's state on the customer's
// entitlement item, one attribute per subscription, behind the same guard.
func (m *Mirror) entitlementWrite(v Version, o object, customer string, deleted bool, g guard, now time.Time) types.TransactWriteItem {
	entry := SubscriptionEntry{
		Status:            o.Status,
		CurrentPeriodEnd:  o.CurrentPeriodEnd,
		TrialEnd:          o.TrialEnd,
		CancelAtPeriodEnd: o.CancelAtPeriodEnd,
		EventCreated:      v.Created,
		EventID:           v.ID,
		Deleted:           deleted,
	}
	if len(o.Items.Data) > 0 {
		it := o.Items.Data[0]
		entry.Price = it.Price.ID
		entry.Product = idOf(it.Price.Product)
		if entry.CurrentPeriodEnd == 0 {
			// From API version 2025-03-31 the period lives on the items.
			entry.CurrentPeriodEnd = it.CurrentPeriodEnd
		}
	}
	if deleted && entry.Status == "" {
		entry.Status = "canceled"
	}
	cond, values := g.condition("#sub", "attribute_not_exists(#sub)")
	values[":entry"] = entry.attr()
	values[":now"] = ddbattr.N(now.UnixMilli())
	// No customer attribute: it would put the entitlement in the
	// by_customer index, a write unit for its first subscription, while
	// every reader finds it by its key (EntitlementKey) and the index's
	// readers leave it out.
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(m.Table),
		Key:                       map[string]types.AttributeValue{attrPK: ddbattr.S(EntitlementKey(customer))},
		UpdateExpression:          aws.String("SET #sub = :entry, updated_at = :now"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#sub": subAttrPrefix + o.ID},
		ExpressionAttributeValues: values,
		// As for the snapshot: the caller reads a tie from the item.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}

// rule is how a guard orders a write against the state it finds.
type rule int

const (
	// laterOrGreaterID: a later created time, or the same with a greater
	// event id. Total, but the id says nothing of which came first: the
	// order without the provider's API to settle ties.
	laterOrGreaterID rule = iota
	// later: a later created time only; an event of the same second as
	// the applied one loses, for the caller to settle from the API (Tie,
	// Settle).
	later
	// notEarlier: the same created time or later: the API's state, read
	// after every event of that second happened, replaces any of them.
	notEarlier
)

// guard builds the ordering condition for a write at (created, id).
type guard struct {
	created int64
	id      string
	deleted bool
	rule    rule
}

// condition returns the guard as a condition expression over the item's
// top-level attributes (path "") or over the map at path. absent is the
// expression true when nothing was applied yet.
//
// A later write replaces state unless that state is a tombstone; a deletion
// replaces anything but a later tombstone. So the final state is the newest
// deletion if there is any, else the newest write: the same for every order.
func (g guard) condition(path, absent string) (string, map[string]types.AttributeValue) {
	c, e, d := attrLastEventCreated, attrLastEventID, attrDeleted
	if path != "" {
		c, e, d = path+"."+attrEntryCreated, path+"."+attrEntryEventID, path+"."+attrEntryDeleted
	}
	values := map[string]types.AttributeValue{
		":g_c": ddbattr.N(g.created),
		":g_f": ddbattr.Bool(false),
	}
	var newer string
	switch g.rule {
	case later:
		newer = fmt.Sprintf("%s < :g_c", c)
	case notEarlier:
		newer = fmt.Sprintf("%s <= :g_c", c)
	default:
		newer = fmt.Sprintf("(%s < :g_c OR (%s = :g_c AND %s < :g_e))", c, c, e)
		values[":g_e"] = ddbattr.S(g.id)
	}
	var expr string
	if g.deleted {
		expr = fmt.Sprintf("%s OR %s = :g_f OR %s", absent, d, newer)
	} else {
		expr = fmt.Sprintf("%s OR (%s = :g_f AND %s)", absent, d, newer)
	}
	return expr, values
}

// idOf reads an id from a field that is either an id string or an expanded
// object with an id, or null.
func idOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.ID
	}
	return ""
}

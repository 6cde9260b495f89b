package mirror

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/mirror/handled"
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
}

// object is what the mirror reads of data.object.
type object struct {
	ID       string          `json:"id"`
	Object   string          `json:"object"`
	Customer json.RawMessage `json:"customer"`
	Deleted  bool            `json:"deleted"`
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
	var p payloadShape
	if err := json.Unmarshal(payload, &p); err != nil {
		return Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: decode event %s: %w", r.ID, err)}
	}
	var o object
	if err := json.Unmarshal(p.Data.Object, &o); err != nil || o.ID == "" {
		return Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: event %s has no data.object with an id", r.ID)}
	}
	deleted := o.Deleted || strings.HasSuffix(r.Type, ".deleted")
	// A tombstone keeps no data: only what the ordering guard, the
	// by_customer index and an erasure need (see the package doc).
	var data []byte
	if !deleted {
		fields := m.Fields
		if fields == nil {
			fields = defaultFields()
		}
		var err error
		if data, err = fields.Filter(o.Object, p.Data.Object); err != nil {
			return Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: event %s: %w", r.ID, err)}
		}
	}
	customer := idOf(o.Customer)
	if o.Object == "customer" {
		customer = o.ID
	}
	// A connected account's objects are keyed by account and id, their
	// customer too (the by_customer index and the entitlement's key).
	key := Key(r.Account, o.ID)
	if customer != "" {
		customer = Key(r.Account, customer)
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	g := newGuard(r, deleted)

	item := map[string]types.AttributeValue{
		attrPK:               ddbattr.S(key),
		attrObject:           ddbattr.S(o.Object),
		attrDeleted:          ddbattr.Bool(deleted),
		attrLastEventID:      ddbattr.S(r.ID),
		attrLastEventCreated: ddbattr.N(r.Created),
		attrLastEventType:    ddbattr.S(r.Type),
		attrLivemode:         ddbattr.Bool(r.Livemode),
		attrUpdatedAt:        ddbattr.N(now().UnixMilli()),
	}
	if customer != "" {
		item[attrCustomer] = ddbattr.S(customer)
	}
	if r.Account != "" {
		item[attrAccount] = ddbattr.S(r.Account)
	}
	if !deleted {
		if err := putData(item, data); err != nil {
			return Plan{}, fmt.Errorf("mirror: event %s: %w", r.ID, err)
		}
	}
	// No ExpressionAttributeNames: DynamoDB rejects an empty map (moto
	// does not, in transactions).
	cond, values := g.condition("", "attribute_not_exists(pk)")
	writes := []types.TransactWriteItem{{Put: &types.Put{
		TableName:                 aws.String(m.Table),
		Item:                      item,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: values,
	}}}

	if o.Object == "subscription" && customer != "" {
		writes = append(writes, m.entitlementWrite(r, o, customer, deleted, g, now()))
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
func (m *Mirror) entitlementWrite(r event.Record, o object, customer string, deleted bool, g guard, now time.Time) types.TransactWriteItem {
	entry := SubscriptionEntry{
		Status:            o.Status,
		CurrentPeriodEnd:  o.CurrentPeriodEnd,
		TrialEnd:          o.TrialEnd,
		CancelAtPeriodEnd: o.CancelAtPeriodEnd,
		EventCreated:      r.Created,
		EventID:           r.ID,
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
	}}
}

// guard builds the ordering condition for an event.
type guard struct {
	created int64
	id      string
	deleted bool
}

func newGuard(r event.Record, deleted bool) guard {
	return guard{created: r.Created, id: r.ID, deleted: deleted}
}

// condition returns the guard as a condition expression over the item's
// top-level attributes (path "") or over the map at path. absent is the
// expression true when nothing was applied yet.
//
// A later event replaces state unless that state is a tombstone; a deletion
// replaces anything but a later tombstone. So the final state is the newest
// deletion if there is any, else the newest event: the same for every order.
func (g guard) condition(path, absent string) (string, map[string]types.AttributeValue) {
	c, e, d := attrLastEventCreated, attrLastEventID, attrDeleted
	if path != "" {
		c, e, d = path+"."+attrEntryCreated, path+"."+attrEntryEventID, path+"."+attrEntryDeleted
	}
	newer := fmt.Sprintf("(%s < :g_c OR (%s = :g_c AND %s < :g_e))", c, c, e)
	values := map[string]types.AttributeValue{
		":g_c": ddbattr.N(g.created),
		":g_e": ddbattr.S(g.id),
		":g_f": ddbattr.Bool(false),
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

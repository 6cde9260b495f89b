package mirror

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/mirror/handled"
	"github.com/webhook-inbox/webhook-inbox/shared/processor"
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
)

// IndexCustomer lists a customer's objects and entitlement.
const IndexCustomer = "by_customer"

// EntitlementKey is the key of a customer's entitlement item.
func EntitlementKey(customer string) string { return "entitlement#" + customer }

// Mirror plans the writes of the mirror table. It implements
// processor.Mirror.
type Mirror struct {
	Table string
	Now   func() time.Time
	// Fields is the allowlist of data.object fields a snapshot keeps; nil
	// keeps DefaultFields.
	Fields *Fields
}

var _ processor.Mirror = (*Mirror)(nil)

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
func (m *Mirror) Plan(r event.Record, payload []byte) (processor.Plan, error) {
	if !Handles(r.Type) {
		return processor.Plan{}, nil
	}
	var p payloadShape
	if err := json.Unmarshal(payload, &p); err != nil {
		return processor.Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: decode event %s: %w", r.ID, err)}
	}
	var o object
	if err := json.Unmarshal(p.Data.Object, &o); err != nil || o.ID == "" {
		return processor.Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: event %s has no data.object with an id", r.ID)}
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
			return processor.Plan{}, &fault.Permanent{Err: fmt.Errorf("mirror: event %s: %w", r.ID, err)}
		}
	}
	customer := idOf(o.Customer)
	if o.Object == "customer" {
		customer = o.ID
	}
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	g := newGuard(r, deleted)

	item := map[string]types.AttributeValue{
		attrPK:               str(o.ID),
		attrObject:           str(o.Object),
		attrDeleted:          &types.AttributeValueMemberBOOL{Value: deleted},
		attrLastEventID:      str(r.ID),
		attrLastEventCreated: num(r.Created),
		attrLastEventType:    str(r.Type),
		attrLivemode:         &types.AttributeValueMemberBOOL{Value: r.Livemode},
		attrUpdatedAt:        num(now().UnixMilli()),
	}
	if customer != "" {
		item[attrCustomer] = str(customer)
	}
	if !deleted {
		putData(item, data)
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
	return processor.Plan{Key: o.ID, Writes: writes}, nil
}

// Sizes for a snapshot's data: above gzipAbove it is stored gzipped; if it
// is still above maxData it is left out, flagged, because a DynamoDB item
// holds at most 400 KB with its other attributes. A snapshot is never the
// reason an event fails.
const (
	gzipAbove = 8 << 10
	maxData   = 350 << 10
)

// putData sets the snapshot's data on item: as JSON text, gzipped, or not at
// all (data_omitted) when even gzipped it would not fit.
func putData(item map[string]types.AttributeValue, data []byte) {
	if len(data) <= gzipAbove {
		item[attrData] = str(string(data))
		return
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(data) // writes to a bytes.Buffer do not fail
	_ = w.Close()
	if gz.Len() <= maxData {
		item[attrDataGzip] = &types.AttributeValueMemberB{Value: gz.Bytes()}
		return
	}
	item[attrDataOmitted] = &types.AttributeValueMemberBOOL{Value: true}
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
	values[":cus"] = str(customer)
	values[":now"] = num(now.UnixMilli())
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(m.Table),
		Key:                       map[string]types.AttributeValue{attrPK: str(EntitlementKey(customer))},
		UpdateExpression:          aws.String("SET #sub = :entry, customer = :cus, updated_at = :now"),
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
		c, e, d = path+".c", path+".e", path+".deleted"
	}
	newer := fmt.Sprintf("(%s < :g_c OR (%s = :g_c AND %s < :g_e))", c, c, e)
	values := map[string]types.AttributeValue{
		":g_c": num(g.created),
		":g_e": str(g.id),
		":g_f": &types.AttributeValueMemberBOOL{Value: false},
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

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

package mirror

import (
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// subAttrPrefix prefixes the attribute that holds one subscription's state on
// a customer's entitlement item. One attribute per subscription lets each be
// guarded on its own, in the same transaction as the subscription snapshot,
// without reading the item first.
const subAttrPrefix = "sub_"

// SubscriptionEntry is one subscription's state on an entitlement item.
type SubscriptionEntry struct {
	ID                string `json:"id"`
	Status            string `json:"status"`
	Price             string `json:"price,omitempty"`
	Product           string `json:"product,omitempty"`
	CurrentPeriodEnd  int64  `json:"current_period_end,omitempty"`
	TrialEnd          int64  `json:"trial_end,omitempty"`
	CancelAtPeriodEnd bool   `json:"cancel_at_period_end"`
	Deleted           bool   `json:"deleted"`
	EventCreated      int64  `json:"last_event_created"`
	EventID           string `json:"last_event_id"`
}

// Keys of a subscription's state on the entitlement item: the map
// attribute subAttrPrefix+id. The ordering guard reads attrEntryCreated,
// attrEntryEventID and attrEntryDeleted.
const (
	attrEntryStatus            = "status"
	attrEntryPrice             = "price"
	attrEntryProduct           = "product"
	attrEntryCurrentPeriodEnd  = "current_period_end"
	attrEntryTrialEnd          = "trial_end"
	attrEntryCancelAtPeriodEnd = "cancel_at_period_end"
	attrEntryDeleted           = "deleted"
	attrEntryCreated           = "c"
	attrEntryEventID           = "e"
)

func (s SubscriptionEntry) attr() types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		attrEntryStatus:            ddbattr.S(s.Status),
		attrEntryPrice:             ddbattr.S(s.Price),
		attrEntryProduct:           ddbattr.S(s.Product),
		attrEntryCurrentPeriodEnd:  ddbattr.N(s.CurrentPeriodEnd),
		attrEntryTrialEnd:          ddbattr.N(s.TrialEnd),
		attrEntryCancelAtPeriodEnd: ddbattr.Bool(s.CancelAtPeriodEnd),
		attrEntryDeleted:           ddbattr.Bool(s.Deleted),
		attrEntryCreated:           ddbattr.N(s.EventCreated),
		attrEntryEventID:           ddbattr.S(s.EventID),
	}}
}

func entryFrom(id string, m map[string]types.AttributeValue) SubscriptionEntry {
	return SubscriptionEntry{
		ID: id, Status: ddbattr.GetS(m, attrEntryStatus), Price: ddbattr.GetS(m, attrEntryPrice), Product: ddbattr.GetS(m, attrEntryProduct),
		CurrentPeriodEnd: ddbattr.GetN(m, attrEntryCurrentPeriodEnd), TrialEnd: ddbattr.GetN(m, attrEntryTrialEnd),
		CancelAtPeriodEnd: ddbattr.GetBool(m, attrEntryCancelAtPeriodEnd), Deleted: ddbattr.GetBool(m, attrEntryDeleted),
		EventCreated: ddbattr.GetN(m, attrEntryCreated), EventID: ddbattr.GetS(m, attrEntryEventID),
	}
}

// Entitlement is what a customer is entitled to, derived from the states of
// all their subscriptions. Its JSON is what inboxctl entitlement --json
// prints:
//
//	{
//	  "customer": "cus_123",
//	  "account": "acct_123",       // the connected account's (Connect); omitted for the platform's own
//	  "active": true,              // some subscription is active or trialing
//	  "price": "price_123",        // of the granting subscription (or the latest)
//	  "product": "prod_123",
//	  "until": 1735689600,         // end of its current period or trial, Unix seconds
//	  "reason": "past_due",        // only when not active: why not
//	  "subscriptions": [           // every subscription seen, latest event first
//	    {"id": "sub_123", "status": "active", "price": "price_123", "product": "prod_123",
//	     "current_period_end": 1735689600, "cancel_at_period_end": false,
//	     "deleted": false, "last_event_created": 1700000000, "last_event_id": "evt_123"}
//	  ]
//	}
type Entitlement struct {
	Customer string `json:"customer"`
	// Account is the connected account the customer is of (Connect);
	// empty for the platform's own customers.
	Account string `json:"account,omitempty"`
	// Active: some subscription is active or trialing.
	Active bool `json:"active"`
	// Price and Product of the subscription that grants access (or of the
	// most recent one when none does).
	Price   string `json:"price,omitempty"`
	Product string `json:"product,omitempty"`
	// Until is when the current period (or trial) ends, Unix seconds.
	Until int64 `json:"until,omitempty"`
	// Reason says why not, when not active: the status of the most recent
	// subscription (past_due, unpaid, canceled, incomplete, paused, ...), or
	// "no_subscription".
	Reason        string              `json:"reason,omitempty"`
	Subscriptions []SubscriptionEntry `json:"subscriptions"`
}

// grants reports whether a subscription in this state gives access.
func grants(s SubscriptionEntry) bool {
	return !s.Deleted && (s.Status == "active" || s.Status == "trialing")
}

// DeriveEntitlement computes the entitlement from an entitlement item. The
// result depends only on the subscriptions' states, never on the order their
// events arrived in. customer is the customer's id, or a connected
// account's Key(account, id).
func DeriveEntitlement(customer string, item map[string]types.AttributeValue) Entitlement {
	account, id := SplitKey(customer)
	ent := Entitlement{Customer: id, Account: account, Subscriptions: []SubscriptionEntry{}}
	for name, v := range item {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok || !strings.HasPrefix(name, subAttrPrefix) {
			continue
		}
		ent.Subscriptions = append(ent.Subscriptions, entryFrom(strings.TrimPrefix(name, subAttrPrefix), m.Value))
	}
	// Most recent first; ties broken by id so the result is deterministic.
	sort.Slice(ent.Subscriptions, func(i, j int) bool {
		a, b := ent.Subscriptions[i], ent.Subscriptions[j]
		if a.EventCreated != b.EventCreated {
			return a.EventCreated > b.EventCreated
		}
		return a.ID > b.ID
	})
	var best *SubscriptionEntry
	for i := range ent.Subscriptions {
		s := &ent.Subscriptions[i]
		if grants(*s) && (best == nil || until(*s) > until(*best)) {
			best = s
		}
	}
	switch {
	case best != nil:
		ent.Active = true
		ent.Price, ent.Product, ent.Until = best.Price, best.Product, until(*best)
	case len(ent.Subscriptions) == 0:
		ent.Reason = "no_subscription"
	default:
		latest := ent.Subscriptions[0]
		ent.Price, ent.Product = latest.Price, latest.Product
		ent.Reason = latest.Status
		if latest.Deleted {
			ent.Reason = "canceled"
		}
	}
	return ent
}

func until(s SubscriptionEntry) int64 {
	if s.Status == "trialing" && s.TrialEnd > 0 {
		return s.TrialEnd
	}
	return s.CurrentPeriodEnd
}

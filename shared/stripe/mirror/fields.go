package mirror

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// A snapshot keeps only the fields of data.object that its object type's
// allowlist names, so the mirror holds what entitlements and operators need
// and not the customer's e-mail, name, address, phone number, shipping
// details or free text. Stripe sends all of these in the events the mirror
// handles; none of them is needed to decide access or to debug ordering.
//
// The defaults leave out metadata on purpose: teams put anything there,
// personal data included (an e-mail to match accounts, a phone number, a
// note). A team that relies on one metadata key keeps just that key, for
// example "subscription:metadata.app_user_id" (see ParseFields).

// ObjectTypes lists the Stripe object types the mirror handles, in the
// order of Types.
var ObjectTypes = []string{"customer", "subscription", "invoice", "checkout.session", "product", "price"}

// alwaysKept are kept for every type, whatever the allowlist: a snapshot
// without them cannot say what it is.
var alwaysKept = []string{"id", "object"}

// defaultPaths is the default allowlist per object type. A path names a
// field of data.object: "status", "items.data[].price.id" (each element of
// the list items.data). A reference to another object is kept as
// "customer.id": the id, whether Stripe sent the id or (with expand, in an
// event fetched from the API) the whole object, the customer's e-mail
// included. The reasons, per type:
//   - ids, status, amounts, currency, periods and times: what an
//     entitlement is derived from (status, current_period_end, trial_end,
//     cancel_at_period_end, the items' price and product, and from API
//     version 2025-03-31 the items' periods) and what an operator compares
//     with Stripe's dashboard;
//   - the ids of related objects (customer, subscription, invoice,
//     payment_intent, price, product): to follow an object to the next;
//   - a checkout session's client_reference_id: the team's own id for the
//     buyer, the usual link from a payment to an account;
//   - a product's name and a price's nickname and lookup_key: the team's
//     catalogue, not anyone's personal data.
var defaultPaths = map[string][]string{
	"customer": {
		"created", "livemode", "deleted", "currency", "balance", "delinquent", "test_clock.id",
	},
	"subscription": {
		"created", "livemode", "customer.id", "status", "currency", "collection_method",
		"start_date", "billing_cycle_anchor", "current_period_start", "current_period_end",
		"trial_start", "trial_end", "cancel_at", "cancel_at_period_end", "canceled_at", "ended_at",
		"cancellation_details.reason", "pause_collection.behavior", "pause_collection.resumes_at",
		"latest_invoice.id", "schedule.id", "quantity", "plan.id", "plan.product.id", "test_clock.id",
		"items.data[].id", "items.data[].quantity",
		"items.data[].current_period_start", "items.data[].current_period_end",
		"items.data[].price.id", "items.data[].price.product.id",
		"items.data[].price.recurring.interval", "items.data[].price.recurring.interval_count",
	},
	"invoice": {
		"created", "livemode", "customer.id", "subscription.id", "status", "currency",
		"amount_due", "amount_paid", "amount_remaining", "subtotal", "total",
		"billing_reason", "collection_method", "attempt_count", "attempted", "paid",
		"period_start", "period_end", "due_date", "next_payment_attempt", "number",
		"payment_intent.id", "charge.id", "test_clock.id",
		"status_transitions.finalized_at", "status_transitions.paid_at",
		"status_transitions.voided_at", "status_transitions.marked_uncollectible_at",
		"parent.subscription_details.subscription.id",
		"lines.data[].id", "lines.data[].amount", "lines.data[].currency", "lines.data[].quantity",
		"lines.data[].period.start", "lines.data[].period.end", "lines.data[].subscription.id",
		"lines.data[].price.id", "lines.data[].price.product.id",
		"lines.data[].pricing.price_details.price.id", "lines.data[].pricing.price_details.product.id",
		"lines.data[].parent.subscription_item_details.subscription.id",
		"lines.data[].parent.subscription_item_details.subscription_item.id",
	},
	"checkout.session": {
		"created", "livemode", "customer.id", "subscription.id", "invoice.id", "payment_intent.id",
		"setup_intent.id", "payment_link.id", "mode", "status", "payment_status", "currency",
		"amount_subtotal", "amount_total", "client_reference_id", "expires_at",
	},
	"product": {
		"created", "updated", "livemode", "deleted", "active", "name", "type", "default_price.id",
	},
	"price": {
		"created", "livemode", "deleted", "active", "product.id", "currency", "type", "billing_scheme",
		"unit_amount", "unit_amount_decimal", "tiers_mode", "lookup_key", "nickname",
		"recurring.interval", "recurring.interval_count", "recurring.usage_type",
	},
}

// Fields is the allowlist of data.object fields that snapshots keep, per
// object type. The zero value is not usable: use DefaultFields or
// ParseFields.
type Fields struct {
	byType map[string]*node
	paths  map[string][]string
}

// node is one level of an allowlist: keep the whole value (all), or the
// named fields of an object. A list is filtered element by element with the
// same node, so "items.data[].price.id" and "items.data.price.id" mean the
// same; the brackets only say to a reader that data is a list.
type node struct {
	all    bool
	fields map[string]*node
}

// DefaultFields returns the default allowlist.
func DefaultFields() *Fields {
	f, err := ParseFields("")
	if err != nil {
		panic("mirror: default fields: " + err.Error()) // a constant; tested
	}
	return f
}

// ParseFields returns the default allowlist extended by spec: a
// comma-separated list of type:path entries, where type is one of
// ObjectTypes or * (every type) and path is a dotted field path of
// data.object, "[]" marking a list ("customer:metadata.app_user_id",
// "subscription:items.data[].price.nickname"). A path that names an object
// keeps it whole ("subscription:metadata" keeps every metadata key); the
// path * keeps the type's whole data.object, as Stripe sent it. A path
// through a field that holds an id or an expanded object
// ("invoice:customer.id") keeps the id either way. An empty spec gives the
// defaults.
func ParseFields(spec string) (*Fields, error) {
	f := &Fields{byType: map[string]*node{}, paths: map[string][]string{}}
	for _, t := range ObjectTypes {
		for _, p := range append(slices.Clone(alwaysKept), defaultPaths[t]...) {
			if err := f.add(t, p); err != nil {
				return nil, err
			}
		}
	}
	for _, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		// Object types contain dots but no colon; split on the last colon
		// would break paths, so split on the first.
		t, p, ok := strings.Cut(entry, ":")
		if !ok || t == "" || p == "" {
			return nil, fmt.Errorf("mirror: field %q: want type:path, like subscription:metadata.app_user_id", entry)
		}
		types := []string{t}
		if t == "*" {
			types = ObjectTypes
		} else if !slices.Contains(ObjectTypes, t) {
			return nil, fmt.Errorf("mirror: field %q: unknown object type %q (want one of %s, or *)", entry, t, strings.Join(ObjectTypes, ", "))
		}
		for _, t := range types {
			if err := f.add(t, p); err != nil {
				return nil, fmt.Errorf("mirror: field %q: %w", entry, err)
			}
		}
	}
	return f, nil
}

// add puts path p on type t's allowlist.
func (f *Fields) add(t, p string) error {
	root := f.byType[t]
	if root == nil {
		root = &node{fields: map[string]*node{}}
		f.byType[t] = root
	}
	if !slices.Contains(f.paths[t], p) {
		f.paths[t] = append(f.paths[t], p)
	}
	if p == "*" {
		root.all = true
		return nil
	}
	n := root
	for _, seg := range strings.Split(p, ".") {
		name := strings.TrimSuffix(seg, "[]")
		if name == "" || strings.ContainsAny(name, "[]*: \t") {
			return fmt.Errorf("path %q: segment %q is not a field name", p, seg)
		}
		if n.all {
			return nil // an earlier, shorter path keeps all of it
		}
		next := n.fields[name]
		if next == nil {
			next = &node{fields: map[string]*node{}}
			n.fields[name] = next
		}
		n = next
	}
	n.all, n.fields = true, nil
	return nil
}

// Paths lists the paths kept for objectType, in the order given (the
// always-kept id and object first, then the defaults, then the extras).
func (f *Fields) Paths(objectType string) []string {
	if p, ok := f.paths[objectType]; ok {
		return slices.Clone(p)
	}
	return slices.Clone(alwaysKept)
}

// Filter returns the compact JSON of the fields of data.object (obj, of
// objectType) that the allowlist keeps. Types without an allowlist keep
// id and object only.
func (f *Fields) Filter(objectType string, obj json.RawMessage) (json.RawMessage, error) {
	root := f.byType[objectType]
	if root == nil {
		root = &node{fields: map[string]*node{"id": {all: true}, "object": {all: true}}}
	}
	if root.all {
		// The whole object, byte for byte as Stripe sent it, compacted.
		var buf bytes.Buffer
		if err := json.Compact(&buf, obj); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return root.filter(obj)
}

// filter applies n to one JSON value. Scalars (strings, numbers, booleans,
// null) are kept where a path reaches them, even when the path goes on:
// "customer.id" keeps a customer given as a plain id.
func (n *node) filter(v json.RawMessage) (json.RawMessage, error) {
	if n.all {
		return v, nil
	}
	switch firstByte(v) {
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil {
			return nil, err
		}
		out := make(map[string]json.RawMessage, len(n.fields))
		for name, child := range n.fields {
			fv, ok := obj[name]
			if !ok {
				continue
			}
			kept, err := child.filter(fv)
			if err != nil {
				return nil, err
			}
			out[name] = kept
		}
		return marshalSorted(out)
	case '[':
		var list []json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		buf.WriteByte('[')
		for i, el := range list {
			kept, err := n.filter(el)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := json.Compact(&buf, kept); err != nil {
				return nil, err
			}
		}
		buf.WriteByte(']')
		return buf.Bytes(), nil
	}
	return v, nil
}

// marshalSorted encodes an object compactly with its keys sorted, as Stripe
// sends them. Like json.Compact, and unlike json.Marshal, it leaves <, >
// and & as they are: the snapshot is data, not HTML.
func marshalSorted(m map[string]json.RawMessage) (json.RawMessage, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(k); err != nil { // a string always encodes
			return nil, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(':')
		if err := json.Compact(&buf, m[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func firstByte(v json.RawMessage) byte {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// defaultFields is DefaultFields, built once.
var defaultFields = sync.OnceValue(DefaultFields)

package mirror_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// pii marks every personal value planted in the test events: none of it may
// reach the mirror table.
const pii = "PII-jane.doe@example.com"

// address is a postal address as Stripe sends it.
func address() map[string]any {
	return map[string]any{"line1": pii + " 1 Main St", "line2": nil, "city": pii + " town", "postal_code": pii + "-12345", "state": "CA", "country": "US"}
}

// personal sets, on a sample object of each type, every field Stripe
// documents as holding the customer's personal data, and the free-text
// fields (description, metadata) that teams fill with it.
func personal(object string) map[string]any {
	shipping := map[string]any{"name": pii + " name", "phone": pii + " phone", "address": address()}
	common := map[string]any{
		"metadata":    map[string]any{"email": pii, "app_user_id": "user_42"},
		"description": pii + " description",
	}
	switch object {
	case "customer":
		common["email"] = pii
		common["name"] = pii + " name"
		common["phone"] = pii + " phone"
		common["address"] = address()
		common["shipping"] = shipping
		common["invoice_settings"] = map[string]any{"custom_fields": []any{map[string]any{"name": "VAT holder", "value": pii}}, "footer": pii}
	case "invoice":
		common["customer_email"] = pii
		common["customer_name"] = pii + " name"
		common["customer_phone"] = pii + " phone"
		common["customer_address"] = address()
		common["customer_shipping"] = shipping
		common["customer_tax_ids"] = []any{map[string]any{"type": "eu_vat", "value": pii + " vat"}}
		common["account_name"] = pii + " account"
		common["hosted_invoice_url"] = "https://invoice.stripe.com/i/" + pii
		common["invoice_pdf"] = "https://pay.stripe.com/invoice/" + pii + "/pdf"
		common["footer"] = pii + " footer"
		common["shipping_details"] = shipping
		common["custom_fields"] = []any{map[string]any{"name": "PO", "value": pii}}
	case "checkout.session":
		common["customer_email"] = pii
		common["customer_details"] = map[string]any{
			"email":   pii,
			"name":    pii + " name",
			"phone":   pii + " phone",
			"address": address(),
			"tax_ids": []any{map[string]any{"type": "eu_vat", "value": pii}},
		}
		common["collected_information"] = map[string]any{"individual_name": pii, "shipping_details": shipping}
		common["shipping_details"] = shipping
		common["custom_fields"] = []any{map[string]any{"key": "nickname", "text": map[string]any{"value": pii}}}
		common["url"] = "https://checkout.stripe.com/c/pay/" + pii
		common["success_url"] = "https://example.com/welcome?email=" + pii
		common["client_reference_id"] = "user_42"
	}
	return common
}

// linePII puts personal data in an invoice line's description, inside
// the list lines.data.
func linePII(t *testing.T, body []byte) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	obj := doc["data"].(map[string]any)["object"].(map[string]any)
	if lines, ok := obj["lines"].(map[string]any); ok {
		for _, l := range lines["data"].([]any) {
			l.(map[string]any)["description"] = "Seat for " + pii
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rawItem reads a mirror item as stored, with data_gz unzipped into the
// text searched.
func (f *fixture) rawItem(t *testing.T, key string) (map[string]types.AttributeValue, string) {
	t.Helper()
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.mirror.Table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		t.Fatalf("no item %s", key)
	}
	var text strings.Builder
	for name, v := range out.Item {
		fmt.Fprintf(&text, "%s=%v\n", name, v)
		if b, ok := v.(*types.AttributeValueMemberB); ok {
			zr, err := gzip.NewReader(bytes.NewReader(b.Value))
			if err == nil {
				plain, _ := io.ReadAll(zr)
				text.Write(plain)
			}
		}
	}
	return out.Item, text.String()
}

// lookup follows a dotted path through decoded JSON; "[0]" picks a list's
// first element.
func lookup(doc any, path string) (any, bool) {
	for _, seg := range strings.Split(path, ".") {
		first := strings.HasSuffix(seg, "[0]")
		m, ok := doc.(map[string]any)
		if !ok {
			return nil, false
		}
		if doc, ok = m[strings.TrimSuffix(seg, "[0]")]; !ok {
			return nil, false
		}
		if first {
			l, ok := doc.([]any)
			if !ok || len(l) == 0 {
				return nil, false
			}
			doc = l[0]
		}
	}
	return doc, true
}

// needed lists, per object type, the fields of data.object that the
// entitlement is derived from, that inboxctl object prints (status,
// current_period_end) and that an operator follows to related objects.
var needed = map[string][]string{
	"customer": {"id", "object", "created", "livemode", "currency", "delinquent"},
	"subscription": {"id", "object", "customer", "status", "current_period_end", "current_period_start", "trial_end",
		"cancel_at_period_end", "canceled_at", "currency", "latest_invoice",
		"items.data[0].id", "items.data[0].price.id", "items.data[0].price.product", "items.data[0].current_period_end", "items.data[0].quantity"},
	"invoice": {"id", "object", "customer", "status", "currency", "amount_due", "amount_paid", "amount_remaining", "total",
		"period_start", "period_end", "billing_reason", "lines.data[0].id", "lines.data[0].amount", "lines.data[0].period.end",
		"parent.subscription_details.subscription"},
	"checkout.session": {"id", "object", "customer", "mode", "status", "payment_status", "payment_intent", "amount_total", "client_reference_id"},
	"product":          {"id", "object", "active", "name", "default_price"},
	"price":            {"id", "object", "active", "product", "currency", "unit_amount", "recurring.interval", "type"},
}

// TestDefaultAllowlistDropsPersonalData runs an event of every handled
// type whose object carries personal data in every field Stripe puts it
// (Stripe's own sample objects, filled in) through the mirror with the
// default allowlist, and checks the stored item: none of the personal data
// anywhere in it, and every field the entitlement, inboxctl object and an
// operator need, with the value Stripe sent.
func TestDefaultAllowlistDropsPersonalData(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i, eventType := range mirror.Types {
		if strings.HasSuffix(eventType, ".deleted") {
			continue // tombstones: TestTombstonesKeepNoData
		}
		t.Run(eventType, func(t *testing.T) {
			object := objectOf(eventType)
			id := fmt.Sprintf("%s_pii_%02d", strings.ReplaceAll(object, ".", "_"), i)
			o := stripefixture.Options{ObjectID: id, Set: personal(object)}
			switch object {
			case "customer":
				o.Customer = id
			case "subscription", "invoice", "checkout.session":
				o.Customer = "cus_pii"
			}
			r, body := ev(t, eventType, fmt.Sprintf("evt_pii_%02d", i), 1700000000+int64(i), o)
			body = linePII(t, body)
			if !bytes.Contains(body, []byte(pii)) {
				t.Fatal("the test event carries no personal data")
			}
			if c := f.write(t, f.plan(t, r, body)...); c != -1 {
				t.Fatalf("condition of item %d failed on a fresh object", c)
			}
			item, text := f.rawItem(t, id)
			for _, leak := range []string{pii, `"metadata"`} {
				if i := strings.Index(text, leak); i >= 0 {
					t.Errorf("the stored item keeps %s: ...%s...", leak, text[max(0, i-60):min(len(text), i+60)])
				}
			}
			// Always gzipped (ddbattr.Pack); rawItem's text holds it inflated.
			if _, ok := item["data_gz"]; !ok {
				t.Fatalf("no data stored: %v", item)
			}

			snap, err := f.reader.Object(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var sent struct {
				Data struct {
					Object any `json:"object"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &sent); err != nil {
				t.Fatal(err)
			}
			var kept any
			if err := json.Unmarshal(snap.Data, &kept); err != nil {
				t.Fatalf("snapshot data is not JSON: %v\n%s", err, snap.Data)
			}
			for _, path := range needed[object] {
				want, ok := lookup(sent.Data.Object, path)
				if !ok {
					t.Fatalf("the sample %s has no %s: fix the test", object, path)
				}
				got, ok := lookup(kept, path)
				if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: got %v (present %v), want %v as sent", path, got, ok, want)
				}
			}
		})
	}
}

// TestTombstonesKeepNoData: a deletion leaves a tombstone with the ordering
// guard, the keys and the customer id, and no data, of any type, whatever
// the deleted object carried.
func TestTombstonesKeepNoData(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i, eventType := range mirror.Types {
		if !strings.HasSuffix(eventType, ".deleted") {
			continue
		}
		t.Run(eventType, func(t *testing.T) {
			object := objectOf(eventType)
			id := fmt.Sprintf("%s_gone_%02d", strings.ReplaceAll(object, ".", "_"), i)
			customer := "cus_gone"
			if object == "customer" {
				customer = id
			}
			o := stripefixture.Options{ObjectID: id, Customer: customer, Set: personal(object)}
			if object == "product" || object == "price" {
				o.Customer = ""
			}
			// The object lives first, then is deleted.
			updated := strings.TrimSuffix(eventType, "deleted") + "updated"
			r, body := ev(t, updated, "evt_live_"+id, 1700000000, o)
			f.write(t, f.plan(t, r, body)...)
			r, body = ev(t, eventType, "evt_gone_"+id, 1700000100, o)
			if c := f.write(t, f.plan(t, r, body)...); c != -1 {
				t.Fatalf("the deletion lost the guard (item %d)", c)
			}
			item, text := f.rawItem(t, id)
			for _, name := range []string{"data", "data_gz", "data_omitted"} {
				if _, ok := item[name]; ok {
					t.Errorf("tombstone keeps %s", name)
				}
			}
			if i := strings.Index(text, pii); i >= 0 {
				t.Errorf("tombstone keeps personal data: ...%s...", text[max(0, i-60):min(len(text), i+60)])
			}
			snap, err := f.reader.Object(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !snap.Deleted || snap.LastEventID != r.ID || snap.LastEventCreated != r.Created || snap.Object != object || string(snap.Data) != "null" {
				t.Errorf("tombstone: got deleted=%v last %s@%d object %s data %s; want deleted, %s@%d, %s, null",
					snap.Deleted, snap.LastEventID, snap.LastEventCreated, snap.Object, snap.Data, r.ID, r.Created, object)
			}
			if o.Customer != "" && snap.Customer != o.Customer {
				t.Errorf("tombstone customer: got %q, want %q (the index and erasure find it by customer)", snap.Customer, o.Customer)
			}
			// The guard still holds: an older update does not resurrect it.
			r, body = ev(t, updated, "evt_late_"+id, 1700000050, o)
			if c := f.write(t, f.plan(t, r, body)[0]); c != 0 {
				t.Errorf("an older update after the tombstone: got conflict %d, want the snapshot's (0)", c)
			}
		})
	}
}

// TestCustomerIndexHoldsKeysOnly: the by_customer index copies no data
// (KEYS_ONLY), and CustomerObjects still returns whole snapshots, read by
// key.
func TestCustomerIndexHoldsKeysOnly(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	desc, err := f.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(f.mirror.Table)})
	if err != nil {
		t.Fatal(err)
	}
	var projection types.ProjectionType
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == mirror.IndexCustomer && g.Projection != nil {
			projection = g.Projection.ProjectionType
		}
	}
	if projection != types.ProjectionTypeKeysOnly {
		t.Errorf("by_customer projection: got %q, want KEYS_ONLY", projection)
	}

	const customer = "cus_keys"
	var want []string
	for i, eventType := range []string{"customer.updated", "customer.subscription.updated", "invoice.paid", "checkout.session.completed"} {
		object := objectOf(eventType)
		id := fmt.Sprintf("%s_keys_%d", strings.ReplaceAll(object, ".", "_"), i)
		o := stripefixture.Options{ObjectID: id, Customer: customer, Set: personal(object)}
		if object == "customer" {
			id = customer
		}
		r, body := ev(t, eventType, fmt.Sprintf("evt_keys_%d", i), 1700000000+int64(i), o)
		f.write(t, f.plan(t, r, body)...)
		want = append(want, id)
	}
	out, err := f.db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(f.mirror.Table), IndexName: aws.String(mirror.IndexCustomer),
		KeyConditionExpression:    aws.String("customer = :c"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: customer}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The entitlement is not in the index: it is read by its key, and
	// leaving it out saves a write unit on each customer's first
	// subscription event.
	if len(out.Items) != len(want) {
		t.Errorf("index: got %d items, want the %d snapshots alone", len(out.Items), len(want))
	}
	for _, item := range out.Items {
		for name := range item {
			if name != "pk" && name != "customer" {
				t.Errorf("index item %v projects %s", item["pk"], name)
			}
		}
	}

	snaps, err := f.reader.CustomerObjects(ctx, customer, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range snaps {
		got = append(got, s.ID)
		if s.Object == "" || s.LastEventID == "" || string(s.Data) == "null" || !json.Valid(s.Data) {
			t.Errorf("%s: got object %q last %q data %.40s; want the whole snapshot", s.ID, s.Object, s.LastEventID, s.Data)
		}
	}
	if strings.Join(got, " ") != strings.Join(sorted(want), " ") {
		t.Errorf("CustomerObjects: got %v, want %v", got, sorted(want))
	}
	subs, err := f.reader.CustomerObjects(ctx, customer, "subscription")
	if err != nil || len(subs) != 1 || subs[0].Object != "subscription" {
		t.Errorf("CustomerObjects(subscription): got %v, %v; want the one subscription", subs, err)
	}
}

// objectOf is the type of the object an event of eventType carries.
func objectOf(eventType string) string {
	switch {
	case strings.HasPrefix(eventType, "customer.subscription."):
		return "subscription"
	case strings.HasPrefix(eventType, "checkout.session."):
		return "checkout.session"
	}
	return eventType[:strings.LastIndex(eventType, ".")]
}

func sorted(v []string) []string {
	out := append([]string(nil), v...)
	sort.Strings(out)
	return out
}

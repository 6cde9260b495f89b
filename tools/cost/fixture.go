package cost

import (
	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
)

// EventSize is one of the two events the meter prices.
type EventSize struct {
	// Name labels it in the report: "2.6 KB", "7.3 KB".
	Name string
	// Type is the event type it is built as.
	Type string
	set  map[string]any
}

// The two events the meter prices. Both are built from Stripe's own sample
// objects and pretty-printed as Stripe sends them, so their sizes are
// realistic: a customer.updated of about 2.6 KB (the sample customer with
// the contact details, address, shipping and metadata a SaaS keeps), and
// the customer.subscription.updated of about 7.3 KB the benchmark table
// uses (Stripe's sample subscription as it is).
var (
	Small = EventSize{Name: "2.6 KB", Type: "customer.updated", set: map[string]any{
		"name":        "Jenny Rosen",
		"email":       "jenny.rosen@example.com",
		"phone":       "+14155550123",
		"description": "Pro plan, annual billing, 12 seats",
		"address": map[string]any{
			"line1": "510 Townsend St", "line2": "Floor 3", "city": "San Francisco",
			"state": "CA", "postal_code": "94103", "country": "US",
		},
		"shipping": map[string]any{
			"name": "Jenny Rosen", "phone": "+14155550123",
			"address": map[string]any{
				"line1": "510 Townsend St", "line2": "Floor 3", "city": "San Francisco",
				"state": "CA", "postal_code": "94103", "country": "US",
			},
		},
		"preferred_locales": []any{"en-US"},
		"invoice_settings": map[string]any{
			"custom_fields":          []any{map[string]any{"name": "VAT", "value": "US123456789"}},
			"default_payment_method": "pm_1PgafxB7WZ01zgkWJl9hwlCF",
			"footer":                 "Thank you for your business.",
			"rendering_options":      map[string]any{"amount_tax_display": nil, "template": nil},
		},
		"metadata": map[string]any{
			"account_id": "acct_7f3a9c", "plan": "pro_annual", "seats": "12",
			"crm_id": "0015g00000XyZ12AAB", "region": "us-west",
			"signup_source": "partner_referral", "cost_center": "eng-platform",
			"billing_contact": "finance@example.com", "tax_status": "exempt_pending",
		},
	}}
	Large = EventSize{Name: "7.3 KB", Type: "customer.subscription.updated"}
)

// build returns a new event of this size about object and customer (a
// customer event's object is the customer), created at created.
func (e EventSize) build(id, object, customer string, created int64) ([]byte, error) {
	o := stripefixture.Options{ID: id, Customer: customer, Created: created, Set: e.set}
	if e.Type != Small.Type {
		o.ObjectID = object
	}
	return stripefixture.Build(e.Type, o)
}

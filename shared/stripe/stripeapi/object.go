package stripeapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stripe/stripe-go/v81"
	"github.com/stripe/stripe-go/v81/checkout/session"
	"github.com/stripe/stripe-go/v81/customer"
	"github.com/stripe/stripe-go/v81/invoice"
	"github.com/stripe/stripe-go/v81/price"
	"github.com/stripe/stripe-go/v81/product"
	"github.com/stripe/stripe-go/v81/subscription"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
)

// RetrieveTypes lists the object types Retrieve reads: those the mirror
// keeps.
var RetrieveTypes = []string{"customer", "subscription", "invoice", "checkout.session", "product", "price"}

// Retrieve returns the raw JSON of one object as Stripe's API serves it now,
// through the object's own retrieve call in stripe-go (GET
// /v1/subscriptions/{id}, /v1/invoices/{id}, ...), in the API version
// stripe-go pins (stripe.APIVersion), so its shape is the one the version
// documents whatever the account's default. account, when set, is the
// connected account to read as (the Stripe-Account header); "" reads the
// platform's own object. The key needs read access to the type only.
//
// Errors are classified by Classify: down, rate-limited or refused (5xx,
// 429, 401) is retryable, so a caller never settles on a guess; an object
// type Retrieve does not read, or an answer about another object, is
// permanent.
func (c *Client) Retrieve(ctx context.Context, objectType, id, account string) (json.RawMessage, error) {
	key, err := c.key(ctx)
	if err != nil {
		return nil, fmt.Errorf("stripeapi: get %s %s: API key: %w", objectType, id, err)
	}
	raw, err := c.retrieve(ctx, objectType, id, account, key)
	if err != nil && c.refused != nil && Unauthorized(err) {
		if fresh, changed, rerr := c.refused(ctx, key); rerr == nil && changed && fresh != "" {
			raw, err = c.retrieve(ctx, objectType, id, account, fresh)
		}
	}
	if err != nil {
		return nil, Classify(fmt.Errorf("stripeapi: get %s %s: %w", objectType, id, err))
	}
	var head struct {
		ID string `json:"id"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &head) != nil {
		return nil, fmt.Errorf("stripeapi: get %s %s: empty or undecodable response", objectType, id)
	}
	if head.ID != id {
		return nil, &fault.Permanent{Err: fmt.Errorf("stripeapi: get %s %s: response is object %q", objectType, id, head.ID)}
	}
	return raw, nil
}

// retrieve makes one retrieve call with key and returns the response's
// raw JSON.
func (c *Client) retrieve(ctx context.Context, objectType, id, account, key string) (json.RawMessage, error) {
	params := stripe.Params{Context: ctx}
	if account != "" {
		params.SetStripeAccount(account)
	}
	var resp *stripe.APIResponse
	var err error
	switch objectType {
	case "subscription":
		var o *stripe.Subscription
		if o, err = (subscription.Client{B: c.backend, Key: key}).Get(id, &stripe.SubscriptionParams{Params: params}); o != nil {
			resp = o.LastResponse
		}
	case "invoice":
		var o *stripe.Invoice
		if o, err = (invoice.Client{B: c.backend, Key: key}).Get(id, &stripe.InvoiceParams{Params: params}); o != nil {
			resp = o.LastResponse
		}
	case "customer":
		var o *stripe.Customer
		if o, err = (customer.Client{B: c.backend, Key: key}).Get(id, &stripe.CustomerParams{Params: params}); o != nil {
			resp = o.LastResponse
		}
	case "checkout.session":
		var o *stripe.CheckoutSession
		if o, err = (session.Client{B: c.backend, Key: key}).Get(id, &stripe.CheckoutSessionParams{Params: params}); o != nil {
			resp = o.LastResponse
		}
	case "product":
		var o *stripe.Product
		if o, err = (product.Client{B: c.backend, Key: key}).Get(id, &stripe.ProductParams{Params: params}); o != nil {
			resp = o.LastResponse
		}
	case "price":
		var o *stripe.Price
		if o, err = (price.Client{B: c.backend, Key: key}).Get(id, &stripe.PriceParams{Params: params}); o != nil {
			resp = o.LastResponse
		}
	default:
		return nil, &fault.Permanent{Err: fmt.Errorf("object type %q is not one Retrieve reads (%v)", objectType, RetrieveTypes)}
	}
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, fmt.Errorf("no response")
	}
	return resp.RawJSON, nil
}

package stripeapi

import (
	"context"
	"fmt"

	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
)

// FetchOf returns the raw JSON of a connected account's event id (Stripe
// Connect: GET /v1/events/{id} with the platform's key and the
// Stripe-Account header, stripe-go's per-request account); Fetch's for
// the platform's own (account ""). Another account's event is not found:
// Stripe shows an account's events only to a request acting for it.
// Errors are classified by Classify, as Fetch's.
func (c *Client) FetchOf(ctx context.Context, account, id string) ([]byte, error) {
	if account == "" {
		return c.Fetch(ctx, id)
	}
	events, err := c.events(ctx)
	if err != nil {
		return nil, fmt.Errorf("stripeapi: get event %s of %s: %w", id, account, err)
	}
	params := &stripe.EventParams{}
	params.Context = ctx
	params.SetStripeAccount(account)
	ev, err := events.Get(id, params)
	if err != nil && c.retryWithNewKey(ctx, err, &events) {
		ev, err = events.Get(id, params)
	}
	if err != nil {
		return nil, Classify(fmt.Errorf("stripeapi: get event %s of %s: %w", id, account, err))
	}
	if ev.LastResponse == nil || len(ev.LastResponse.RawJSON) == 0 {
		return nil, fmt.Errorf("stripeapi: get event %s of %s: empty response", id, account)
	}
	if ev.ID != id {
		return nil, &fault.Permanent{Err: fmt.Errorf("stripeapi: get event %s of %s: response is event %q", id, account, ev.ID)}
	}
	return ev.LastResponse.RawJSON, nil
}

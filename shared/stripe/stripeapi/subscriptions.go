package stripeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v81"
	"github.com/stripe/stripe-go/v81/subscription"
)

// SubscriptionQuery selects the subscriptions to list.
type SubscriptionQuery struct {
	// StartingAfter resumes a listing after this subscription id.
	StartingAfter string
	// Account lists a connected account's subscriptions (Stripe-Account);
	// "" the platform's own.
	Account string
}

// SubscriptionPage is one page of subscriptions, as Stripe sent it.
type SubscriptionPage struct {
	// Subscriptions holds the raw JSON of each subscription, in Stripe's
	// order, exactly as the page carried it.
	Subscriptions []json.RawMessage
	// HasMore says whether more subscriptions follow.
	HasMore bool
}

// ListSubscriptions lists every subscription of the account, canceled ones
// included (status=all: Stripe's default list leaves them out, and a
// comparison that forgets this never learns of a cancellation), PageLimit
// per request, with stripe-go's iterator. It calls page once per page
// received, in order, even for an empty first page; when page returns
// false or an error it requests no further page. It returns page's error,
// or the API's, classified by Classify.
func (c *Client) ListSubscriptions(ctx context.Context, q SubscriptionQuery, page func(SubscriptionPage) (bool, error)) error {
	key, err := c.key(ctx)
	if err != nil {
		return fmt.Errorf("stripeapi: list subscriptions: API key: %w", err)
	}
	params := &stripe.SubscriptionListParams{Status: stripe.String("all")}
	params.Context = ctx
	params.Limit = stripe.Int64(PageLimit)
	if q.StartingAfter != "" {
		params.StartingAfter = stripe.String(q.StartingAfter)
	}
	if q.Account != "" {
		params.SetStripeAccount(q.Account)
	}
	handed, err := c.listSubscriptions(key, params, page)
	// As ListEvents: a key refused before any page was handed over is
	// replaced and the listing made again.
	if err != nil && handed == 0 && c.refused != nil && Unauthorized(err) {
		if fresh, changed, rerr := c.refused(ctx, key); rerr == nil && changed && fresh != "" {
			_, err = c.listSubscriptions(fresh, params, page)
		}
	}
	if err != nil {
		return Classify(err)
	}
	return nil
}

func (c *Client) listSubscriptions(key string, params *stripe.SubscriptionListParams, page func(SubscriptionPage) (bool, error)) (handed int, err error) {
	it := (subscription.Client{B: c.backend, Key: key}).List(params)
	var current *stripe.SubscriptionList
	deliver := func(l *stripe.SubscriptionList) (bool, error) {
		current = l
		if l.LastResponse == nil || len(l.LastResponse.RawJSON) == 0 {
			return false, errors.New("stripeapi: list subscriptions: page without a body")
		}
		var raw struct {
			Data    []json.RawMessage `json:"data"`
			HasMore bool              `json:"has_more"`
		}
		if err := json.Unmarshal(l.LastResponse.RawJSON, &raw); err != nil {
			return false, fmt.Errorf("stripeapi: list subscriptions: decode page: %w", err)
		}
		handed++
		return page(SubscriptionPage{Subscriptions: raw.Data, HasMore: raw.HasMore})
	}
	for it.Next() {
		l := it.SubscriptionList()
		if l == current {
			continue
		}
		more, err := deliver(l)
		if err != nil || !more {
			return handed, err
		}
	}
	if err := it.Err(); err != nil {
		return handed, fmt.Errorf("stripeapi: list subscriptions: %w", err)
	}
	if l := it.SubscriptionList(); l != current && l != nil && l.LastResponse != nil {
		_, err := deliver(l)
		return handed, err
	}
	return handed, nil
}

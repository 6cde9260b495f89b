package stripeapi

import (
	"context"
	"fmt"

	"github.com/stripe/stripe-go/v81"
	"github.com/stripe/stripe-go/v81/account"
)

// ListAccounts returns the id of every connected account of the platform
// (Stripe Connect: GET /v1/accounts), PageLimit per request, with
// stripe-go's iterator. A key refused before any account was read is
// replaced and the listing made again, as ListEvents does. Errors are
// classified by Classify.
func (c *Client) ListAccounts(ctx context.Context) ([]string, error) {
	key, err := c.key(ctx)
	if err != nil {
		return nil, fmt.Errorf("stripeapi: list accounts: API key: %w", err)
	}
	ids, err := c.listAccounts(ctx, key)
	if err != nil && len(ids) == 0 && c.refused != nil && Unauthorized(err) {
		if fresh, changed, rerr := c.refused(ctx, key); rerr == nil && changed && fresh != "" {
			ids, err = c.listAccounts(ctx, fresh)
		}
	}
	if err != nil {
		return nil, Classify(fmt.Errorf("stripeapi: list accounts: %w", err))
	}
	return ids, nil
}

func (c *Client) listAccounts(ctx context.Context, key string) ([]string, error) {
	params := &stripe.AccountListParams{}
	params.Context = ctx
	params.Limit = stripe.Int64(PageLimit)
	it := (account.Client{B: c.backend, Key: key}).List(params)
	var ids []string
	for it.Next() {
		ids = append(ids, it.Account().ID)
	}
	return ids, it.Err()
}

package stripeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
)

// Thin events (an event destination's lighter payload) are read through
// stripe-go's raw request support (stripe.RawRequestBackend, the backend's
// RawRequest): stripe-go v81 has no type or service for API v2 events, and
// its raw requests are what its own v81 example of a thin-event handler
// uses. They share the backend of every other call here (its retries, rate
// cap, size bound, no redirects, the key's refresh on a 401) and Classify.

// ThinEvent returns the raw JSON of the API v2 event id (GET
// /v2/core/events/{id}), as account (the Stripe-Context a thin event's
// "context" names; "" for the platform's own). A response that is not the
// event asked for is permanent.
func (c *Client) ThinEvent(ctx context.Context, account, id string) ([]byte, error) {
	if id == "" || strings.ContainsAny(id, "/?#") {
		return nil, &fault.Permanent{Err: fmt.Errorf("stripeapi: get v2 event %q: not an event id", id)}
	}
	raw, err := c.raw(ctx, "/v2/core/events/"+id, account, true)
	if err != nil {
		return nil, fmt.Errorf("stripeapi: get v2 event %s: %w", id, err)
	}
	var head struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &head) != nil || head.ID != id {
		return nil, &fault.Permanent{Err: fmt.Errorf("stripeapi: get v2 event %s: response is event %q", id, head.ID)}
	}
	return raw, nil
}

// Related returns the raw JSON of the object a thin event names, read from
// its related_object.url (an API v1 path, "/v1/subscriptions/sub_..."), as
// account (the Stripe-Account header; "" for the platform's own). A url
// that is not a path of Stripe's API v1 is refused permanently before any
// request: the key goes only where Retrieve's would. wantID is the
// related_object's id, which the answer must be.
func (c *Client) Related(ctx context.Context, account, url, wantID string) (json.RawMessage, error) {
	if !strings.HasPrefix(url, "/v1/") || strings.ContainsAny(url, "?#") || strings.Contains(url, "..") {
		return nil, &fault.Permanent{Err: fmt.Errorf("stripeapi: related object %s: url %q is not an API v1 path", wantID, url)}
	}
	raw, err := c.raw(ctx, url, account, false)
	if err != nil {
		return nil, fmt.Errorf("stripeapi: get related object %s: %w", wantID, err)
	}
	var head struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &head) != nil || head.ID != wantID {
		return nil, &fault.Permanent{Err: fmt.Errorf("stripeapi: get related object %s: response is object %q", wantID, head.ID)}
	}
	return raw, nil
}

// raw makes one GET of path with stripe-go's raw request, as account: the
// Stripe-Context header for an API v2 path (v2), Stripe-Account for a v1
// one. A 401 is tried once more with a refreshed key (Config.KeyRefused).
func (c *Client) raw(ctx context.Context, path, account string, v2 bool) ([]byte, error) {
	rb, ok := c.backend.(stripe.RawRequestBackend)
	if !ok {
		return nil, &fault.Permanent{Err: fmt.Errorf("the backend makes no raw requests")}
	}
	key, err := c.key(ctx)
	if err != nil {
		return nil, fmt.Errorf("API key: %w", err)
	}
	params := &stripe.RawParams{Params: stripe.Params{Context: ctx}}
	if account != "" {
		if v2 {
			params.StripeContext = account
		} else {
			params.SetStripeAccount(account)
		}
	}
	resp, err := rb.RawRequest(http.MethodGet, path, key, "", params)
	if err != nil && c.refused != nil && Unauthorized(err) {
		if fresh, changed, rerr := c.refused(ctx, key); rerr == nil && changed && fresh != "" {
			resp, err = rb.RawRequest(http.MethodGet, path, fresh, "", params)
		}
	}
	if err != nil {
		return nil, Classify(err)
	}
	if resp == nil || len(resp.RawJSON) == 0 {
		return nil, fmt.Errorf("empty response")
	}
	return resp.RawJSON, nil
}

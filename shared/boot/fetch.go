package boot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/stripeapi"
)

// maxEventBytes bounds an event read from Stripe (they are far smaller).
const maxEventBytes = 16 << 20

// eventFetcher reads one event from Stripe's API, GET /v1/events/{id}, with
// net/http alone. It is all the processor needs from Stripe's API (events
// too large to store are fetched), and stripe-go's client links its whole
// backend and object model (0.9 MB, 0.2 MB zipped: that alone took the
// processor's package over the 4 MB goal). A 4xx other than 401, 403 and
// 429 is permanent, as is an answer about another event; anything else is
// retried through the queue, with the processor's backoff. A rejected key is
// retried because it is fixable: a permanent failure would strand the event
// in failed_permanent, which nothing claims again.
// The reconciler, which lists events, uses package stripeapi, whose
// BaseURL decides for both where the key may go.
type eventFetcher struct {
	key, base string
	client    *http.Client
}

// newEventFetcher returns a fetcher for the API at base (STRIPE_API_BASE;
// "" for Stripe's), or an error when stripeapi.BaseURL refuses it.
func newEventFetcher(key, base string) (*eventFetcher, error) {
	base, err := stripeapi.BaseURL(base)
	if err != nil {
		return nil, err
	}
	return &eventFetcher{key: key, base: base, client: &http.Client{Timeout: 20 * time.Second}}, nil
}

// Fetch returns the raw JSON of event id.
func (f *eventFetcher) Fetch(ctx context.Context, id string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base+"/v1/events/"+url.PathEscape(id), nil)
	if err != nil {
		return nil, &fault.Permanent{Err: fmt.Errorf("stripe: get event %s: %w", id, err)}
	}
	req.Header.Set("Authorization", "Bearer "+f.key)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("stripe: get event %s: %w", id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxEventBytes))
	if err != nil {
		return nil, fmt.Errorf("stripe: get event %s: read: %w", id, err)
	}
	switch code := resp.StatusCode; {
	case code == http.StatusOK && len(body) > 0:
		var got struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(body, &got); err != nil || got.ID != id {
			return nil, &fault.Permanent{Err: fmt.Errorf("stripe: get event %s: the answer is not that event (id %q)", id, got.ID)}
		}
		return body, nil
	case code == http.StatusOK:
		return nil, fmt.Errorf("stripe: get event %s: empty response", id)
	case code >= 400 && code < 500 && code != http.StatusTooManyRequests && code != http.StatusUnauthorized && code != http.StatusForbidden:
		// Stripe's error message names the problem, never the key.
		return nil, &fault.Permanent{Err: fmt.Errorf("stripe: get event %s: status %d: %s", id, code, stripeError(body))}
	default:
		return nil, fmt.Errorf("stripe: get event %s: status %d: %s", id, code, stripeError(body))
	}
}

// stripeError extracts error.message from a Stripe error body.
func stripeError(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" {
		return "no error message"
	}
	return e.Error.Message
}

// Package stripeapi reads events from Stripe's API with a per-instance
// stripe-go client (never the global stripe.Key), so two configurations can
// live in one process and tests can point it at a local server. It fetches
// one event (the processor, for events too large to store) and lists events
// page by page, as raw JSON (the reconciler), under a request-rate cap.
//
// The API key goes only to Stripe's API, or to a base that BaseURL allows
// (https, or plain http to a loopback stand-in): every caller, this
// package's Client and the processor's event fetcher in boot, goes through
// BaseURL.
package stripeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v81"
	"github.com/stripe/stripe-go/v81/client"
	"github.com/stripe/stripe-go/v81/event"

	"github.com/webhook-inbox/webhook-inbox/shared/egress"
	"github.com/webhook-inbox/webhook-inbox/shared/fault"
)

// Config configures a Client.
type Config struct {
	Key string
	// BaseURL overrides Stripe's API base (STRIPE_API_BASE), for tests and
	// the local stack; it must pass BaseURL.
	BaseURL string
	// MaxNetworkRetries bounds stripe-go's own retries, which back off on
	// 429 and 5xx. Zero means 2, stripe-go's default; a negative value
	// disables them (the caller retries, as the processor does through SQS).
	MaxNetworkRetries int64
	// RateLimit caps the requests per second this client sends, retries
	// included (Stripe allows 25 in test mode and 100 in live mode per
	// account). Zero means no cap.
	RateLimit  float64
	HTTPClient *http.Client
}

// Client reads events from Stripe through the events service of a
// per-instance stripe-go client (client.New on a backend of its own, never
// the global stripe.Key). The linker drops the services it does not use:
// the client costs the reconciler's package 0.02 MB over the events
// service alone.
type Client struct {
	Events *event.Client
}

// BaseURL returns the API base a key may be sent to: Stripe's own when base
// is empty, else base when it is https, or plain http to a loopback host
// (egress.Check). A key sent in plain text elsewhere (a stand-in left in a
// shell after local work, say) could be read on the way.
func BaseURL(base string) (string, error) {
	if base == "" {
		return stripe.APIURL, nil
	}
	if _, err := egress.Check(base); err != nil {
		return "", fmt.Errorf("stripeapi: API base: %w", err)
	}
	return strings.TrimRight(base, "/"), nil
}

// New returns a Client, or an error when cfg.BaseURL is refused (BaseURL).
// It makes no network call.
func New(cfg Config) (*Client, error) {
	base, err := BaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	bc := &stripe.BackendConfig{
		URL:               stripe.String(base),
		HTTPClient:        cfg.HTTPClient,
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(2),
	}
	switch {
	case cfg.MaxNetworkRetries > 0:
		bc.MaxNetworkRetries = stripe.Int64(cfg.MaxNetworkRetries)
	case cfg.MaxNetworkRetries < 0:
		bc.MaxNetworkRetries = stripe.Int64(0)
	}
	if bc.HTTPClient == nil {
		bc.HTTPClient = &http.Client{Timeout: 20 * time.Second}
	}
	if cfg.RateLimit > 0 {
		hc := *bc.HTTPClient
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		hc.Transport = &limitedTransport{base: base, limiter: newLimiter(cfg.RateLimit)}
		bc.HTTPClient = &hc
	}
	api := client.New(cfg.Key, &stripe.Backends{API: stripe.GetBackendWithConfig(stripe.APIBackend, bc)})
	return &Client{Events: api.Events}, nil
}

// Fetch returns the raw JSON of event id (GET /v1/events/{id}), exactly as
// Stripe serves it. Errors are classified by Classify; a response that is
// not the event asked for is permanent.
func (c *Client) Fetch(ctx context.Context, id string) ([]byte, error) {
	params := &stripe.EventParams{}
	params.Context = ctx
	ev, err := c.Events.Get(id, params)
	if err != nil {
		return nil, Classify(fmt.Errorf("stripeapi: get event %s: %w", id, err))
	}
	if ev.LastResponse == nil || len(ev.LastResponse.RawJSON) == 0 {
		return nil, fmt.Errorf("stripeapi: get event %s: empty response", id)
	}
	if ev.ID != id {
		return nil, &fault.Permanent{Err: fmt.Errorf("stripeapi: get event %s: response is event %q", id, ev.ID)}
	}
	return ev.LastResponse.RawJSON, nil
}

// Classify marks Stripe errors that retrying cannot fix as permanent: a 4xx
// about the request itself (400 bad request, 404 no such event: older than
// Stripe's 30-day retention, or of another account or mode). Rate limits
// (429), conflicts (409), timeouts (408) and 5xx are worth retrying, and so
// are 401 and 403: a revoked or under-privileged API key is fixed by an
// operator, after which the retried event must still be processable rather
// than stuck as failed_permanent.
func Classify(err error) error {
	var se *stripe.Error
	if !errors.As(err, &se) || se.HTTPStatusCode < 400 || se.HTTPStatusCode >= 500 {
		return err
	}
	switch se.HTTPStatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return err
	}
	return &fault.Permanent{Err: err}
}

// Package stripeapi reads events from Stripe's API with a per-instance
// stripe-go client (never the global stripe.Key), so two configurations can
// live in one process and tests can point it at a local server. It fetches
// one event (the processor, for events too large to store) and lists events
// page by page, as raw JSON (the reconciler), under a request-rate cap.
package stripeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v81"
	"github.com/stripe/stripe-go/v81/client"

	"github.com/webhook-inbox/webhook-inbox/shared/fault"
)

// Config configures a Client.
type Config struct {
	Key string
	// BaseURL overrides Stripe's API base (STRIPE_API_BASE), for tests and
	// the local stack.
	BaseURL string
	// MaxNetworkRetries bounds stripe-go's own retries, which back off on
	// 429 and 5xx. Defaults to 2, stripe-go's default.
	MaxNetworkRetries int64
	// RateLimit caps the requests per second this client sends, retries
	// included (Stripe allows 25 in test mode and 100 in live mode per
	// account). Zero means no cap.
	RateLimit  float64
	HTTPClient *http.Client
}

// Client reads events from Stripe.
type Client struct {
	API *client.API
}

// New returns a Client. It makes no network call.
func New(cfg Config) *Client {
	bc := &stripe.BackendConfig{
		HTTPClient:        cfg.HTTPClient,
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(2),
	}
	if cfg.MaxNetworkRetries > 0 {
		bc.MaxNetworkRetries = stripe.Int64(cfg.MaxNetworkRetries)
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
	if cfg.BaseURL != "" {
		bc.URL = stripe.String(cfg.BaseURL)
	}
	backends := &stripe.Backends{
		API:     stripe.GetBackendWithConfig(stripe.APIBackend, bc),
		Connect: stripe.GetBackendWithConfig(stripe.ConnectBackend, bc),
		Uploads: stripe.GetBackendWithConfig(stripe.UploadsBackend, bc),
	}
	return &Client{API: client.New(cfg.Key, backends)}
}

// Fetch returns the raw JSON of event id. A 4xx other than 429 is permanent.
func (c *Client) Fetch(ctx context.Context, id string) ([]byte, error) {
	params := &stripe.EventParams{}
	params.Context = ctx
	ev, err := c.API.Events.Get(id, params)
	if err != nil {
		return nil, Classify(fmt.Errorf("stripeapi: get event %s: %w", id, err))
	}
	if ev.LastResponse == nil || len(ev.LastResponse.RawJSON) == 0 {
		return nil, fmt.Errorf("stripeapi: get event %s: empty response", id)
	}
	return ev.LastResponse.RawJSON, nil
}

// Classify marks Stripe errors that retrying cannot fix (4xx other than 429)
// as permanent.
func Classify(err error) error {
	var se *stripe.Error
	if errors.As(err, &se) && se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500 && se.HTTPStatusCode != 429 {
		return &fault.Permanent{Err: err}
	}
	return err
}

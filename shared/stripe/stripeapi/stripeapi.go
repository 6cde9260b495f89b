// Package stripeapi is the project's one client of Stripe's API: every
// request to it goes through here, on stripe-go, with one classification
// of its errors (Classify). It fetches one event (the processor, for events
// too large to store) and lists events page by page, as raw JSON (the
// reconciler), under a request-rate cap.
//
// It also retrieves one object of a type the mirror keeps (Retrieve: the
// processor, to settle events of one object in the same second, and the
// audit), through that type's own service.
//
// It uses stripe-go's services one by one (event.Client, subscription.Client,
// ... on a backend of its own, never the global stripe.Key), not stripe-go's
// client package, which imports every resource package of the API: their
// package initialization would run in each function that links this one.
//
// The API key goes only to Stripe's API, or to a base that BaseURL allows
// (https, or plain http to a loopback stand-in), and never follows a
// redirect (egress.NoRedirect): the 3xx is the answer.
package stripeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v81"
	"github.com/stripe/stripe-go/v81/event"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/egress"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
)

// Config configures a Client.
type Config struct {
	// Key is the API key, when the caller has it in hand.
	Key string
	// KeyFunc, when set, is used instead of Key: it is called for every
	// request, so a key read on first need (secrets.Secret.Value) costs the
	// function's init nothing. Its error fails the request, retryably.
	KeyFunc func(context.Context) (string, error)
	// KeyRefused, when set, is called when Stripe answers 401 to a key:
	// it returns the key to use now, and whether it differs from the
	// refused one (secrets.Secret.Refresh: the key's parameter read again,
	// at most once a minute). With a new key, the request is made once
	// more, so a key rotated in Parameter Store takes effect within a
	// minute, without a redeploy.
	KeyRefused func(ctx context.Context, refused string) (string, bool, error)
	// BaseURL overrides Stripe's API base (STRIPE_API_BASE), for tests and
	// the local stack; it must pass BaseURL.
	BaseURL string
	// MaxNetworkRetries bounds stripe-go's own retries, which back off on
	// 409, 5xx and lock timeouts. Zero means 2, stripe-go's default; a
	// negative value disables them (the caller retries, as the processor
	// does through SQS with its own backoff).
	MaxNetworkRetries int64
	// RateLimit caps the requests per second this client sends, retries
	// included (Stripe allows 25 in test mode and 100 in live mode per
	// account). Zero means no cap.
	RateLimit float64
	// MaxResponseBytes bounds the body of one response; a larger one fails
	// its request permanently (ErrTooLarge). Zero means no bound.
	MaxResponseBytes int64
	HTTPClient       *http.Client
}

// ErrTooLarge is the error of a response over Config.MaxResponseBytes.
var ErrTooLarge = errors.New("stripeapi: response over the size limit")

// Client reads events from Stripe's API.
type Client struct {
	backend stripe.Backend
	key     func(context.Context) (string, error)
	refused func(context.Context, string) (string, bool, error)
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
// It makes no network call and reads no key.
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
	// A copy, so the caller's client is left as it was: stripe-go adds
	// the key in every request it makes, and a redirect followed would
	// carry it to whatever host the Location names (egress.NoRedirect).
	nr := *bc.HTTPClient
	nr.CheckRedirect = egress.NoRedirect
	bc.HTTPClient = &nr
	if cfg.RateLimit > 0 || cfg.MaxResponseBytes > 0 {
		hc := *bc.HTTPClient
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		if cfg.MaxResponseBytes > 0 {
			rt = &boundedTransport{base: rt, max: cfg.MaxResponseBytes}
		}
		if cfg.RateLimit > 0 {
			rt = &limitedTransport{base: rt, limiter: newLimiter(cfg.RateLimit)}
		}
		hc.Transport = rt
		bc.HTTPClient = &hc
	}
	key := cfg.KeyFunc
	if key == nil {
		k := cfg.Key
		key = func(context.Context) (string, error) { return k, nil }
	}
	return &Client{backend: stripe.GetBackendWithConfig(stripe.APIBackend, bc), key: key, refused: cfg.KeyRefused}, nil
}

// events returns the events service with the API key.
func (c *Client) events(ctx context.Context) (event.Client, error) {
	key, err := c.key(ctx)
	if err != nil {
		return event.Client{}, fmt.Errorf("stripeapi: API key: %w", err)
	}
	return event.Client{B: c.backend, Key: key}, nil
}

// Unauthorized reports whether err is Stripe's 401: the API key is
// unknown, revoked or expired.
func Unauthorized(err error) bool {
	var se *stripe.Error
	return errors.As(err, &se) && se.HTTPStatusCode == http.StatusUnauthorized
}

// retryWithNewKey reports whether a request that failed with err should
// be made once more with svc's key replaced: err is a 401, and
// Config.KeyRefused has a key other than the refused one. It replaces the
// key in svc.
func (c *Client) retryWithNewKey(ctx context.Context, err error, svc *event.Client) bool {
	if c.refused == nil || !Unauthorized(err) {
		return false
	}
	key, changed, rerr := c.refused(ctx, svc.Key)
	if rerr != nil || !changed || key == "" {
		return false
	}
	svc.Key = key
	return true
}

// Fetch returns the raw JSON of event id (GET /v1/events/{id}), exactly as
// Stripe serves it. Errors are classified by Classify; a response that is
// not the event asked for is permanent.
func (c *Client) Fetch(ctx context.Context, id string) ([]byte, error) {
	events, err := c.events(ctx)
	if err != nil {
		return nil, fmt.Errorf("stripeapi: get event %s: %w", id, err)
	}
	params := &stripe.EventParams{}
	params.Context = ctx
	ev, err := events.Get(id, params)
	if err != nil && c.retryWithNewKey(ctx, err, &events) {
		ev, err = events.Get(id, params)
	}
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

// Classify is the one rule for which of Stripe's errors are worth
// retrying; it marks the others permanent (*fault.Permanent).
//
// Permanent: a 4xx about the request itself, which the same request cannot
// cure: 400 bad request, 404 no such event (older than Stripe's 30-day
// retention, or of another account or mode), and a response over the size
// limit (ErrTooLarge).
//
// Retried:
//   - 409 Conflict: Stripe answers it when a request conflicts with another
//     one running concurrently (an idempotency key in use, a lock); Stripe's
//     docs say no result was saved and the request is safe to retry, and
//     stripe-go retries 409 itself.
//   - 408 Request Timeout: the request was not received in time (a proxy or
//     load balancer on the way); nothing ran, so repeating it is safe.
//   - 429: rate limits and lock timeouts pass with time.
//   - 5xx and network errors: Stripe's side or the way there.
//   - 401 and 403: a revoked or under-privileged API key is fixed by an
//     operator, after which the retried event must still be processable
//     rather than stuck as failed_permanent, which nothing claims again.
func Classify(err error) error {
	if errors.Is(err, ErrTooLarge) {
		return &fault.Permanent{Err: err}
	}
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

// boundedTransport fails a response whose body runs past max bytes:
// stripe-go reads a body whole into memory.
type boundedTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, resp.ContentLength, t.max)
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.max}
	return resp, nil
}

type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: more than the limit", ErrTooLarge)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("%w: more than the limit", ErrTooLarge)
	}
	return n, err
}

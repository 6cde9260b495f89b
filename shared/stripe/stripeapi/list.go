package stripeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v81"
	stripeevent "github.com/stripe/stripe-go/v81/event"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
)

// Limits of Stripe's list API.
const (
	// PageLimit is the most events one list request returns.
	PageLimit = 100
	// MaxTypes is the most types one list request may filter on.
	MaxTypes = 20
)

// EventQuery selects the events to list.
type EventQuery struct {
	// CreatedGTE and CreatedLTE bound the events' creation time (Unix
	// seconds, inclusive); zero leaves a side open.
	CreatedGTE, CreatedLTE int64
	// Types filters on event types: at most MaxTypes, none for every type.
	Types []string
	// StartingAfter resumes a listing after this event id (older events).
	StartingAfter string
	// Account, when set, lists that connected account's events (Stripe
	// Connect) with the platform's key: stripe-go's per-request account,
	// the Stripe-Account header. Empty lists the platform's own.
	Account string
}

// Page is one page of a listing, as Stripe sent it.
type Page struct {
	// Events holds the raw JSON of each event, newest first, exactly as the
	// page carried it: the bytes are never decoded into a stripe.Event and
	// encoded again.
	Events []json.RawMessage
	// HasMore says whether older events match the query.
	HasMore bool
}

// ListEvents lists the events matching q, newest first, PageLimit per
// request, with stripe-go's auto-pagination. It calls page once for each page
// received, in order, even for an empty first page. When page returns false
// or an error, ListEvents stops without requesting another page; otherwise
// it stops after the last page. It returns page's error, or the API's.
func (c *Client) ListEvents(ctx context.Context, q EventQuery, page func(Page) (bool, error)) error {
	if len(q.Types) > MaxTypes {
		return fmt.Errorf("stripeapi: list events: %d types, at most %d per request", len(q.Types), MaxTypes)
	}
	params := &stripe.EventListParams{}
	params.Context = ctx
	params.Limit = stripe.Int64(PageLimit)
	if q.CreatedGTE != 0 || q.CreatedLTE != 0 {
		params.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: q.CreatedGTE, LesserThanOrEqual: q.CreatedLTE}
	}
	if len(q.Types) > 0 {
		params.Types = stripe.StringSlice(q.Types)
	}
	if q.StartingAfter != "" {
		params.StartingAfter = stripe.String(q.StartingAfter)
	}
	if q.Account != "" {
		params.SetStripeAccount(q.Account)
	}
	events, err := c.events(ctx)
	if err != nil {
		return fmt.Errorf("stripeapi: list events: %w", err)
	}
	handed, err := c.list(events, params, page)
	// A key refused before any page was handed over (a rotation) is
	// replaced and the listing made again. One refused halfway (revoked
	// meanwhile) fails the listing rather than hand pages over twice: the
	// caller resumes from the pages it has, and its next listing meets
	// the 401 on its first request.
	if err != nil && handed == 0 && c.retryWithNewKey(ctx, err, &events) {
		_, err = c.list(events, params, page)
	}
	return err
}

// list runs one listing with svc's key (see ListEvents), and says how
// many pages it handed over.
func (c *Client) list(svc stripeevent.Client, params *stripe.EventListParams, page func(Page) (bool, error)) (handed int, err error) {
	it := svc.List(params)
	// The iterator requests the next page only when Next is called past the
	// last event of the current one, so a page is handed over whole, from
	// the response's raw JSON, the first time one of its events comes up.
	var current *stripe.EventList
	deliver := func(l *stripe.EventList) (bool, error) {
		current = l
		p, err := decodePage(l)
		if err != nil {
			return false, err
		}
		handed++
		return page(p)
	}
	for it.Next() {
		l := it.EventList()
		if l == current {
			continue
		}
		more, err := deliver(l)
		if err != nil || !more {
			return handed, err
		}
	}
	if err := it.Err(); err != nil {
		return handed, fmt.Errorf("stripeapi: list events: %w", err)
	}
	// An empty first page has no event to come up in Next.
	if l := it.EventList(); l != current && l != nil && l.LastResponse != nil {
		_, err := deliver(l)
		return handed, err
	}
	return handed, nil
}

func decodePage(l *stripe.EventList) (Page, error) {
	if l.LastResponse == nil || len(l.LastResponse.RawJSON) == 0 {
		return Page{}, errors.New("stripeapi: list events: page without a body")
	}
	var raw struct {
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
	}
	if err := json.Unmarshal(l.LastResponse.RawJSON, &raw); err != nil {
		return Page{}, fmt.Errorf("stripeapi: list events: decode page: %w", err)
	}
	return Page{Events: raw.Data, HasMore: raw.HasMore}, nil
}

// RateLimited reports whether err is Stripe's 429 "too many requests".
// stripe-go v81 retries a 429 only when Stripe flags it as a lock timeout or
// safe to retry, so a rate-limited caller must back off itself.
func RateLimited(err error) bool {
	var se *stripe.Error
	return errors.As(err, &se) && se.HTTPStatusCode == http.StatusTooManyRequests
}

// limiter spaces requests evenly at a rate: a caller waits for the next free
// slot. Even spacing rather than bursts keeps well inside Stripe's per-second
// limit whatever the window Stripe measures it on.
type limiter struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time
}

func newLimiter(perSecond float64) *limiter {
	return &limiter{interval: time.Duration(float64(time.Second) / perSecond)}
}

func (l *limiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	slot := l.next
	if slot.Before(now) {
		slot = now
	}
	l.next = slot.Add(l.interval)
	l.mu.Unlock()
	d := slot.Sub(now)
	if d <= 0 {
		return nil
	}
	return pause.For(ctx, d)
}

// limitedTransport makes every HTTP attempt, stripe-go's retries included,
// wait for the limiter.
type limitedTransport struct {
	base    http.RoundTripper
	limiter *limiter
}

func (t *limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.limiter.wait(r.Context()); err != nil {
		return nil, err
	}
	return t.base.RoundTrip(r)
}

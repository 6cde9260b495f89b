package githubapi

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-github/v75/github"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/egress"
)

// Retention is how long GitHub keeps a hook's deliveries: it neither
// lists nor redelivers older ones.
const Retention = 72 * time.Hour

// PageLimit is the most deliveries one list request returns.
const PageLimit = 100

// DefaultRateLimitWait is how long to wait after a rate-limit answer that
// says nothing of when to try again: GitHub's docs ask for at least a
// minute.
const DefaultRateLimitWait = time.Minute

// Config configures a Client.
type Config struct {
	// Token returns the token for repository and organization hooks; it is
	// called for each such request (secrets.Secret.Value reads it once).
	Token func(context.Context) (string, error)
	// AppKey returns a GitHub App's private key (PEM), which signs the JWT
	// an App's own hook is read with; called for each such request.
	AppKey func(context.Context) (string, error)
	// BaseURL overrides GitHub's API base (GITHUB_API_BASE), for GitHub
	// Enterprise Server, tests and the local stack; it must pass
	// egress.Check.
	BaseURL    string
	HTTPClient *http.Client
	// Now is the clock JWTs and rate-limit waits are computed with.
	Now func() time.Time
}

// Client lists and redelivers webhook deliveries.
type Client struct {
	gh  *github.Client
	now func() time.Time
}

// Delivery is one attempt GitHub made to deliver a webhook.
type Delivery struct {
	// ID identifies this attempt; Redeliver takes it.
	ID int64
	// GUID is the X-GitHub-Delivery header of the webhook: the same for
	// every attempt at one event, and the id the receiver stores it under.
	GUID        string
	DeliveredAt time.Time
	// Redelivery is true for an attempt asked for after the first.
	Redelivery bool
	// StatusCode is the receiver's answer; 0 when none came (a timeout, a
	// refused connection).
	StatusCode int
	Event      string
	Action     string
}

// OK reports whether the receiver acknowledged the attempt (2xx).
func (d Delivery) OK() bool { return d.StatusCode >= 200 && d.StatusCode <= 299 }

// Page is one page of a hook's deliveries, newest first.
type Page struct {
	Deliveries []Delivery
	// Next is the cursor of the following (older) page; "" on the last.
	Next string
}

// New returns a Client, or an error when cfg.BaseURL is refused. It makes
// no network call and reads no secret.
func New(cfg Config) (*Client, error) {
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 20 * time.Second}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// The transport adds the credential to every request the client sends,
	// a redirect's too: so none is followed (a 3xx is GitHub's answer, a
	// *github.RedirectionError), and the credential goes to the API base's
	// scheme and host only.
	c.CheckRedirect = egress.NoRedirect
	auth := &authTransport{base: base, token: cfg.Token, appKey: cfg.AppKey, now: now}
	c.Transport = auth
	gh := github.NewClient(&c)
	if cfg.BaseURL != "" {
		u, err := egress.Check(cfg.BaseURL)
		if err != nil {
			return nil, fmt.Errorf("githubapi: API base: %w", err)
		}
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
		}
		gh.BaseURL = u
	}
	auth.scheme, auth.host = strings.ToLower(gh.BaseURL.Scheme), strings.ToLower(gh.BaseURL.Host)
	return &Client{gh: gh, now: now}, nil
}

type appIDKey struct{}

// Deliveries lists one page of h's deliveries, newest first, from cursor
// ("" for the newest).
func (c *Client) Deliveries(ctx context.Context, h Hook, cursor string) (Page, error) {
	opts := &github.ListCursorOptions{PerPage: PageLimit, Cursor: cursor}
	var (
		ds   []*github.HookDelivery
		resp *github.Response
		err  error
	)
	switch h.Kind {
	case KindRepo:
		ds, resp, err = c.gh.Repositories.ListHookDeliveries(ctx, h.Owner, h.Repo, h.ID, opts)
	case KindOrg:
		ds, resp, err = c.gh.Organizations.ListHookDeliveries(ctx, h.Owner, h.ID, opts)
	case KindApp:
		ds, resp, err = c.gh.Apps.ListHookDeliveries(context.WithValue(ctx, appIDKey{}, h.ID), opts)
	default:
		return Page{}, fmt.Errorf("githubapi: list deliveries of %s: unknown kind", h)
	}
	if err != nil {
		return Page{}, c.classify(fmt.Errorf("githubapi: list deliveries of %s: %w", h, err))
	}
	p := Page{Deliveries: make([]Delivery, 0, len(ds))}
	if resp != nil {
		p.Next = resp.Cursor
	}
	for _, d := range ds {
		p.Deliveries = append(p.Deliveries, Delivery{
			ID: d.GetID(), GUID: d.GetGUID(), DeliveredAt: d.GetDeliveredAt().Time,
			Redelivery: d.GetRedelivery(), StatusCode: d.GetStatusCode(),
			Event: d.GetEvent(), Action: d.GetAction(),
		})
	}
	return p, nil
}

// ErrNotRedeliverable is the error of a redelivery GitHub refuses for the
// delivery itself (404: older than Retention or unknown; 422): asking
// again cannot help.
var ErrNotRedeliverable = errors.New("githubapi: delivery cannot be redelivered")

// Redeliver asks GitHub to deliver attempt id of h again; GitHub answers
// at once (202) and sends the webhook, signed, a moment later.
func (c *Client) Redeliver(ctx context.Context, h Hook, id int64) error {
	var err error
	switch h.Kind {
	case KindRepo:
		_, _, err = c.gh.Repositories.RedeliverHookDelivery(ctx, h.Owner, h.Repo, h.ID, id)
	case KindOrg:
		_, _, err = c.gh.Organizations.RedeliverHookDelivery(ctx, h.Owner, h.ID, id)
	case KindApp:
		_, _, err = c.gh.Apps.RedeliverHookDelivery(context.WithValue(ctx, appIDKey{}, h.ID), id)
	default:
		return fmt.Errorf("githubapi: redeliver %d of %s: unknown kind", id, h)
	}
	// 202 Accepted is GitHub's answer: the attempt is queued.
	if _, ok := errors.AsType[*github.AcceptedError](err); ok || err == nil {
		return nil
	}
	if er, ok := errors.AsType[*github.ErrorResponse](err); ok && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity:
			return fmt.Errorf("githubapi: redeliver %d of %s: %w (%d %s)", id, h, ErrNotRedeliverable, er.Response.StatusCode, er.Message)
		}
	}
	return c.classify(fmt.Errorf("githubapi: redeliver %d of %s: %w", id, h, err))
}

// ErrNotAPIHost is the error of a request to a host other than the API
// base's, which is sent nowhere: the credential is for the API alone.
var ErrNotAPIHost = errors.New("githubapi: not the API base's host, credential withheld")

// RateLimitError is the error of a request GitHub refused for a rate
// limit, primary or secondary, 403 or 429 (or that go-github did not send,
// knowing the primary limit spent).
type RateLimitError struct {
	// Status is GitHub's answer: 403 or 429.
	Status int
	// Until is when GitHub says requests may resume: x-ratelimit-reset,
	// or now plus retry-after, or plus DefaultRateLimitWait when it says
	// neither.
	Until time.Time
	Err   error
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%v (rate limited, %d, until %s)", e.Err, e.Status, e.Until.UTC().Format(time.RFC3339))
}

func (e *RateLimitError) Unwrap() error { return e.Err }

// RateLimited returns the rate-limit error in err's chain, if any.
func RateLimited(err error) (*RateLimitError, bool) {
	return errors.AsType[*RateLimitError](err)
}

// classify wraps a rate-limit answer in a *RateLimitError.
func (c *Client) classify(err error) error {
	now := c.now()
	if rl, ok := errors.AsType[*github.RateLimitError](err); ok {
		status := http.StatusForbidden
		if rl.Response != nil {
			status = rl.Response.StatusCode
		}
		until := rl.Rate.Reset.Time
		if until.IsZero() {
			until = now.Add(DefaultRateLimitWait)
		}
		return &RateLimitError{Status: status, Until: until, Err: err}
	}
	if ab, ok := errors.AsType[*github.AbuseRateLimitError](err); ok {
		wait := DefaultRateLimitWait
		if ab.RetryAfter != nil {
			wait = *ab.RetryAfter
		}
		status := http.StatusForbidden
		if ab.Response != nil {
			status = ab.Response.StatusCode
		}
		return &RateLimitError{Status: status, Until: now.Add(wait), Err: err}
	}
	er, ok := errors.AsType[*github.ErrorResponse](err)
	if !ok || er.Response == nil {
		return err
	}
	status, hdr := er.Response.StatusCode, er.Response.Header
	if status != http.StatusTooManyRequests && status != http.StatusForbidden {
		return err
	}
	if s := hdr.Get("Retry-After"); s != "" {
		if secs, perr := strconv.Atoi(s); perr == nil && secs >= 0 {
			return &RateLimitError{Status: status, Until: now.Add(time.Duration(secs) * time.Second), Err: err}
		}
	}
	if hdr.Get("X-RateLimit-Remaining") == "0" {
		if reset, perr := strconv.ParseInt(hdr.Get("X-RateLimit-Reset"), 10, 64); perr == nil {
			return &RateLimitError{Status: status, Until: time.Unix(reset, 0), Err: err}
		}
	}
	// A 429 is a rate limit whatever its headers; a 403 without them is a
	// token without the permission.
	if status == http.StatusTooManyRequests {
		return &RateLimitError{Status: status, Until: now.Add(DefaultRateLimitWait), Err: err}
	}
	return err
}

// authTransport authenticates each request to the API base's scheme and
// host (and refuses any other): with the App's JWT when the request's
// context names an App, with the token otherwise.
type authTransport struct {
	base http.RoundTripper
	// scheme and host are the API base's, lower case, host with its port.
	scheme, host string
	token        func(context.Context) (string, error)
	appKey       func(context.Context) (string, error)
	now          func() time.Time

	mu     sync.Mutex
	pem    string
	parsed *rsa.PrivateKey
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.EqualFold(r.URL.Scheme, t.scheme) || !strings.EqualFold(r.URL.Host, t.host) {
		return nil, fmt.Errorf("githubapi: %s to host %s: %w", r.Method, r.URL.Host, ErrNotAPIHost)
	}
	var (
		cred string
		err  error
	)
	if appID, ok := r.Context().Value(appIDKey{}).(int64); ok {
		cred, err = t.appJWT(r.Context(), appID)
	} else if t.token != nil {
		cred, err = t.token(r.Context())
		if err == nil && cred == "" {
			err = errors.New("empty token")
		}
	} else {
		err = errors.New("no token configured for repository and organization hooks")
	}
	if err != nil {
		return nil, fmt.Errorf("githubapi: credentials: %w", err)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+cred)
	return t.base.RoundTrip(r)
}

// appJWT mints the JWT a GitHub App authenticates as itself with: issued a
// minute in the past against clock drift, as GitHub advises, and expiring
// within GitHub's 10-minute limit.
func (t *authTransport) appJWT(ctx context.Context, appID int64) (string, error) {
	if t.appKey == nil {
		return "", errors.New("no private key configured for GitHub App hooks")
	}
	pem, err := t.appKey(ctx)
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	key := t.parsed
	if key == nil || pem != t.pem {
		key, err = jwt.ParseRSAPrivateKeyFromPEM([]byte(pem))
		if err != nil {
			t.mu.Unlock()
			// jwt's error does not quote the key.
			return "", fmt.Errorf("app private key: %w", err)
		}
		t.pem, t.parsed = pem, key
	}
	t.mu.Unlock()
	now := t.now()
	claims := jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(appID, 10),
		IssuedAt:  jwt.NewNumericDate(now.Add(-time.Minute)),
		ExpiresAt: jwt.NewNumericDate(now.Add(9 * time.Minute)),
	}
	return jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(key)
}

// Package githubfake is a stateful stand-in for GitHub's webhook
// deliveries API, for tests and the local stack: the deliveries of
// repository, organization and GitHub App hooks, listed and redelivered as
// GitHub does.
//
//   - GET /repos/{owner}/{repo}/hooks/{id}/deliveries,
//     GET /orgs/{org}/hooks/{id}/deliveries and GET /app/hook/deliveries:
//     newest first (by delivery time, then id), per_page (1 to 100, default 30), an opaque cursor in
//     the Link header (rel="next"), and only the deliveries of the last
//     three days (GitHub keeps no more);
//   - POST .../deliveries/{delivery_id}/attempts: 202, and a new delivery
//     with the same guid and redelivery=true, which the server signs
//     (X-Hub-Signature-256) and POSTs to Target when one is set, recording
//     the answer's status code like GitHub; 404 for a delivery it does not
//     keep;
//   - authentication: a Bearer token for repository and organization
//     hooks, a JWT signed RS256 by the App's key (iss = the App's id) for
//     the App's hook; 401 otherwise;
//   - injected rate limits: 403 or 429 with GitHub's headers
//     (x-ratelimit-remaining: 0 and x-ratelimit-reset, or retry-after).
//
// Every API request is logged, so a test can count calls.
package githubfake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Retention is how long deliveries are kept and listed.
const Retention = 72 * time.Hour

// Config configures a Server.
type Config struct {
	// Token is the token repository and organization hooks accept.
	Token string
	// AppID and AppKey are the GitHub App whose hook is /app/hook: its
	// JWTs must be signed by AppKey and issued by AppID.
	AppID  int64
	AppKey *rsa.PublicKey
	// Secret signs the webhooks the server sends (X-Hub-Signature-256).
	Secret string
	// Target is where deliveries are POSTed (the gateway's
	// /webhooks/github); empty: nothing is sent and a redelivery gets
	// RedeliveryStatus.
	Target string
	// RedeliveryStatus is the status code a redelivery records when there
	// is no Target; 0 means 200.
	RedeliveryStatus int
	// Now is the server's clock; time.Now when nil.
	Now func() time.Time
}

// Delivery is one attempt at delivering a webhook.
type Delivery struct {
	ID          int64     `json:"id"`
	GUID        string    `json:"guid"`
	DeliveredAt time.Time `json:"delivered_at"`
	Redelivery  bool      `json:"redelivery"`
	Duration    float64   `json:"duration"`
	Status      string    `json:"status"`
	StatusCode  int       `json:"status_code"`
	Event       string    `json:"event"`
	Action      string    `json:"action,omitempty"`
	// Payload is the webhook's body, sent again on a redelivery.
	Payload []byte `json:"-"`
	hook    string
}

// Request is one API request the server answered.
type Request struct {
	Method, Path, Cursor string
	Status               int
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the API base to give the client (GITHUB_API_BASE).
	URL string

	cfg  Config
	srv  *httptest.Server
	http *http.Client

	mu         sync.Mutex
	hooks      map[string]bool
	deliveries []*Delivery // oldest first; ids ascending
	nextID     int64
	requests   []Request
	throttles  []throttle
	sending    sync.WaitGroup
}

type throttle struct {
	status int
	wait   time.Duration
	// secondary: retry-after instead of x-ratelimit-remaining/reset.
	secondary bool
	// method, when set, is the only method answered so (POST: the
	// redeliveries).
	method string
}

// Hook paths, as the API names them.
func RepoHook(owner, repo string, id int64) string {
	return fmt.Sprintf("repos/%s/%s/hooks/%d", owner, repo, id)
}

// OrgHook is an organization hook's path.
func OrgHook(org string, id int64) string { return fmt.Sprintf("orgs/%s/hooks/%d", org, id) }

// AppHook is the GitHub App's hook's path.
const AppHook = "app/hook"

// Start starts a Server; Close stops it.
func Start(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, hooks: map[string]bool{}, nextID: 1000, http: &http.Client{Timeout: 15 * time.Second}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close waits for the redeliveries under way, then stops the server.
func (s *Server) Close() {
	s.sending.Wait()
	s.srv.Close()
}

// Flush waits until every redelivery asked for so far is sent and
// recorded.
func (s *Server) Flush() { s.sending.Wait() }

// AddHook makes a hook known (see RepoHook, OrgHook, AppHook).
func (s *Server) AddHook(hook string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[hook] = true
}

// Record adds an attempt GitHub made, as it happened (its status code
// given), without sending anything; d.ID is assigned, d.DeliveredAt is now
// when zero. It returns the delivery as stored.
func (s *Server) Record(hook string, d Delivery) Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks[hook] = true
	return *s.add(hook, d)
}

func (s *Server) add(hook string, d Delivery) *Delivery {
	s.nextID++
	d.ID, d.hook = s.nextID, hook
	if d.DeliveredAt.IsZero() {
		d.DeliveredAt = s.cfg.Now()
	}
	d.DeliveredAt = d.DeliveredAt.UTC().Truncate(time.Second)
	if d.Status == "" {
		d.Status = statusText(d.StatusCode)
	}
	s.deliveries = append(s.deliveries, &d)
	return &d
}

func statusText(code int) string {
	switch {
	case code >= 200 && code <= 299:
		return "OK"
	case code == 0:
		return "failed to connect to host"
	default:
		return "Invalid HTTP Response: " + strconv.Itoa(code)
	}
}

// Send delivers a webhook the way GitHub does, to Target, and records the
// attempt with the answer's status code (0 when none came).
func (s *Server) Send(ctx context.Context, hook, guid, event, action string, payload []byte) Delivery {
	code := s.post(ctx, hook, guid, event, payload)
	return s.Record(hook, Delivery{GUID: guid, Event: event, Action: action, Payload: payload, StatusCode: code})
}

// post sends one attempt to Target, signed, and returns its status code.
func (s *Server) post(ctx context.Context, hook, guid, event string, payload []byte) int {
	target := s.cfg.Target
	if target == "" {
		if s.cfg.RedeliveryStatus != 0 {
			return s.cfg.RedeliveryStatus
		}
		return http.StatusOK
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/githubfake")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", guid)
	req.Header.Set("X-GitHub-Hook-ID", hook[strings.LastIndexByte(hook, '/')+1:])
	req.Header.Set("X-Hub-Signature-256", Sign(s.cfg.Secret, payload))
	resp, err := s.http.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Sign returns the X-Hub-Signature-256 of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Deliveries returns every attempt kept for hook, oldest first, whatever
// its age.
func (s *Server) Deliveries(hook string) []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Delivery
	for _, d := range s.deliveries {
		if d.hook == hook {
			out = append(out, *d)
		}
	}
	return out
}

// Requests returns the API requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// RateLimit answers the next n API requests with a primary rate limit:
// status (403 or 429), x-ratelimit-remaining: 0 and x-ratelimit-reset wait
// from now.
func (s *Server) RateLimit(n, status int, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.throttles = append(s.throttles, throttle{status: status, wait: wait})
	}
}

// RateLimitRedeliveries answers the next n redelivery requests (and only
// those) with a primary rate limit, as RateLimit.
func (s *Server) RateLimitRedeliveries(n, status int, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.throttles = append(s.throttles, throttle{status: status, wait: wait, method: http.MethodPost})
	}
}

// SecondaryRateLimit answers the next n API requests with a secondary rate
// limit: status (403 or 429) and retry-after.
func (s *Server) SecondaryRateLimit(n, status int, wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.throttles = append(s.throttles, throttle{status: status, wait: wait, secondary: true})
	}
}

var (
	listPath    = regexp.MustCompile(`^/((?:repos/[^/]+/[^/]+/hooks/[0-9]+)|(?:orgs/[^/]+/hooks/[0-9]+)|app/hook)/deliveries$`)
	attemptPath = regexp.MustCompile(`^/((?:repos/[^/]+/[^/]+/hooks/[0-9]+)|(?:orgs/[^/]+/hooks/[0-9]+)|app/hook)/deliveries/([0-9]+)/attempts$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	status := s.handle(w, r)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Cursor: r.URL.Query().Get("cursor"), Status: status})
	s.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
	return status
}

func message(w http.ResponseWriter, status int, msg string) int {
	return writeJSON(w, status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) int {
	var hook string
	var attempt int64
	switch {
	case r.Method == http.MethodGet && listPath.MatchString(r.URL.Path):
		hook = listPath.FindStringSubmatch(r.URL.Path)[1]
	case r.Method == http.MethodPost && attemptPath.MatchString(r.URL.Path):
		m := attemptPath.FindStringSubmatch(r.URL.Path)
		hook = m[1]
		attempt, _ = strconv.ParseInt(m[2], 10, 64)
	default:
		return message(w, http.StatusNotFound, "Not Found")
	}
	if !s.authorized(r, hook) {
		return message(w, http.StatusUnauthorized, "Bad credentials")
	}
	if st, ok := s.throttled(w, r.Method); ok {
		return st
	}
	s.mu.Lock()
	known := s.hooks[hook]
	s.mu.Unlock()
	if !known {
		return message(w, http.StatusNotFound, "Not Found")
	}
	if r.Method == http.MethodGet {
		return s.list(w, r, hook)
	}
	return s.redeliver(w, r, hook, attempt)
}

func (s *Server) authorized(r *http.Request, hook string) bool {
	cred, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	if hook != AppHook {
		return s.cfg.Token != "" && hmac.Equal([]byte(cred), []byte(s.cfg.Token))
	}
	if s.cfg.AppKey == nil {
		return false
	}
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(cred, claims, func(*jwt.Token) (any, error) { return s.cfg.AppKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(s.cfg.Now), jwt.WithIssuer(strconv.FormatInt(s.cfg.AppID, 10)))
	if err != nil {
		return false
	}
	// GitHub refuses an App's JWT that lives longer than 10 minutes.
	return claims.ExpiresAt != nil && claims.IssuedAt != nil && claims.ExpiresAt.Sub(claims.IssuedAt.Time) <= 11*time.Minute
}

func (s *Server) throttled(w http.ResponseWriter, method string) (int, bool) {
	s.mu.Lock()
	i := slices.IndexFunc(s.throttles, func(t throttle) bool { return t.method == "" || t.method == method })
	if i < 0 {
		s.mu.Unlock()
		return 0, false
	}
	t := s.throttles[i]
	s.throttles = slices.Delete(s.throttles, i, i+1)
	s.mu.Unlock()
	h := w.Header()
	if t.secondary {
		h.Set("Retry-After", strconv.Itoa(int(t.wait/time.Second)))
		return writeJSON(w, t.status, map[string]string{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		}), true
	}
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Used", "5000")
	h.Set("X-RateLimit-Resource", "core")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.cfg.Now().Add(t.wait).Unix(), 10))
	return writeJSON(w, t.status, map[string]string{
		"message":           "API rate limit exceeded for user ID 1.",
		"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
	}), true
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, hook string) int {
	q := r.URL.Query()
	per := 30
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return message(w, http.StatusUnprocessableEntity, "Invalid per_page")
		}
		per = min(n, 100)
	}
	// The cursor names the last delivery of the page before: the listing
	// goes on after it, in the listing's order.
	var after *Delivery
	if c := q.Get("cursor"); c != "" {
		v, ok := strings.CutPrefix(c, "v1_")
		at, id, ok2 := strings.Cut(v, "_")
		nano, err1 := strconv.ParseInt(at, 10, 64)
		n, err2 := strconv.ParseInt(id, 10, 64)
		if !ok || !ok2 || err1 != nil || err2 != nil {
			return message(w, http.StatusBadRequest, "Invalid cursor")
		}
		after = &Delivery{ID: n, DeliveredAt: time.Unix(0, nano)}
	}
	floor := s.cfg.Now().Add(-Retention)
	s.mu.Lock()
	all := slices.Clone(s.deliveries)
	s.mu.Unlock()
	slices.SortStableFunc(all, func(a, b *Delivery) int { return newer(b, a) })
	var page []Delivery
	more := false
	for _, d := range all {
		if d.hook != hook || (after != nil && newer(d, after) >= 0) || d.DeliveredAt.Before(floor) {
			continue
		}
		if len(page) == per {
			more = true
			break
		}
		page = append(page, *d)
	}
	if more {
		next := *r.URL
		nq := next.Query()
		nq.Set("per_page", strconv.Itoa(per))
		last := page[len(page)-1]
		nq.Set("cursor", fmt.Sprintf("v1_%d_%d", last.DeliveredAt.UnixNano(), last.ID))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, next.RequestURI()))
	}
	if page == nil {
		page = []Delivery{}
	}
	return writeJSON(w, http.StatusOK, page)
}

// newer compares a and b in time, then id: positive when a is newer.
func newer(a, b *Delivery) int {
	if c := a.DeliveredAt.Compare(b.DeliveredAt); c != 0 {
		return c
	}
	switch {
	case a.ID > b.ID:
		return 1
	case a.ID < b.ID:
		return -1
	}
	return 0
}

func (s *Server) redeliver(w http.ResponseWriter, r *http.Request, hook string, id int64) int {
	floor := s.cfg.Now().Add(-Retention)
	s.mu.Lock()
	var orig *Delivery
	for _, d := range s.deliveries {
		if d.ID == id && d.hook == hook && !d.DeliveredAt.Before(floor) {
			orig = d
		}
	}
	s.mu.Unlock()
	if orig == nil {
		return message(w, http.StatusNotFound, "Not Found")
	}
	o := *orig
	// GitHub answers at once and delivers a moment later; the fake delivers
	// after answering, so the client's request is never held by the target.
	s.sending.Add(1)
	go func() {
		defer s.sending.Done()
		code := s.post(context.Background(), hook, o.GUID, o.Event, o.Payload)
		s.mu.Lock()
		s.add(hook, Delivery{GUID: o.GUID, Event: o.Event, Action: o.Action, Payload: o.Payload, Redelivery: true, StatusCode: code})
		s.mu.Unlock()
	}()
	return writeJSON(w, http.StatusAccepted, map[string]any{})
}

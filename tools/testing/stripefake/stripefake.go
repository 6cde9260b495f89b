// Package stripefake is a stateful stand-in for Stripe's Events API, for
// tests and the local stack: GET /v1/events with the filters, cursors and
// ordering Stripe applies, and GET /v1/events/{id}; GET /v2/core/events/{id}
// for thin events (AddV2, per account by the Stripe-Context header); GET
// /v1/accounts, the platform's connected accounts (AddAccount); the
// mirror's objects by their retrieve paths (PutObject, per account by
// Stripe-Account), which thin events' related_object.url name.
//
// stripe-mock cannot serve reconciliation tests: it answers every list with
// one fixed event and ignores filters and cursors. This server keeps the
// events it is given and answers like Stripe does:
//
//   - newest first (created descending; among events of the same second, the
//     one added later first, as Stripe's ids are ordered);
//   - created, created[gt], created[gte], created[lt], created[lte];
//   - types[] (as stripe-go encodes it, types[0]=...&types[1]=..., or
//     types[]=...), at most 20, or type with a trailing * wildcard;
//   - limit (1 to 100, default 10), starting_after, ending_before, has_more;
//   - Stripe's error bodies for bad parameters, unknown cursors and ids, a
//     missing API key, and injected 429s and 5xx.
//
// Every request is logged, with its query, so a test can count calls and
// assert on exactly what was asked.
package stripefake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
)

// Limits of Stripe's list API.
const (
	DefaultLimit = 10
	MaxLimit     = 100
	MaxTypes     = 20
)

// Request is one request the server answered.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Status int
	At     time.Time
	// Account is the request's Stripe-Account header; Version its
	// Stripe-Version; Context its Stripe-Context (API v2's account).
	Account, Version, Context string
}

// Created returns the request's created[op] filter ("gte", "lt", ...; "" for
// the exact created=) and whether it was present.
func (r Request) Created(op string) (int64, bool) {
	key := "created"
	if op != "" {
		key += "[" + op + "]"
	}
	v := r.Query.Get(key)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// Types returns the request's types[] filter.
func (r Request) Types() []string { return typesOf(r.Query) }

// IsList reports whether r was a GET /v1/events.
func (r Request) IsList() bool { return r.Method == http.MethodGet && r.Path == "/v1/events" }

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give stripe-go (STRIPE_API_BASE).
	URL string

	srv *httptest.Server

	mu       sync.Mutex
	events   []stored
	byID     map[string]int
	seq      int
	requests []Request
	faults   []int
	hook     func(*http.Request)
	key      string
	// objects holds each object's raw JSON by objectKey; order each
	// key in the order first put, for lists.
	objects map[objectKey]json.RawMessage
	order   []objectKey
	// v2 holds API v2 events (AddV2) by account and id.
	v2 map[[2]string]json.RawMessage
	// accounts are the platform's connected accounts (AddAccount), in
	// the order added.
	accounts []string
}

// AddAccount adds a connected account of the platform, listed by GET
// /v1/accounts (newest first); one added before is left as it is.
func (s *Server) AddAccount(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.accounts, id) {
		s.accounts = append(s.accounts, id)
	}
}

// listAccounts answers GET /v1/accounts as Stripe does for a platform:
// newest first (here: the last added first), limit, starting_after,
// has_more. A request acting for a connected account is refused: only
// the platform lists its accounts.
func (s *Server) listAccounts(r *http.Request) (int, []byte) {
	if r.Header.Get("Stripe-Account") != "" {
		return http.StatusForbidden, errorBody("invalid_request_error", "", "Only a platform can list its connected accounts.", "")
	}
	q := r.URL.Query()
	ids := slices.Clone(s.accounts)
	slices.Reverse(ids)
	items := make([]json.RawMessage, len(ids))
	for i, id := range ids {
		items[i] = json.RawMessage(fmt.Sprintf("    {\"id\": %q, \"object\": \"account\"}", id))
	}
	return listPage(ids, items, q, "account", "/v1/accounts")
}

// AddV2 stores an API v2 event (a thin event's full form, served by GET
// /v2/core/events/{id}) of account ("" for the platform's own): a request
// acting for another account (Stripe-Context) is answered 404, as Stripe
// does. raw is served byte for byte.
func (s *Server) AddV2(account string, raw []byte) error {
	var head struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.ID == "" {
		return fmt.Errorf("stripefake: add v2 event: not an event with an id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.v2 == nil {
		s.v2 = map[[2]string]json.RawMessage{}
	}
	s.v2[[2]string{account, head.ID}] = append(json.RawMessage(nil), raw...)
	return nil
}

// objectKey names a stored object: its collection's path, the account
// it belongs to ("" for the platform) and its id.
type objectKey struct{ collection, account, id string }

// collections maps the objects' types to their API paths.
var collections = stripefixture.Collections()

// PutObject stores (or replaces) an object that its retrieve call serves
// byte for byte: raw is its JSON, with id and object (the type, one of
// the mirror's). account is the connected account it belongs to, "" for
// the platform's own: a request for another account's object is answered
// 404, as Stripe does.
func (s *Server) PutObject(account string, raw []byte) error {
	var head struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.ID == "" {
		return fmt.Errorf("stripefake: put object: not an object with an id")
	}
	c, ok := collections[head.Object]
	if !ok {
		return fmt.Errorf("stripefake: put object %s: type %q is not served", head.ID, head.Object)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.objects == nil {
		s.objects = map[objectKey]json.RawMessage{}
	}
	k := objectKey{c, account, head.ID}
	if _, ok := s.objects[k]; !ok {
		s.order = append(s.order, k)
	}
	s.objects[k] = append(json.RawMessage(nil), raw...)
	return nil
}

// listSubscriptions answers GET /v1/subscriptions as Stripe does: newest
// first (here: the last put first), limit, starting_after, has_more, and
// status: without it (or with an empty one) canceled subscriptions are
// left out, "all" lists every one, another value only that status.
func (s *Server) listSubscriptions(r *http.Request) (int, []byte) {
	q := r.URL.Query()
	status, account := q.Get("status"), r.Header.Get("Stripe-Account")
	var matched []json.RawMessage
	var ids []string
	for i := len(s.order) - 1; i >= 0; i-- {
		k := s.order[i]
		if k.collection != collections["subscription"] || k.account != account {
			continue
		}
		raw := s.objects[k]
		var head struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(raw, &head)
		switch {
		case status == "all":
		case status == "" && head.Status == "canceled":
			continue
		case status != "" && head.Status != status:
			continue
		}
		matched, ids = append(matched, raw), append(ids, k.id)
	}
	return listPage(ids, matched, q, "subscription", "/v1/subscriptions")
}

// listPage answers one page of a list as Stripe does: items (ids[i] is
// items[i]'s id), newest first, after the one named by starting_after
// (404, naming noun, when none is), at most limit (DefaultLimit; 400
// outside 1..MaxLimit), with has_more and url (path). Each item is written as
// is, on a line of its own.
func listPage(ids []string, items []json.RawMessage, q url.Values, noun, path string) (int, []byte) {
	limit := DefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return http.StatusBadRequest, errorBody("invalid_request_error", "parameter_invalid", "Invalid limit: must be between 1 and 100", "limit")
		}
		limit = n
	}
	if after := q.Get("starting_after"); after != "" {
		i := slices.Index(ids, after)
		if i < 0 {
			return http.StatusNotFound, errorBody("invalid_request_error", "resource_missing", fmt.Sprintf("No such %s: '%s'", noun, after), "starting_after")
		}
		items = items[i+1:]
	}
	hasMore := len(items) > limit
	if hasMore {
		items = items[:limit]
	}
	var b bytes.Buffer
	b.WriteString("{\n  \"object\": \"list\",\n  \"data\": [")
	for i, raw := range items {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n")
		b.Write(raw)
	}
	fmt.Fprintf(&b, "\n  ],\n  \"has_more\": %t,\n  \"url\": %q\n}", hasMore, path)
	return http.StatusOK, b.Bytes()
}

// SubscriptionLists returns the GET /v1/subscriptions requests answered
// so far.
func (s *Server) SubscriptionLists() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Method == http.MethodGet && r.Path == collections["subscription"] {
			out = append(out, r)
		}
	}
	return out
}

// Retrievals returns the object retrieve requests answered so far.
func (s *Server) Retrievals() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if _, _, ok := objectPath(r.Path); ok && r.Method == http.MethodGet {
			out = append(out, r)
		}
	}
	return out
}

// objectPath splits /v1/<collection>/<id> into its collection and id.
func objectPath(path string) (collection, id string, ok bool) {
	for _, c := range collections {
		if rest, found := strings.CutPrefix(path, c+"/"); found && rest != "" && !strings.Contains(rest, "/") {
			return c, rest, true
		}
	}
	return "", "", false
}

type stored struct {
	id      string
	typ     string
	account string // the connected account's (Stripe Connect), "" for the platform's
	created int64
	seq     int
	raw     json.RawMessage
}

// New starts a server on 127.0.0.1; Close stops it.
func New() *Server {
	s := &Server{byID: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// RequireKey makes the server answer 401 unless requests carry this API key.
// By default any non-empty key is accepted.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Add stores events, each the raw JSON of one Stripe event object (as
// stripefixture.Build makes them). They are served byte for byte.
func (s *Server) Add(payloads ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range payloads {
		var head struct {
			ID      string `json:"id"`
			Type    string `json:"type"`
			Created int64  `json:"created"`
			Account string `json:"account"`
		}
		if err := json.Unmarshal(p, &head); err != nil {
			return fmt.Errorf("stripefake: add: not an event: %w", err)
		}
		if head.ID == "" || head.Type == "" {
			return fmt.Errorf("stripefake: add: event without id or type")
		}
		if _, dup := s.byID[head.ID]; dup {
			return fmt.Errorf("stripefake: add: event %s already added", head.ID)
		}
		s.seq++
		s.byID[head.ID] = len(s.events)
		s.events = append(
			s.events,
			stored{id: head.ID, typ: head.Type, account: head.Account, created: head.Created, seq: s.seq, raw: append(json.RawMessage(nil), p...)},
		)
	}
	return nil
}

// FailNext answers the next n requests with status (429 or 5xx) and Stripe's
// error body for it, before looking at them. Calls add up in order.
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, status)
	}
}

// OnRequest sets a function called at the start of every request, before
// any fault or answer; tests use it to pause a caller at a chosen point.
// nil removes it.
func (s *Server) OnRequest(f func(*http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = f
}

// Requests returns the requests answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Lists returns the GET /v1/events requests answered so far.
func (s *Server) Lists() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.IsList() {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests clears the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

var (
	eventPath   = regexp.MustCompile(`^/v1/events/([^/]+)$`)
	v2EventPath = regexp.MustCompile(`^/v2/core/events/([^/]+)$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(r)
	}
	status, body := s.answer(r)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Status: status, At: time.Now(),
		Account: r.Header.Get("Stripe-Account"), Version: r.Header.Get("Stripe-Version"), Context: r.Header.Get("Stripe-Context")})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", fmt.Sprintf("req_fake%d", time.Now().UnixNano()))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) answer(r *http.Request) (int, []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults) > 0 {
		status := s.faults[0]
		s.faults = s.faults[1:]
		return status, faultBody(status)
	}
	auth := r.Header.Get("Authorization")
	key, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || key == "" || (s.key != "" && key != s.key) {
		return http.StatusUnauthorized, errorBody("invalid_request_error", "", "Invalid API Key provided.", "")
	}
	if r.Method != http.MethodGet {
		return http.StatusNotFound, errorBody("invalid_request_error", "", fmt.Sprintf("Unrecognized request URL (%s: %s).", r.Method, r.URL.Path), "")
	}
	// As Stripe: the platform's key acts for a connected account with
	// Stripe-Account, and sees only that account's events; without it,
	// only the platform's own.
	account := r.Header.Get("Stripe-Account")
	if r.URL.Path == "/v1/events" {
		return s.list(r.URL.Query(), account)
	}
	if r.URL.Path == collections["subscription"] {
		return s.listSubscriptions(r)
	}
	if r.URL.Path == "/v1/accounts" {
		return s.listAccounts(r)
	}
	if m := v2EventPath.FindStringSubmatch(r.URL.Path); m != nil {
		raw, ok := s.v2[[2]string{r.Header.Get("Stripe-Context"), m[1]}]
		if !ok {
			return http.StatusNotFound, errorBody("invalid_request_error", "resource_missing", fmt.Sprintf("No such event: '%s'", m[1]), "id")
		}
		return http.StatusOK, raw
	}
	if m := eventPath.FindStringSubmatch(r.URL.Path); m != nil {
		i, ok := s.byID[m[1]]
		if !ok || s.events[i].account != account {
			return http.StatusNotFound, errorBody("invalid_request_error", "resource_missing", fmt.Sprintf("No such event: '%s'", m[1]), "id")
		}
		return http.StatusOK, s.events[i].raw
	}
	if c, id, ok := objectPath(r.URL.Path); ok {
		raw, found := s.objects[objectKey{c, r.Header.Get("Stripe-Account"), id}]
		if !found {
			return http.StatusNotFound, errorBody(
				"invalid_request_error",
				"resource_missing",
				fmt.Sprintf("No such %s: '%s'", strings.TrimPrefix(c, "/v1/"), id),
				"id",
			)
		}
		return http.StatusOK, raw
	}
	return http.StatusNotFound, errorBody("invalid_request_error", "", fmt.Sprintf("Unrecognized request URL (GET: %s).", r.URL.Path), "")
}

func faultBody(status int) []byte {
	if status == http.StatusTooManyRequests {
		return errorBody(
			"invalid_request_error",
			"rate_limit",
			"Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.",
			"",
		)
	}
	return errorBody("api_error", "", "An unknown error occurred (injected by stripefake).", "")
}

func errorBody(typ, code, msg, param string) []byte {
	e := map[string]string{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	return b
}

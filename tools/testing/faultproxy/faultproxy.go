// Package faultproxy is a fault-injecting HTTP proxy between the pipeline and
// the AWS emulators. The drills and the load test put it on AWS_ENDPOINT_URL
// (and on every AWS_ENDPOINT_URL_<SERVICE>) and inject, by rule, what
// production sees: service errors, throttling, delays and dropped
// connections. It forwards each request to its service's emulator, so
// services on different emulators (make test-localstack) all pass through
// it. The code under test has no test-only branch: it meets the faults over
// the wire, as it would meet AWS's.
//
// Rules inject by service, operation and count. A Decide function, when
// set, is asked first about every request and may choose any action for
// it, and a callback once its answer is passed on: the failure-point
// enumeration (tools/failpoints) decides so, by call site and
// occurrence. NewHTTP puts the same actions in front of any HTTP server
// (a provider's API stand-in, a team's application), answering in plain
// HTTP where AWS would answer with its error shapes.
package faultproxy

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
)

// Action is what a rule does to a matching request.
type Action string

// The actions.
const (
	// Error answers 500 with the service's InternalServerError (DynamoDB)
	// or ServiceUnavailable (others), without forwarding.
	Error Action = "error"
	// Throttle answers 400 with the service's throttling error
	// (ProvisionedThroughputExceededException for DynamoDB,
	// ThrottlingException otherwise), without forwarding.
	Throttle Action = "throttle"
	// Delay waits Rule.Delay, then forwards.
	Delay Action = "delay"
	// Drop closes the connection without an answer, without forwarding.
	Drop Action = "drop"
	// DropAfter forwards, then closes the connection without passing the
	// answer on: the request took effect but the caller cannot know.
	DropAfter Action = "drop_after"
	// Refuse answers at once with an error no client retries (AWS's
	// AccessDeniedException, or 403), without forwarding: what a caller
	// whose process is gone would get, were it still asking.
	Refuse Action = "refuse"
)

// Request is what Decide sees of one request.
type Request struct {
	// Service and Operation name it (Operation); for NewHTTP's proxies,
	// Service is the proxy's name and Operation the method and path.
	Service, Operation string
	// Invocation is the SDK's amz-sdk-invocation-id: the same for every
	// retry of one SDK call; empty outside AWS.
	Invocation string
	// Body is the request's body, read whole (it is still forwarded).
	Body []byte
	HTTP *http.Request
}

// Verdict is what Decide chose for one request.
type Verdict struct {
	// Action is applied as a rule's would be; "" forwards untouched.
	Action Action
	// Delay is Delay's wait.
	Delay time.Duration
	// After, when set, is called once the answer has been passed on (or
	// withheld): the request is over for its caller.
	After func()
}

// Rule injects a fault into matching requests.
type Rule struct {
	// Service is "dynamodb", "sqs", "ssm" ... or "" for any.
	Service string
	// Operation is the API operation (PutItem, SendMessage, ...) or "" for any.
	Operation string
	Action    Action
	Delay     time.Duration
	// Probability of injecting into a matching request; 0 means always.
	Probability float64
	// Skip lets the first Skip matching requests through untouched.
	Skip int
	// Count bounds the injections; 0 means unlimited.
	Count int
	// Sticky makes an injection last for the whole SDK operation: every
	// retry of the same call (the SDK's amz-sdk-invocation-id) gets the same
	// fault, so the caller sees the failure the SDK's retries could not
	// absorb, as in an outage longer than its retries.
	Sticky bool
}

type rule struct {
	Rule
	seen, injected int
}

// Proxy forwards to AWS endpoints, injecting faults by rule.
type Proxy struct {
	rp *httputil.ReverseProxy
	// name is the service name of a NewHTTP proxy; "" for AWS's.
	name string

	// Decide, when set, is asked about every request before the rules; a
	// verdict with an Action is applied instead of them. Set it before
	// serving.
	Decide func(Request) Verdict

	mu       sync.Mutex
	rules    []*rule
	requests map[string]int
	injected map[string]int
	// sticky holds the rule a Sticky injection chose, by invocation id.
	sticky map[string]*rule
}

// New returns a proxy to the emulators at targets, each request sent to its
// service's endpoint.
func New(targets emulator.Endpoints) (*Proxy, error) {
	rp, err := emulator.NewRouter(targets)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{rp: rp, requests: map[string]int{}, injected: map[string]int{}, sticky: map[string]*rule{}}
	p.rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		// The emulator itself is down: answer as a dead endpoint would.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	return p, nil
}

// NewHTTP returns a proxy named name (the Service of its requests) to the
// HTTP server at target: a provider's API stand-in, a team's application.
// Its faults are plain HTTP: Error answers 503, Throttle 429, Refuse 403,
// each with a small JSON body.
func NewHTTP(name, target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not a URL", target)
	}
	p := &Proxy{name: name, requests: map[string]int{}, injected: map[string]int{}, sticky: map[string]*rule{}}
	p.rp = &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }}
	p.rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { hangUp(w) }
	return p, nil
}

// Set replaces the rules.
func (p *Proxy) Set(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = p.rules[:0]
	clear(p.sticky)
	for _, r := range rules {
		p.rules = append(p.rules, &rule{Rule: r})
	}
}

// Clear removes every rule.
func (p *Proxy) Clear() { p.Set() }

// Stats returns requests seen and faults injected, by "service.Operation".
func (p *Proxy) Stats() (requests, injected map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	requests, injected = map[string]int{}, map[string]int{}
	for k, v := range p.requests {
		requests[k] = v
	}
	for k, v := range p.injected {
		injected[k] = v
	}
	return requests, injected
}

// Injected is the total number of faults injected so far.
func (p *Proxy) Injected() int {
	_, inj := p.Stats()
	n := 0
	for _, v := range inj {
		n += v
	}
	return n
}

// Operation names the service and operation of an AWS request from its
// X-Amz-Target header (JSON protocols), else its Action parameter.
func Operation(r *http.Request) (service, op string) {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		prefix, op, _ := strings.Cut(t, ".")
		switch {
		case strings.HasPrefix(prefix, "DynamoDB"):
			return "dynamodb", op
		case prefix == "AmazonSQS":
			return "sqs", op
		case prefix == "AmazonSSM":
			return "ssm", op
		}
		return strings.ToLower(prefix), op
	}
	if a := r.URL.Query().Get("Action"); a != "" {
		return "query", a
	}
	return "", ""
}

func (p *Proxy) match(service, op, invocation string) *rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests[service+"."+op]++
	if r, ok := p.sticky[invocation]; ok && invocation != "" {
		r.injected++
		p.injected[service+"."+op]++
		return r
	}
	for _, r := range p.rules {
		if (r.Service != "" && r.Service != service) || (r.Operation != "" && r.Operation != op) {
			continue
		}
		r.seen++
		if r.seen <= r.Skip || (r.Count > 0 && r.injected >= r.Count) {
			continue
		}
		if r.Probability > 0 && rand.Float64() >= r.Probability {
			continue
		}
		r.injected++
		p.injected[service+"."+op]++
		if r.Sticky && invocation != "" {
			p.sticky[invocation] = r
		}
		return r
	}
	return nil
}

// HTTPOperation names a plain HTTP request: its method and its path, each
// segment that looks like an id (digits only, or a digit in six
// characters or more) read as "{id}" (GET /v1/events/{id}).
func HTTPOperation(r *http.Request) string {
	segs := strings.Split(r.URL.Path, "/")
	for i, s := range segs {
		if strings.Trim(s, "0123456789") == "" && s != "" || len(s) >= 6 && strings.ContainsAny(s, "0123456789") {
			segs[i] = "{id}"
		}
	}
	return r.Method + " " + strings.Join(segs, "/")
}

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	service, op := Operation(req)
	if p.name != "" {
		service, op = p.name, HTTPOperation(req)
	}
	invocation := req.Header.Get("Amz-Sdk-Invocation-Id")
	if p.Decide != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			hangUp(w)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		v := p.Decide(Request{Service: service, Operation: op, Invocation: invocation, Body: body, HTTP: req})
		if v.After != nil {
			defer v.After()
		}
		if v.Action != "" {
			p.mu.Lock()
			p.requests[service+"."+op]++
			p.injected[service+"."+op]++
			p.mu.Unlock()
			p.apply(w, req, service, &rule{Rule: Rule{Action: v.Action, Delay: v.Delay}})
			return
		}
	}
	r := p.match(service, op, invocation)
	if r == nil {
		p.rp.ServeHTTP(w, req)
		return
	}
	p.apply(w, req, service, r)
}

// apply answers req as r's action says.
func (p *Proxy) apply(w http.ResponseWriter, req *http.Request, service string, r *rule) {
	switch r.Action {
	case Delay:
		select {
		case <-time.After(r.Delay):
		case <-req.Context().Done():
			return
		}
		p.rp.ServeHTTP(w, req)
	case Drop:
		_, _ = io.Copy(io.Discard, req.Body)
		hangUp(w)
	case DropAfter:
		p.rp.ServeHTTP(discard{header: http.Header{}}, req)
		hangUp(w)
	case Throttle:
		if p.name != "" {
			writeHTTPError(w, http.StatusTooManyRequests, "rate limited (injected)")
			return
		}
		writeError(w, service, http.StatusBadRequest, throttleCode(service), "Rate exceeded (injected)")
	case Refuse:
		if p.name != "" {
			writeHTTPError(w, http.StatusForbidden, "refused (injected)")
			return
		}
		writeError(w, service, http.StatusBadRequest, "AccessDeniedException", "refused (injected)")
	default:
		if p.name != "" {
			writeHTTPError(w, http.StatusServiceUnavailable, "injected fault")
			return
		}
		code := "ServiceUnavailable"
		if service == "dynamodb" {
			code = "InternalServerError"
		}
		writeError(w, service, http.StatusInternalServerError, code, "injected fault")
	}
}

// writeHTTPError answers a plain HTTP request with status and a small JSON
// body.
func writeHTTPError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"error":{"message":%q}}`, msg)
}

func throttleCode(service string) string {
	if service == "dynamodb" {
		return "ProvisionedThroughputExceededException"
	}
	return "ThrottlingException"
}

// writeError answers with an AWS JSON-protocol error the SDK decodes into
// the service's error type.
func writeError(w http.ResponseWriter, service string, status int, code, msg string) {
	ns := "com.amazonaws." + service
	if service == "dynamodb" {
		ns = "com.amazonaws.dynamodb.v20120810"
	}
	body := fmt.Sprintf(`{"__type":"%s#%s","message":"%s"}`, ns, code, msg)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Query-Error", code+";Sender")
	w.Header().Set("X-Amzn-ErrorType", code)
	// DynamoDB's answers carry a CRC32 of the body, which the SDK checks.
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// discard is a ResponseWriter that swallows the forwarded answer.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

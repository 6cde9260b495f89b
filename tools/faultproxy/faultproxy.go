// Package faultproxy is a fault-injecting HTTP proxy between the pipeline and
// the AWS emulators. The drills and the load test put it on AWS_ENDPOINT_URL
// (and on every AWS_ENDPOINT_URL_<SERVICE>) and inject, by rule, what
// production sees: service errors, throttling, delays and dropped
// connections. It forwards each request to its service's emulator, so
// services on different emulators (make test-localstack) all pass through
// it. The code under test has no test-only branch: it meets the faults over
// the wire, as it would meet AWS's.
package faultproxy

import (
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
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
)

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

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	service, op := Operation(req)
	r := p.match(service, op, req.Header.Get("Amz-Sdk-Invocation-Id"))
	if r == nil {
		p.rp.ServeHTTP(w, req)
		return
	}
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
		writeError(w, service, http.StatusBadRequest, throttleCode(service), "Rate exceeded (injected)")
	default:
		code := "ServiceUnavailable"
		if service == "dynamodb" {
			code = "InternalServerError"
		}
		writeError(w, service, http.StatusInternalServerError, code, "injected fault")
	}
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

package emulator

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
)

// General is the SDK's variable for the endpoint of every service, and
// ServicePrefix the start of each service's own (AWS_ENDPOINT_URL_SQS).
const (
	General       = "AWS_ENDPOINT_URL"
	ServicePrefix = General + "_"
)

// Endpoints say where AWS requests go, in the SDK's terms: one endpoint
// for every service (AWS_ENDPOINT_URL) and a service's own, which wins
// (AWS_ENDPOINT_URL_<SERVICE>). make test-localstack runs SQS, SSM and
// CloudFormation on LocalStack and DynamoDB on moto that way.
type Endpoints struct {
	// URL is the endpoint of every service without its own.
	URL string
	// Services holds the services' own endpoints, by the suffix of their
	// variable: DYNAMODB, SQS, SSM, CLOUDFORMATION.
	Services map[string]string
}

// One is Endpoints with a single endpoint for every service.
func One(url string) Endpoints { return Endpoints{URL: url} }

// EndpointsFromEnviron reads the endpoints from an environment in
// os.Environ's form. Empty values count as unset, as the SDK counts them.
func EndpointsFromEnviron(environ []string) Endpoints {
	e := Endpoints{Services: map[string]string{}}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		v = strings.TrimSpace(v)
		switch {
		case v == "":
		case k == General:
			e.URL = v
		case strings.HasPrefix(k, ServicePrefix):
			e.Services[strings.TrimPrefix(k, ServicePrefix)] = v
		}
	}
	return e
}

// EndpointsFromEnv reads the endpoints from the process environment.
func EndpointsFromEnv() Endpoints { return EndpointsFromEnviron(os.Environ()) }

// Set reports whether any endpoint is configured.
func (e Endpoints) Set() bool { return e.URL != "" || len(e.Services) > 0 }

// For returns the endpoint of service, named by its SDK id (DynamoDB,
// "CloudWatch Logs") or by its variable's suffix (DYNAMODB).
func (e Endpoints) For(service string) string {
	if v := e.Services[EnvSuffix(service)]; v != "" {
		return v
	}
	return e.URL
}

// EnvSuffix is the suffix of a service's endpoint variable, from its SDK
// id, as the SDK derives it: upper case, spaces as underscores.
func EnvSuffix(sdkID string) string {
	return strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_"))
}

// Vars returns the variables that say e: AWS_ENDPOINT_URL and one
// AWS_ENDPOINT_URL_<SERVICE> per service of its own.
func (e Endpoints) Vars() map[string]string {
	vars := map[string]string{}
	if e.URL != "" {
		vars[General] = e.URL
	}
	for s, v := range e.Services {
		vars[ServicePrefix+s] = v
	}
	return vars
}

// Environ returns base (os.Environ's form) with every endpoint variable it
// had replaced by e's: a process started with it reaches exactly e, whatever
// the parent's environment said.
func (e Endpoints) Environ(base []string) []string {
	var out []string
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); k != General && !strings.HasPrefix(k, ServicePrefix) {
			out = append(out, kv)
		}
	}
	vars := e.Vars()
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// Distinct returns the distinct endpoints of e, sorted.
func (e Endpoints) Distinct() []string {
	set := map[string]bool{}
	if e.URL != "" {
		set[e.URL] = true
	}
	for _, v := range e.Services {
		set[v] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// String shows e as its variables, one per service, like
// "AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_ENDPOINT_URL_DYNAMODB=...".
func (e Endpoints) String() string {
	vars := e.Vars()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		parts = append(parts, k+"="+vars[k])
	}
	return strings.Join(parts, " ")
}

// signingNames maps the SigV4 signing names whose service's variable is not
// simply the name in upper case.
var signingNames = map[string]string{
	"logs":       "CLOUDWATCH_LOGS",
	"monitoring": "CLOUDWATCH",
	"events":     "EVENTBRIDGE",
}

// ServiceOf names the service an AWS request is for, as the suffix of its
// endpoint variable (DYNAMODB, SQS, SSM, CLOUDFORMATION, STS), from the
// credential scope of its SigV4 signature (the Authorization header, or a
// presigned URL's X-Amz-Credential). Every service, whatever its protocol,
// signs so. It returns "" for an unsigned request.
func ServiceOf(r *http.Request) string {
	scope := r.URL.Query().Get("X-Amz-Credential")
	if auth := r.Header.Get("Authorization"); auth != "" {
		_, rest, ok := strings.Cut(auth, "Credential=")
		if !ok {
			return ""
		}
		scope, _, _ = strings.Cut(rest, ",")
	}
	// AKID/20261130/us-east-1/sqs/aws4_request
	parts := strings.Split(strings.TrimSpace(scope), "/")
	if len(parts) != 5 || parts[4] != "aws4_request" {
		return ""
	}
	if v, ok := signingNames[parts[3]]; ok {
		return v
	}
	return EnvSuffix(parts[3])
}

// NewRouter returns a reverse proxy that sends each AWS request to its
// service's endpoint in e: what a proxy in front of the emulators (the
// fault proxy, the tests' recorder) must do, now that services may live on
// different emulators. A request of no known service goes to e.URL.
func NewRouter(e Endpoints) (*httputil.ReverseProxy, error) {
	targets := map[string]*url.URL{}
	for _, v := range e.Distinct() {
		u, err := url.Parse(v)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("emulator: endpoint %q is not a URL", v)
		}
		targets[v] = u
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("emulator: no endpoint to route to")
	}
	fallback := e.URL
	if fallback == "" {
		fallback = e.Distinct()[0]
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			target := e.For(ServiceOf(pr.In))
			if target == "" {
				target = fallback
			}
			pr.SetURL(targets[target])
			// The Host header stays the one the client signed and built its
			// URLs with, as a transparent proxy's would.
			pr.Out.Host = pr.In.Host
		},
	}, nil
}

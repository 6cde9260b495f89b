// Package gateway is a local stand-in for an API Gateway HTTP API: it turns
// each HTTP request into a payload-format-2.0 event exactly as API Gateway
// does (lower-cased header names, comma-joined repeated headers, base64 bodies
// for non-text content, the request context), calls the function's handler,
// and writes the handler's answer back as API Gateway would.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Handler is a Lambda handler for HTTP API events.
type Handler func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Route binds a method and path to a handler, with the function's timeout.
type Route struct {
	Method, Path string
	Handler      Handler
	Timeout      time.Duration
	Function     string
}

// API Gateway limits.
const (
	maxPayload         = 10 << 20
	integrationTimeout = 30 * time.Second
)

// Gateway serves routes. Ready gates /healthz.
type Gateway struct {
	Routes []Route
	Logger *slog.Logger
	// Ready reports whether the whole stack is ready, for GET /healthz.
	Ready func() bool
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" && r.Method == http.MethodGet {
		if g.Ready != nil && !g.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, `{"status":"starting"}`)
			return
		}
		writeJSON(w, http.StatusOK, `{"status":"ok"}`)
		return
	}
	route, params, ok := g.match(r)
	if !ok {
		writeJSON(w, http.StatusNotFound, `{"message":"Not Found"}`)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, `{"message":"Bad Request"}`)
		return
	}
	if len(body) > maxPayload {
		writeJSON(w, http.StatusRequestEntityTooLarge, `{"message":"Request Entity Too Large"}`)
		return
	}
	req := Event(r, body, route)
	req.PathParameters = params
	timeout := min(route.Timeout, integrationTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{
		AwsRequestID:       req.RequestContext.RequestID,
		InvokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:" + route.Function,
	})
	resp, err := invoke(ctx, route.Handler, req)
	if err != nil {
		if g.Logger != nil {
			g.Logger.Error("integration failed", slog.String("function", route.Function), slog.String("error", err.Error()))
		}
		if ctx.Err() != nil {
			writeJSON(w, http.StatusServiceUnavailable, `{"message":"Service Unavailable"}`)
			return
		}
		writeJSON(w, http.StatusInternalServerError, `{"message":"Internal Server Error"}`)
		return
	}
	write(w, resp)
}

// match finds r's route as API Gateway does: a route whose path is r's
// exactly wins over one with path parameters ("/webhooks/{provider}"),
// whose values it returns by name.
func (g *Gateway) match(r *http.Request) (Route, map[string]string, bool) {
	for _, rt := range g.Routes {
		if strings.EqualFold(rt.Method, r.Method) && rt.Path == r.URL.Path {
			return rt, nil, true
		}
	}
	for _, rt := range g.Routes {
		if !strings.EqualFold(rt.Method, r.Method) {
			continue
		}
		if params, ok := matchPath(rt.Path, r.URL.Path); ok {
			return rt, params, true
		}
	}
	return Route{}, nil, false
}

// matchPath matches path against a route path with {name} segments, each
// matching one non-empty segment.
func matchPath(pattern, path string) (map[string]string, bool) {
	ps, segs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(segs) || !strings.Contains(pattern, "{") {
		return nil, false
	}
	params := map[string]string{}
	for i, p := range ps {
		name, ok := strings.CutPrefix(p, "{")
		if name, ok2 := strings.CutSuffix(name, "}"); ok && ok2 {
			if segs[i] == "" {
				return nil, false
			}
			params[name] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return params, true
}

// invoke calls h, turning a panic into an error as the Lambda runtime does,
// and honouring the deadline: a handler still running at the timeout is
// answered for, as Lambda's "Task timed out".
func invoke(ctx context.Context, h Handler, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	type result struct {
		resp events.APIGatewayV2HTTPResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: fmt.Errorf("handler panicked: %v", p)}
			}
		}()
		resp, err := h(ctx, req)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-ctx.Done():
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("task timed out: %w", ctx.Err())
	}
}

// Event builds the payload-format-2.0 event API Gateway sends for r.
func Event(r *http.Request, body []byte, route Route) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, vs := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	headers["content-length"] = fmt.Sprint(len(body))
	var cookies []string
	if c, ok := headers["cookie"]; ok {
		cookies = strings.Split(c, "; ")
		delete(headers, "cookie")
	}
	query := map[string]string{}
	for k, vs := range r.URL.Query() {
		query[k] = strings.Join(vs, ",")
	}
	now := time.Now()
	source, _, _ := net.SplitHostPort(r.RemoteAddr)
	routeKey := route.Method + " " + route.Path
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     routeKey,
			AccountID:    "000000000000",
			Stage:        "$default",
			RequestID:    requestID(),
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: strings.Split(r.Host, ".")[0],
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  source,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(query) == 0 {
		ev.QueryStringParameters = nil
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type")) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

// isText reports whether API Gateway passes a body of this content type as
// text; anything else arrives base64-encoded.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || mt == "application/xml" ||
		mt == "application/javascript" || mt == "application/x-www-form-urlencoded" || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

func write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

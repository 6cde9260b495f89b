package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func TestEventIsBuiltAsAPIGatewayBuildsIt(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	g := &Gateway{Routes: []Route{{Method: "POST", Path: "/webhooks/stripe", Timeout: time.Second, Function: "F",
		Handler: func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = req
			return events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: "ok", Headers: map[string]string{"x-a": "b"}}, nil
		}}}}
	req := httptest.NewRequest("POST", "/webhooks/stripe?x=1&x=2", strings.NewReader(`{"a":1}`))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", "t=1,v1=ab")
	req.Header.Add("X-Multi", "one")
	req.Header.Add("X-Multi", "two")
	req.Header.Set("Cookie", "a=1; b=2")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)

	if rec.Code != 201 || rec.Body.String() != "ok" || rec.Header().Get("X-A") != "b" {
		t.Errorf("response: got %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	if got.Version != "2.0" || got.RouteKey != "POST /webhooks/stripe" || got.RawPath != "/webhooks/stripe" || got.RawQueryString != "x=1&x=2" {
		t.Errorf("event: got version %q route %q path %q query %q", got.Version, got.RouteKey, got.RawPath, got.RawQueryString)
	}
	if got.Headers["stripe-signature"] != "t=1,v1=ab" || got.Headers["x-multi"] != "one,two" {
		t.Errorf("headers must be lower-cased and comma-joined: %v", got.Headers)
	}
	if _, ok := got.Headers["cookie"]; ok || len(got.Cookies) != 2 {
		t.Errorf("cookies: got %v and header %v", got.Cookies, got.Headers["cookie"])
	}
	if got.QueryStringParameters["x"] != "1,2" {
		t.Errorf("query: got %v", got.QueryStringParameters)
	}
	if got.IsBase64Encoded || got.Body != `{"a":1}` {
		t.Errorf("JSON body: got base64=%v %q", got.IsBase64Encoded, got.Body)
	}
	if got.RequestContext.HTTP.Method != "POST" || got.RequestContext.RequestID == "" || got.RequestContext.Stage != "$default" {
		t.Errorf("request context: %+v", got.RequestContext)
	}
}

func TestBinaryBodiesAreBase64(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	g := &Gateway{Routes: []Route{{Method: "POST", Path: "/p", Timeout: time.Second,
		Handler: func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = req
			return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
		}}}}
	req := httptest.NewRequest("POST", "/p", strings.NewReader("\x00\x01raw"))
	req.Header.Set("Content-Type", "application/octet-stream")
	g.ServeHTTP(httptest.NewRecorder(), req)
	b, _ := base64.StdEncoding.DecodeString(got.Body)
	if !got.IsBase64Encoded || string(b) != "\x00\x01raw" {
		t.Errorf("got base64=%v body %q", got.IsBase64Encoded, got.Body)
	}
}

func TestGatewayAnswersLikeAPIGateway(t *testing.T) {
	failing := func(_ context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, errors.New("boom")
	}
	panicking := func(_ context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		panic("boom")
	}
	slow := func(ctx context.Context, _ events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond)
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	}
	ready := false
	g := &Gateway{Ready: func() bool { return ready }, Routes: []Route{
		{Method: "POST", Path: "/fail", Handler: failing, Timeout: time.Second},
		{Method: "POST", Path: "/panic", Handler: panicking, Timeout: time.Second},
		{Method: "POST", Path: "/slow", Handler: slow, Timeout: 20 * time.Millisecond},
	}}
	tests := []struct {
		method, path string
		want         int
	}{
		{"GET", "/healthz", http.StatusServiceUnavailable},
		{"POST", "/nowhere", http.StatusNotFound},
		{"GET", "/fail", http.StatusNotFound},
		{"POST", "/fail", http.StatusInternalServerError},
		{"POST", "/panic", http.StatusInternalServerError},
		{"POST", "/slow", http.StatusServiceUnavailable},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}")))
		if rec.Code != tc.want {
			t.Errorf("%s %s: got %d, want %d", tc.method, tc.path, rec.Code, tc.want)
		}
	}
	ready = true
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Errorf("healthz when ready: got %d", rec.Code)
	}
}

func TestPathParameters(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	h := func(name string) Handler {
		return func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = req
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: name}, nil
		}
	}
	g := &Gateway{Routes: []Route{
		{Method: "POST", Path: "/webhooks/{provider}", Handler: h("param"), Timeout: time.Second},
		{Method: "POST", Path: "/webhooks/stripe", Handler: h("exact"), Timeout: time.Second},
	}}
	for _, tc := range []struct {
		path, wantBody, wantParam string
		wantCode                  int
	}{
		{"/webhooks/stripe", "exact", "", 200},
		{"/webhooks/github", "param", "github", 200},
		{"/webhooks/", "", "", 404},
		{"/webhooks/github/x", "", "", 404},
	} {
		got = events.APIGatewayV2HTTPRequest{}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest("POST", tc.path, strings.NewReader("{}")))
		if rec.Code != tc.wantCode || rec.Body.String() != tc.wantBody && tc.wantCode == 200 {
			t.Errorf("%s: got %d %q, want %d %q", tc.path, rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
		}
		if got.PathParameters["provider"] != tc.wantParam {
			t.Errorf("%s: path parameter: got %q, want %q", tc.path, got.PathParameters["provider"], tc.wantParam)
		}
	}
}

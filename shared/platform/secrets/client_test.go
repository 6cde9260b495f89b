package secrets_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestClientAgainstTheEmulator reads parameters stored with the SDK's own
// ssm client, through the emulator: a SecureString decrypted, a String
// with its type (which Read refuses), and a missing one as an APIError.
func TestClientAgainstTheEmulator(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx := context.Background()
	prefix := "/" + testenv.Prefix(t) + "/"
	sdk := ssm.NewFromConfig(cfg)
	for name, typ := range map[string]ssmtypes.ParameterType{"secure": ssmtypes.ParameterTypeSecureString, "plain": ssmtypes.ParameterTypeString} {
		if _, err := sdk.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(prefix + name), Value: aws.String("value_" + name), Type: typ}); err != nil {
			t.Fatal(err)
		}
	}
	c := secrets.NewClient(cfg)
	p, err := c.GetParameter(ctx, prefix+"secure")
	if err != nil || p.Value != "value_secure" || p.Type != "SecureString" || p.Name != prefix+"secure" {
		t.Fatalf("SecureString: got %+v, %v", p, err)
	}
	if v, err := secrets.Read(ctx, c, prefix+"secure"); err != nil || v != "value_secure" {
		t.Errorf("Read: got %q, %v", v, err)
	}
	if p, err := c.GetParameter(ctx, prefix+"plain"); err != nil || p.Type != "String" {
		t.Errorf("String: got %+v, %v", p, err)
	}
	if _, err := secrets.Read(ctx, c, prefix+"plain"); !errors.Is(err, secrets.ErrNotSecureString) {
		t.Errorf("Read of a String: got %v, want ErrNotSecureString", err)
	}
	_, err = c.GetParameter(ctx, prefix+"missing")
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ParameterNotFound" || api.ErrorFault() != smithy.FaultClient {
		t.Errorf("missing: got %v, want a ParameterNotFound APIError", err)
	}
}

// ssmStub answers with answers in turn (the last one repeated), and keeps
// the requests.
type ssmStub struct {
	answers []stubAnswer
	n       atomic.Int32
	reqs    []*http.Request
	bodies  []string
}

type stubAnswer struct {
	status int
	body   string
}

func (s *ssmStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(s.n.Add(1)) - 1
	b, _ := io.ReadAll(r.Body)
	s.reqs, s.bodies = append(s.reqs, r), append(s.bodies, string(b))
	a := s.answers[min(i, len(s.answers)-1)]
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(a.status)
	_, _ = w.Write([]byte(a.body))
}

func stubConfig(url string) aws.Config {
	return aws.Config{
		Region:       "eu-west-3",
		BaseEndpoint: aws.String(url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDROLE", SecretAccessKey: "s", SessionToken: "session"}, nil
		}),
		// The SDK's standard policy, without its waits.
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}
}

const found = `{"Parameter":{"Name":"/p","Type":"SecureString","Value":"whsec_x","Version":3}}`

func TestClientRequest(t *testing.T) {
	stub := &ssmStub{answers: []stubAnswer{{200, found}}}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	p, err := secrets.NewClient(stubConfig(srv.URL)).GetParameter(context.Background(), "/p")
	if err != nil || p.Value != "whsec_x" {
		t.Fatalf("got %+v, %v", p, err)
	}
	r := stub.reqs[0]
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "AmazonSSM.GetParameter" || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		t.Errorf("request: %s, target %q, content type %q", r.Method, r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"))
	}
	if auth := r.Header.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDROLE/") ||
		!strings.Contains(auth, "/eu-west-3/ssm/aws4_request") ||
		r.Header.Get("X-Amz-Security-Token") != "session" {
		t.Errorf("signed as %q, token %q; want SigV4 for ssm in eu-west-3 with the session token", auth, r.Header.Get("X-Amz-Security-Token"))
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(stub.bodies[0]), &body); err != nil || body["Name"] != "/p" || body["WithDecryption"] != true || len(body) != 2 {
		t.Errorf("body: got %s, want the name and WithDecryption", stub.bodies[0])
	}
}

// TestClientRetriesAsTheSDKDoes: throttling and 5xx are tried again, up to
// the standard policy's three attempts; an access refusal is not.
func TestClientRetriesAsTheSDKDoes(t *testing.T) {
	throttled := stubAnswer{400, `{"__type":"ThrottlingException","message":"Rate exceeded"}`}
	for _, tc := range []struct {
		name     string
		answers  []stubAnswer
		requests int32
		code     string
	}{
		{"5xx then found", []stubAnswer{{500, `{"__type":"InternalServerError","message":"oops"}`}, {200, found}}, 2, ""},
		{"throttled then found", []stubAnswer{throttled, {200, found}}, 2, ""},
		{"throttled throughout", []stubAnswer{throttled}, 3, "ThrottlingException"},
		{"access denied", []stubAnswer{{400, `{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"not authorized"}`}}, 1, "AccessDeniedException"},
		{"not found", []stubAnswer{{400, `{"__type":"ParameterNotFound"}`}}, 1, "ParameterNotFound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stub := &ssmStub{answers: tc.answers}
			srv := httptest.NewServer(stub)
			defer srv.Close()
			_, err := secrets.NewClient(stubConfig(srv.URL)).GetParameter(context.Background(), "/p")
			if got := stub.n.Load(); got != tc.requests {
				t.Errorf("requests: got %d, want %d", got, tc.requests)
			}
			var api *secrets.APIError
			switch {
			case tc.code == "" && err != nil:
				t.Errorf("got %v, want the parameter", err)
			case tc.code != "" && (!errors.As(err, &api) || api.Code != tc.code):
				t.Errorf("got %v, want an APIError %s", err, tc.code)
			}
		})
	}
}

// TestClientEndpointIsTheSDKs: the endpoint is the one the SDK's ssm client
// resolves, for regions of every partition, unless AWS_ENDPOINT_URL_SSM or
// AWS_ENDPOINT_URL says otherwise.
func TestClientEndpointIsTheSDKs(t *testing.T) {
	// The configuration alone decides here (see
	// TestClientEndpointFollowsTheSDKsRules for the process's variables).
	unsetenv(t, "AWS_ENDPOINT_URL")
	unsetenv(t, "AWS_ENDPOINT_URL_SSM")
	var got string
	// A transport that answers without a network, noting the host asked.
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.URL.Scheme + "://" + r.URL.Host
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(found)), Header: http.Header{}}, nil
	})
	for _, region := range []string{"us-east-1", "eu-west-3", "cn-north-1", "us-gov-west-1", "us-iso-east-1", "eusc-de-east-1"} {
		cfg := stubConfig("")
		cfg.BaseEndpoint, cfg.Region, cfg.HTTPClient = nil, region, &http.Client{Transport: rt}
		if _, err := secrets.NewClient(cfg).GetParameter(context.Background(), "/p"); err != nil {
			t.Fatalf("%s: %v", region, err)
		}
		want, err := ssm.NewDefaultEndpointResolverV2().ResolveEndpoint(context.Background(), ssm.EndpointParameters{Region: aws.String(region)})
		if err != nil {
			t.Fatal(err)
		}
		if w := want.URI.Scheme + "://" + want.URI.Host; got != w {
			t.Errorf("%s: got %s, want the SDK's %s", region, got, w)
		}
	}
	cfg := stubConfig("http://127.0.0.1:1")
	cfg.HTTPClient = &http.Client{Transport: rt}
	cfg.ConfigSources = []any{serviceEndpoint{"SSM": "http://127.0.0.2:2"}}
	if _, err := secrets.NewClient(cfg).GetParameter(context.Background(), "/p"); err != nil || got != "http://127.0.0.2:2" {
		t.Errorf("AWS_ENDPOINT_URL_SSM: got %s, %v", got, err)
	}
	cfg.ConfigSources = []any{serviceEndpoint{"SQS": "http://127.0.0.3:3"}}
	if _, err := secrets.NewClient(cfg).GetParameter(context.Background(), "/p"); err != nil || got != "http://127.0.0.1:1" {
		t.Errorf("AWS_ENDPOINT_URL: got %s, %v", got, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// serviceEndpoint answers like awsenv's service endpoint source.
type serviceEndpoint map[string]string

func (s serviceEndpoint) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v, ok := s[sdkID]
	return v, ok, nil
}

// ignoreEndpoints is a configuration source that says
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true, as inboxctl's --stage adds.
type ignoreEndpoints struct{}

func (ignoreEndpoints) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return true, true, nil
}

// TestClientEndpointFollowsTheSDKsRules: in every combination of the
// process's endpoint variables, the configuration's base endpoint, its
// service endpoint sources (AWS_ENDPOINT_URL_SSM, a profile's services
// section), a source that says to ignore configured endpoints (inboxctl
// --stage) and per-service client options (aws.Config.ServiceOptions), the
// client sends its request where the SDK's own ssm client would. A signed
// Parameter Store read sent elsewhere could be replayed to AWS.
func TestClientEndpointFollowsTheSDKsRules(t *testing.T) {
	var got string
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = r.URL.Scheme + "://" + r.URL.Host
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(found)), Header: http.Header{}}, nil
	})
	const (
		general  = "http://127.0.0.1:4566"
		envSSM   = "http://127.0.0.2:2"
		baseCfg  = "http://127.0.0.3:3"
		fromSrc  = "http://127.0.0.4:4"
		fromOpts = "http://127.0.0.5:5"
	)
	setSSM := func(id string, o any) {
		if id == "SSM" {
			reflectSetBaseEndpoint(o, fromOpts)
		}
	}
	setOther := func(id string, o any) {
		if id == "DynamoDB" {
			reflectSetBaseEndpoint(o, fromOpts)
		}
	}
	for _, env := range []map[string]string{
		{},
		{"AWS_ENDPOINT_URL": general},
		{"AWS_ENDPOINT_URL": general, "AWS_ENDPOINT_URL_SSM": envSSM},
		{"AWS_ENDPOINT_URL_SSM": envSSM},
	} {
		for _, base := range []string{"", baseCfg} {
			for _, sources := range [][]any{nil, {serviceEndpoint{"SSM": fromSrc}}, {ignoreEndpoints{}, serviceEndpoint{"SSM": fromSrc}}, {ignoreEndpoints{}}} {
				for i, opts := range [][]func(string, any){nil, {setSSM}, {setOther}} {
					name := fmt.Sprintf("env %v, base %q, sources %+v, options %d", env, base, sources, i)
					for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SSM"} {
						if v, ok := env[k]; ok {
							t.Setenv(k, v)
						} else {
							unsetenv(t, k)
						}
					}
					cfg := stubConfig("")
					cfg.BaseEndpoint, cfg.HTTPClient, cfg.ConfigSources, cfg.ServiceOptions = nil, &http.Client{Transport: rt}, sources, opts
					if base != "" {
						cfg.BaseEndpoint = aws.String(base)
					}
					got = ""
					if _, err := secrets.NewClient(cfg).GetParameter(context.Background(), "/p"); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					sdk := ssm.NewFromConfig(cfg).Options()
					want := aws.ToString(sdk.BaseEndpoint)
					if want == "" {
						ep, err := sdk.EndpointResolverV2.ResolveEndpoint(context.Background(), ssm.EndpointParameters{Region: aws.String(cfg.Region)})
						if err != nil {
							t.Fatal(err)
						}
						want = ep.URI.Scheme + "://" + ep.URI.Host
					}
					if got != want {
						t.Errorf("%s: got %s, want the SDK's %s", name, got, want)
					}
				}
			}
		}
	}
}

// reflectSetBaseEndpoint sets the BaseEndpoint field of a client's options,
// whatever their type, as a configuration's ServiceOptions may.
func reflectSetBaseEndpoint(o any, url string) {
	v := reflect.ValueOf(o)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	if f := v.Elem().FieldByName("BaseEndpoint"); f.IsValid() && f.CanSet() && f.Type() == reflect.TypeOf((*string)(nil)) {
		f.Set(reflect.ValueOf(aws.String(url)))
	}
}

// unsetenv unsets k for the test and restores it after.
func unsetenv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "")
	os.Unsetenv(k)
}

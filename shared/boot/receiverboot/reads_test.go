package receiverboot

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// countingClient counts the GetParameter requests that go through it.
type countingClient struct {
	next  aws.HTTPClient
	reads atomic.Int32
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	if r.Header.Get("X-Amz-Target") == "AmazonSSM.GetParameter" {
		c.reads.Add(1)
	}
	return c.next.Do(r)
}

// TestUnauthenticatedRequestsDoNotReadParameterStore: while a signing
// secret's parameter is missing (then holds no secret), requests with no
// signature header, or one that cannot be a signature, are answered 400
// without reading Parameter Store; requests with a well-formed header read
// the parameter at most once per secrets.FailureBackoff, and are answered
// 503 meanwhile. Against the emulator's Parameter Store, counting the
// receiver's GetParameter requests (without retries: one a read).
func TestUnauthenticatedRequestsDoNotReadParameterStore(t *testing.T) {
	cfg := testenv.AWS(t)
	counter := &countingClient{next: http.DefaultClient}
	if cfg.HTTPClient != nil {
		counter.next = cfg.HTTPClient
	}
	cfg.HTTPClient = counter
	// One request per read: the SDK's standard policy would try a read
	// that met a connection error again, and this counts reads.
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	prefix := "/" + testenv.Prefix(t) + "/"
	var logs bytes.Buffer
	c, err := ConfigFromEnv(envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "AWS_LAMBDA_FUNCTION_NAME": "receiver",
		"STRIPE_WEBHOOK_SECRETS_PARAMETER": prefix + "stripe/webhook-secrets",
		"GITHUB_WEBHOOK_SECRETS_PARAMETER": prefix + "github/webhook-secrets",
	}), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The backoff is measured on a clock the test advances.
	clock := &fakeClock{t: time.Now()}
	c.Now = clock.now
	h, err := New(context.Background(), c, cfg, slog.New(slog.NewJSONHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false}`
	stripe := func(sig string) events.APIGatewayV2HTTPRequest {
		h := map[string]string{"content-type": "application/json"}
		if sig != "" {
			h["stripe-signature"] = sig
		}
		return events.APIGatewayV2HTTPRequest{Body: body, Headers: h}
	}
	github := func(sig string) events.APIGatewayV2HTTPRequest {
		h := map[string]string{"content-type": "application/json", "x-github-delivery": "d-1", "x-github-event": "issues"}
		if sig != "" {
			h["x-hub-signature-256"] = sig
		}
		return events.APIGatewayV2HTTPRequest{Body: body, Headers: h, PathParameters: map[string]string{"provider": provider.GitHub}}
	}
	send := func(what string, req events.APIGatewayV2HTTPRequest, n, want int) {
		t.Helper()
		for range n {
			logs.Reset()
			resp, err := h.Handle(context.Background(), req)
			if err != nil || resp.StatusCode != want {
				t.Fatalf("%s: got %d, %v; want %d (%s)", what, resp.StatusCode, err, want, logs.String())
			}
		}
	}
	wellFormed := provider.SignStripe([]byte(body), "whsec_forged", time.Now())
	for _, tc := range []struct {
		what string
		req  events.APIGatewayV2HTTPRequest
	}{
		{"stripe, no signature header", stripe("")},
		{"stripe, malformed header", stripe("garbage")},
		{"stripe, a header without v1", stripe("t=1800000000")},
		{"github, no signature header", github("")},
		{"github, malformed header", github("sha256=abc")},
	} {
		send(tc.what, tc.req, 100, http.StatusBadRequest)
	}
	if n := counter.reads.Load(); n != 0 {
		t.Fatalf("missing or malformed signature headers: %d GetParameter requests, want 0", n)
	}

	// Well-formed, so only a secret can refuse them: the parameter is read,
	// at most once per backoff, and each is answered 503 meanwhile.
	start := clock.now()
	send("stripe, well-formed header, missing parameter", stripe(wellFormed), 50, http.StatusServiceUnavailable)
	send("github, well-formed header, missing parameter", github("sha256="+strings.Repeat("ab", 32)), 50, http.StatusServiceUnavailable)
	allowed := 2 * (1 + int32(clock.now().Sub(start)/secrets.FailureBackoff))
	if n := counter.reads.Load(); n < 2 || n > allowed {
		t.Errorf("100 requests while two parameters are missing: %d GetParameter requests, want 2 (one each), at most %d", n, allowed)
	}

	// A parameter that holds no usable secret is remembered the same way.
	sdk := ssm.NewFromConfig(testenv.AWS(t))
	if _, err := sdk.PutParameter(context.Background(), &ssm.PutParameterInput{
		Name: aws.String(prefix + "stripe/webhook-secrets"), Value: aws.String(" , "), Type: ssmtypes.ParameterTypeSecureString,
	}); err != nil {
		t.Fatal(err)
	}
	before := counter.reads.Load()
	clock.advance(secrets.FailureBackoff)
	testenv.Eventually(t, 3*secrets.FailureBackoff, "the parameter to be read again after its backoff", func() bool {
		_, _ = h.Handle(context.Background(), stripe(wellFormed))
		return counter.reads.Load() > before
	})
	start = clock.now()
	send("stripe, well-formed header, parameter without a secret", stripe(wellFormed), 50, http.StatusServiceUnavailable)
	if n, most := counter.reads.Load()-before, 1+int32(clock.now().Sub(start)/secrets.FailureBackoff); n > most {
		t.Errorf("50 requests while the parameter holds no secret: %d GetParameter requests, want at most %d", n, most)
	}
}

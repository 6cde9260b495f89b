package awsconfig_test

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/webhook-inbox/webhook-inbox/internal/awsconfig"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/sdkhttp"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

func TestLoadKeepsTheCABundleAndGuardsRequestBodies(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	// The server's certificate is trusted only through AWS_CA_BUNDLE, which
	// the SDK applies to its buildable client only.
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	t.Setenv("AWS_REGION", "us-east-1")
	cfg, err := awsconfig.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("x"))
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("TLS through AWS_CA_BUNDLE: %v", err)
	}
	resp.Body.Close()
	if sdkhttp.ReadOnlyBodies(cfg.HTTPClient) != cfg.HTTPClient {
		t.Error("the loaded client does not guard request bodies (sdkhttp.ReadOnlyBodies)")
	}
}

// TestSetEndpointsGivesEachServiceItsOwn: a service's own endpoint wins
// over the general one for the SDK's clients and for the hand-written
// Parameter Store client, even where the process environment names
// another (AWS_ENDPOINT_URL_SQS below), while a service without its own
// keeps the process's variable, as the SDK reads it.
func TestSetEndpointsGivesEachServiceItsOwn(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.9:9")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.8:8")
	t.Setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", "http://127.0.0.7:7")
	cfg, err := awsconfig.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	awsconfig.SetEndpoints(&cfg, "http://127.0.0.1:4566", map[string]string{"dynamodb": "http://127.0.0.1:5000", "SQS": "http://127.0.0.1:4567", "SSM": ""})
	for service, tc := range map[string]struct{ got, want string }{
		"DynamoDB":       {aws.ToString(dynamodb.NewFromConfig(cfg).Options().BaseEndpoint), "http://127.0.0.1:5000"},
		"SQS":            {aws.ToString(sqs.NewFromConfig(cfg).Options().BaseEndpoint), "http://127.0.0.1:4567"},
		"SSM":            {aws.ToString(ssm.NewFromConfig(cfg).Options().BaseEndpoint), "http://127.0.0.1:4566"},
		"CloudFormation": {aws.ToString(cloudformation.NewFromConfig(cfg).Options().BaseEndpoint), "http://127.0.0.7:7"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: endpoint %q, want %q", service, tc.got, tc.want)
		}
	}
	var asked string
	cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		asked = "http://" + r.URL.Host
		return &http.Response{
			StatusCode: 200,
			Header:     http.Header{},
			Body:       io.NopCloser(strings.NewReader(`{"Parameter":{"Type":"SecureString","Value":"v"}}`)),
		}, nil
	})}
	awsconfig.SetEndpoints(&cfg, "", map[string]string{"ssm": "http://127.0.0.1:4568"})
	if _, err := secrets.NewClient(cfg).GetParameter(context.Background(), "/p"); err != nil || asked != "http://127.0.0.1:4568" {
		t.Errorf("Parameter Store: asked %s (%v), want its own endpoint", asked, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

package awsenv

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// recorder is an AWS endpoint that answers an empty listing and records
// the authorization of each request it gets.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
	token []string
}

func newRecorder(t *testing.T, body string) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		r.token = append(r.token, req.Header.Get("X-Amz-Security-Token"))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte(body))
	}))
	t.Cleanup(r.Close)
	return r
}

func TestAWSReadsTheLambdaEnvironment(t *testing.T) {
	general := newRecorder(t, `{"QueueUrls":[]}`)
	dynamo := newRecorder(t, `{"TableNames":[]}`)
	// The process environment, as Lambda gives it: the service clients
	// themselves look at AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>.
	for k, v := range map[string]string{
		"AWS_REGION":                "eu-west-3",
		"AWS_ACCESS_KEY_ID":         "AKIDROLE",
		"AWS_SECRET_ACCESS_KEY":     "secret",
		"AWS_SESSION_TOKEN":         "session",
		"AWS_ENDPOINT_URL":          general.URL,
		"AWS_ENDPOINT_URL_DYNAMODB": dynamo.URL,
		"AWS_ENDPOINT_URL_SQS":      "",
	} {
		t.Setenv(k, v)
	}
	cfg, err := Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("DynamoDB through AWS_ENDPOINT_URL_DYNAMODB: %v", err)
	}
	if _, err := sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("SQS through AWS_ENDPOINT_URL: %v", err)
	}
	for name, r := range map[string]*recorder{"service endpoint": dynamo, "general endpoint": general} {
		if len(r.auths) != 1 {
			t.Fatalf("%s: got %d requests, want 1", name, len(r.auths))
		}
		if !strings.Contains(r.auths[0], "Credential=AKIDROLE/") || !strings.Contains(r.auths[0], "/eu-west-3/") || r.token[0] != "session" {
			t.Errorf("%s: signed as %q with token %q; want the environment's keys, region and session token", name, r.auths[0], r.token[0])
		}
	}
}

// TestAWSGivesEachServiceItsOwnEndpoint: with AWS_ENDPOINT_URL at one
// emulator and AWS_ENDPOINT_URL_DYNAMODB at another (make test-localstack:
// LocalStack has no DynamoDB without Docker), every client a function
// builds goes where its variable says: DynamoDB to its own, SQS and the
// hand-written Parameter Store client to the general one, or to
// AWS_ENDPOINT_URL_SSM when set.
func TestAWSGivesEachServiceItsOwnEndpoint(t *testing.T) {
	general := newRecorder(t, `{"QueueUrls":[]}`)
	dynamo := newRecorder(t, `{"TableNames":[]}`)
	param := `{"Parameter":{"Name":"/p","Type":"SecureString","Value":"v"}}`
	ssmGeneral := newRecorder(t, param)
	ssmOwn := newRecorder(t, param)
	for _, tc := range []struct {
		name   string
		ssmVar string
		ssm    *recorder
	}{
		{"SSM on the general endpoint", "", ssmGeneral},
		{"SSM on its own", ssmOwn.URL, ssmOwn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range map[string]string{
				"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
				"AWS_ENDPOINT_URL": general.URL, "AWS_ENDPOINT_URL_DYNAMODB": dynamo.URL,
			} {
				t.Setenv(k, v)
			}
			if tc.ssmVar != "" {
				t.Setenv("AWS_ENDPOINT_URL_SSM", tc.ssmVar)
			} else {
				// The general recorder answers SQS; SSM's answer must parse.
				t.Setenv("AWS_ENDPOINT_URL", ssmGeneral.URL)
			}
			cfg, err := Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			before := map[*recorder]int{dynamo: len(dynamo.auths), tc.ssm: len(tc.ssm.auths)}
			if _, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
				t.Fatalf("DynamoDB: %v", err)
			}
			if _, err := secrets.NewClient(cfg).GetParameter(context.Background(), "/p"); err != nil {
				t.Fatalf("Parameter Store: %v", err)
			}
			for r, n := range before {
				if got := len(r.auths) - n; got != 1 {
					t.Errorf("%s: got %d requests, want 1", r.URL, got)
				}
			}
		})
	}
}

func TestAWSIgnoresConfiguredEndpointsWhenToldTo(t *testing.T) {
	cfg, err := from(envMap(map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b",
		"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:2",
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseEndpoint != nil {
		t.Errorf("BaseEndpoint: got %q, want none", *cfg.BaseEndpoint)
	}
	if v, found, _ := cfg.ConfigSources[0].(serviceEndpoints).GetServiceBaseEndpoint(context.Background(), "SQS"); found {
		t.Errorf("SQS endpoint: got %q, want none", v)
	}
}

func TestAWSReportsWhatTheEnvironmentLacks(t *testing.T) {
	_, err := from(envMap(map[string]string{"AWS_ACCESS_KEY_ID": "only-half"}))
	if err == nil {
		t.Fatal("got nil error without a region and with half a key pair")
	}
	for _, want := range []string{"AWS_REGION", "AWS_SECRET_ACCESS_KEY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "only-half") {
		t.Errorf("error %q shows the key id", err)
	}
	_, err = from(envMap(map[string]string{"AWS_REGION": "us-east-1"}))
	if err == nil || !strings.Contains(err.Error(), "no AWS credentials") {
		t.Errorf("no credentials at all: got %v", err)
	}
}

func TestAWSUsesTheContainerCredentialsEndpoint(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		json.NewEncoder(w).Encode(map[string]string{
			"AccessKeyId": "AKIDCONTAINER", "SecretAccessKey": "s", "Token": "t",
			"Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	}))
	t.Cleanup(srv.Close)
	cfg, err := from(envMap(map[string]string{
		"AWS_REGION":                         "us-east-1",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": srv.URL + "/creds",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN":  "container-token",
	}))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if creds.AccessKeyID != "AKIDCONTAINER" || creds.SessionToken != "t" || gotAuth != "container-token" {
		t.Errorf("got key %q token %q, sent authorization %q", creds.AccessKeyID, creds.SessionToken, gotAuth)
	}
}

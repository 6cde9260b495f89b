package emulator

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func TestEndpointsFromTheEnvironment(t *testing.T) {
	e := EndpointsFromEnviron([]string{
		"PATH=/bin", "AWS_ENDPOINT_URL=http://ls:4566", "AWS_ENDPOINT_URL_DYNAMODB=http://moto:5000",
		"AWS_ENDPOINT_URL_SQS=", "AWS_REGION=us-east-1",
	})
	for service, want := range map[string]string{"DynamoDB": "http://moto:5000", "DYNAMODB": "http://moto:5000", "SQS": "http://ls:4566", "CloudWatch Logs": "http://ls:4566"} {
		if got := e.For(service); got != want {
			t.Errorf("For(%s): got %s, want %s", service, got, want)
		}
	}
	// A child's environment says exactly e: the parent's own endpoint
	// variables are gone, the rest stays.
	got := e.Environ([]string{"PATH=/bin", "AWS_ENDPOINT_URL=http://old", "AWS_ENDPOINT_URL_SSM=http://old-ssm", "HOME=/root"})
	want := []string{"PATH=/bin", "HOME=/root", "AWS_ENDPOINT_URL=http://ls:4566", "AWS_ENDPOINT_URL_DYNAMODB=http://moto:5000"}
	if !slices.Equal(got, want) {
		t.Errorf("Environ:\n got %q\nwant %q", got, want)
	}
	if got := One("http://x").Environ([]string{"AWS_ENDPOINT_URL_DYNAMODB=http://moto"}); !slices.Equal(got, []string{"AWS_ENDPOINT_URL=http://x"}) {
		t.Errorf("One(x).Environ: got %q", got)
	}
}

// TestRouterSendsEachServiceToItsEndpoint: real SDK clients, all pointed at
// the router, land on their service's emulator, whatever their protocol
// (JSON for DynamoDB, SQS and SSM; the query protocol for CloudFormation).
func TestRouterSendsEachServiceToItsEndpoint(t *testing.T) {
	type hit struct{ server, target string }
	var mu sync.Mutex
	var hits []hit
	server := func(name, body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			target := r.Header.Get("X-Amz-Target")
			if target == "" {
				target = string(b)
			}
			mu.Lock()
			hits = append(hits, hit{name, target})
			mu.Unlock()
			if strings.Contains(target, "DescribeStacks") {
				w.Header().Set("Content-Type", "text/xml")
				io.WriteString(w, `<DescribeStacksResponse><DescribeStacksResult><Stacks/></DescribeStacksResult></DescribeStacksResponse>`)
				return
			}
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	moto := server("moto", `{"TableNames":[]}`)
	ls := server("localstack", `{"QueueUrls":[],"Parameters":[]}`)
	router, err := NewRouter(Endpoints{URL: ls.URL, Services: map[string]string{"DYNAMODB": moto.URL}})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(router)
	t.Cleanup(front.Close)
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(front.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})}
	ctx := context.Background()
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ssm.NewFromConfig(cfg).DescribeParameters(ctx, &ssm.DescribeParametersInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cloudformation.NewFromConfig(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{}); err != nil {
		t.Fatal(err)
	}
	want := []hit{
		{"moto", "DynamoDB_20120810.ListTables"},
		{"localstack", "AmazonSQS.ListQueues"},
		{"localstack", "AmazonSSM.DescribeParameters"},
		{"localstack", "Action=DescribeStacks&Version=2010-05-15"},
	}
	if !slices.Equal(hits, want) {
		t.Errorf("requests landed:\n got %v\nwant %v", hits, want)
	}
}

func TestServiceOfAnUnsignedRequestIsUnknown(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/moto-api/", nil)
	if got := ServiceOf(r); got != "" {
		t.Errorf("got %q, want none", got)
	}
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261130/us-east-1/logs/aws4_request, SignedHeaders=host, Signature=x")
	if got := ServiceOf(r); got != "CLOUDWATCH_LOGS" {
		t.Errorf("logs: got %q, want CLOUDWATCH_LOGS (its SDK id is CloudWatch Logs)", got)
	}
}

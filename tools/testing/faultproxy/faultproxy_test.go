package faultproxy_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

func through(t *testing.T, p *faultproxy.Proxy) aws.Config {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithBaseEndpoint(srv.URL), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestFaultsReachTheSDKAsAWSErrors(t *testing.T) {
	s := testenv.Provision(t, nil)
	p, err := faultproxy.New(testenv.Endpoints(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := through(t, p)
	db := dynamodb.NewFromConfig(cfg)
	q := sqs.NewFromConfig(cfg)
	ctx := context.Background()
	put := func() error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.Table("EventsTable")),
			Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}},
		})
		return err
	}
	if err := put(); err != nil {
		t.Fatalf("no rules: %v", err)
	}

	p.Set(faultproxy.Rule{Service: "dynamodb", Operation: "PutItem", Action: faultproxy.Throttle})
	err = put()
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) || !fault.Throttled(err) {
		t.Fatalf("throttle rule: got %v, want ProvisionedThroughputExceededException", err)
	}

	// Two faults, then success: the SDK's own retries absorb them.
	p.Set(faultproxy.Rule{Service: "dynamodb", Operation: "PutItem", Action: faultproxy.Error, Count: 2})
	if err := put(); err != nil {
		t.Fatalf("two transient errors within the SDK's retries: %v", err)
	}

	p.Set(faultproxy.Rule{Service: "sqs", Operation: "SendMessage", Action: faultproxy.Drop})
	_, err = q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.Queue("WebhookQueue").URL), MessageBody: aws.String("x")})
	if err == nil {
		t.Fatal("drop rule: got nil error")
	}

	p.Set(faultproxy.Rule{Service: "sqs", Operation: "SendMessage", Action: faultproxy.Delay, Delay: 50 * time.Millisecond})
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.Queue("WebhookQueue").URL), MessageBody: aws.String("x")}); err != nil {
		t.Fatalf("delay rule: %v", err)
	}
	_, injected := p.Stats()
	if injected["dynamodb.PutItem"] < 3 || injected["sqs.SendMessage"] < 2 {
		t.Errorf("injected: got %v", injected)
	}
	p.Clear()
	if err := put(); err != nil {
		t.Fatalf("after Clear: %v", err)
	}
}

func TestStickyFaultOutlastsTheSDKsRetries(t *testing.T) {
	s := testenv.Provision(t, nil)
	p, err := faultproxy.New(testenv.Endpoints(t))
	if err != nil {
		t.Fatal(err)
	}
	const attempts = 3
	db := dynamodb.NewFromConfig(through(t, p), func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	})
	put := func() error {
		_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName: aws.String(s.Table("EventsTable")),
			Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "sticky"}},
		})
		return err
	}
	// One injection decision, then every retry of that call meets it.
	p.Set(faultproxy.Rule{Service: "dynamodb", Operation: "PutItem", Action: faultproxy.Throttle, Count: 1, Sticky: true})
	var pte *types.ProvisionedThroughputExceededException
	if err := put(); !errors.As(err, &pte) {
		t.Fatalf("sticky throttle: got %v, want the call to fail with ProvisionedThroughputExceededException", err)
	}
	if got := p.Injected(); got != attempts {
		t.Errorf("injected %d faults, want one per attempt (%d)", got, attempts)
	}
	// A new call is a new decision: the rule's one injection is spent.
	if err := put(); err != nil {
		t.Errorf("the next call: %v", err)
	}
}

// TestEachServiceReachesItsOwnEmulator: behind the proxy, DynamoDB goes to
// its own endpoint and the rest to the general one (make test-localstack:
// moto and LocalStack), and rules still apply to each.
func TestEachServiceReachesItsOwnEmulator(t *testing.T) {
	hits := map[string]int{}
	var mu sync.Mutex
	fake := func(name, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits[name+" "+r.Header.Get("X-Amz-Target")]++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	p, err := faultproxy.New(
		emulator.Endpoints{URL: fake("localstack", `{"QueueUrls":[]}`), Services: map[string]string{"DYNAMODB": fake("moto", `{"TableNames":[]}`)}},
	)
	if err != nil {
		t.Fatal(err)
	}
	cfg := through(t, p)
	ctx := context.Background()
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatal(err)
	}
	p.Set(faultproxy.Rule{Service: "dynamodb", Action: faultproxy.Throttle, Count: 1})
	if _, err := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }).ListTables(ctx, &dynamodb.ListTablesInput{}); !fault.Throttled(
		err,
	) {
		t.Errorf("throttle rule on DynamoDB: got %v", err)
	}
	want := map[string]int{"moto DynamoDB_20120810.ListTables": 1, "localstack AmazonSQS.ListQueues": 1}
	mu.Lock()
	defer mu.Unlock()
	if !maps.Equal(hits, want) {
		t.Errorf("requests landed: got %v, want %v", hits, want)
	}
}

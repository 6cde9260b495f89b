// Package testenv gives integration tests a real AWS-compatible endpoint and
// freshly provisioned resources from template.yaml.
//
// The endpoint is AWS_ENDPOINT_URL when set (make test starts one emulator for
// the whole run; LocalStack works the same way), with the services' own
// endpoints beside it (AWS_ENDPOINT_URL_DYNAMODB: make test-localstack runs
// DynamoDB on moto and the rest on LocalStack). Otherwise the first test
// that asks starts moto for the test binary, which stops with it. A test never
// skips for want of an emulator: it fails and says how to get one. Only
// under go test -short, the fast path, is a test that asks for one skipped
// (package needs).
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/awsconfig"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
)

var (
	once      sync.Once
	endpoints emulator.Endpoints
	startErr  error

	backendMu sync.Mutex
	backends  = map[string]string{}
)

// Endpoint returns the emulator's URL, the endpoint of every service
// without its own, starting one if needed.
func Endpoint(t testing.TB) string {
	t.Helper()
	return Endpoints(t).URL
}

// Endpoints returns the emulators' endpoints, starting moto if needed.
// A process a test starts reaches the same emulators with
// Endpoints(t).Environ(...) or the variables of Endpoints(t).Vars().
func Endpoints(t testing.TB) emulator.Endpoints {
	t.Helper()
	needs.Emulator(t)
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		emu, err := emulator.FromEnv(ctx, emulator.Options{})
		if err != nil {
			startErr = err
			return
		}
		endpoints = emu.Endpoints
		// Processes started by the SDK in this binary read the endpoint
		// from the environment, as in Lambda.
		os.Setenv(emulator.General, endpoints.URL)
	})
	if startErr != nil {
		t.Fatalf("no AWS emulator: %v\n(run the tests with `make test`, which installs and starts one, or set AWS_ENDPOINT_URL)", startErr)
	}
	return endpoints
}

// Backend names the emulator that serves service (an SDK id, like SQS):
// "localstack" or "moto". A test whose expectation differs between the two
// asserts each one's (docs/localstack.md lists every such difference and
// its test); it never skips.
func Backend(t testing.TB, service string) string {
	t.Helper()
	url := Endpoints(t).For(service)
	backendMu.Lock()
	defer backendMu.Unlock()
	if b, ok := backends[url]; ok {
		return b
	}
	b, err := emulator.Identify(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	backends[url] = b
	return b
}

// AWS returns an AWS configuration for the emulator.
func AWS(t testing.TB) aws.Config {
	t.Helper()
	Endpoint(t)
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	cfg, err := awsconfig.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Stack is a set of resources provisioned from template.yaml for one test.
type Stack struct {
	AWS       aws.Config
	DynamoDB  *dynamodb.Client
	SQS       *sqs.Client
	Template  *template.Template
	Resources *provision.Resources
	Prefix    string
}

// Table returns the name of a table by logical id.
func (s *Stack) Table(id string) string { return s.Resources.Tables[id] }

// Queue returns a queue by logical id.
func (s *Stack) Queue(id string) provision.Queue { return s.Resources.Queues[id] }

// TemplatePath is the path of template.yaml.
func TemplatePath(t testing.TB) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "template.yaml")
}

// Provision creates the template's resources under a prefix unique to t.
func Provision(t testing.TB, overrides map[string]string) *Stack {
	t.Helper()
	cfg := AWS(t)
	tmpl, err := template.Load(TemplatePath(t), overrides)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{AWS: cfg, DynamoDB: dynamodb.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg), Template: tmpl, Prefix: Prefix(t)}
	p := &provision.Provisioner{DynamoDB: s.DynamoDB, SQS: s.SQS, Prefix: s.Prefix}
	// The routing (Stripe's EventBridge destination) where the emulator
	// runs it: LocalStack. On moto, Resources.LeftOut names it.
	if Backend(t, "CloudFormation") == "localstack" {
		p.CloudFormation = cloudformation.NewFromConfig(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if s.Resources, err = p.Provision(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	return s
}

// Prefix returns a resource-name prefix unique to this test run and test.
func Prefix(t testing.TB) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	if len(name) > 30 {
		name = name[len(name)-30:]
	}
	return "t" + hex.EncodeToString(b[:]) + "-" + strings.Trim(name, "-")
}

// RunsEventBridge reports whether the emulator serving EventBridge runs
// Stripe's EventBridge destination as the template needs it: LocalStack
// does. moto does not (docs/localstack.md): a bus named after a partner
// source (aws.partner/stripe.com/ed_...) is refused or renamed there, its
// delivered envelope lacks account, a failing target fails PutEvents.
// On moto this asserts the first of those gaps, so the day moto closes it
// the calling test fails and asks for its cases to run on moto too; the
// caller asserts nothing more there. make test-localstack runs the cases.
func RunsEventBridge(t testing.TB) bool {
	t.Helper()
	if Backend(t, "EventBridge") == "localstack" {
		return true
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "aws.partner/stripe.com/ed_test_moto" + hex.EncodeToString(b[:])
	eb := eventbridge.NewFromConfig(AWS(t))
	ctx := context.Background()
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(name)}); err != nil {
		t.Logf("moto refuses a partner source's bus (%v): the EventBridge cases run on LocalStack (make test-localstack)", err)
		return false
	}
	got, err := eb.DescribeEventBus(ctx, &eventbridge.DescribeEventBusInput{Name: aws.String(name)})
	if err != nil {
		t.Logf("moto does not keep a partner source's bus (%v): the EventBridge cases run on LocalStack (make test-localstack)", err)
		return false
	}
	if aws.ToString(got.Name) != name {
		t.Logf("moto renames a partner source's bus (%q): the EventBridge cases run on LocalStack (make test-localstack)", aws.ToString(got.Name))
		return false
	}
	t.Fatalf("moto now keeps a bus named %s: check its other EventBridge gaps (docs/localstack.md) and run the EventBridge cases on moto too", name)
	return false
}

package provision_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

func TestProvisionIsIdempotentAndFollowsTheTemplate(t *testing.T) {
	ctx := context.Background()
	s := testenv.Provision(t, map[string]string{"MaxReceiveCount": "3", "QueueVisibilityTimeout": "40"})
	// A second run over existing resources changes nothing and fails nothing.
	p := &provision.Provisioner{DynamoDB: s.DynamoDB, SQS: s.SQS, Prefix: s.Prefix}
	again, err := p.Provision(ctx, s.Template)
	if err != nil {
		t.Fatalf("second provision: %v", err)
	}
	if again.Queues["WebhookQueue"].URL != s.Queue("WebhookQueue").URL {
		t.Errorf("queue URL changed between runs")
	}

	desc, err := s.DynamoDB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.Table("EventsTable"))})
	if err != nil {
		t.Fatal(err)
	}
	// The template's indexes and TTL, whatever the data model names them.
	events, ok := s.Template.Resource("EventsTable")
	if !ok {
		t.Fatal("template has no EventsTable")
	}
	var want []string
	for _, g := range events.Properties["GlobalSecondaryIndexes"].([]any) {
		want = append(want, g.(map[string]any)["IndexName"].(string))
	}
	indexes := map[string]bool{}
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		indexes[aws.ToString(g.IndexName)] = true
	}
	if len(want) == 0 || len(indexes) != len(want) {
		t.Errorf("events table indexes: got %v, want the template's %v", indexes, want)
	}
	for _, name := range want {
		if !indexes[name] {
			t.Errorf("events table lacks index %s (have %v)", name, indexes)
		}
	}
	ttl, err := s.DynamoDB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(s.Table("EventsTable"))})
	if err != nil {
		t.Fatal(err)
	}
	wantTTL := events.Properties["TimeToLiveSpecification"].(map[string]any)["AttributeName"]
	if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got == "" || got != wantTTL {
		t.Errorf("TTL attribute: got %v, want the template's %v", ttl.TimeToLiveDescription, wantTTL)
	}

	attrs, err := s.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(s.Queue("WebhookQueue").URL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["VisibilityTimeout"] != "40" {
		t.Errorf("VisibilityTimeout: got %s, want 40", attrs.Attributes["VisibilityTimeout"])
	}
	var rp struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     any    `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &rp); err != nil {
		t.Fatalf("RedrivePolicy %q: %v", attrs.Attributes["RedrivePolicy"], err)
	}
	if rp.DeadLetterTargetArn != s.Queue("DeadLetterQueue").ARN || template.Scalar(rp.MaxReceiveCount) != "3" {
		t.Errorf("RedrivePolicy: got %+v, want the DLQ's ARN and 3", rp)
	}
}

func TestEnvironmentResolvesReferences(t *testing.T) {
	s := testenv.Provision(t, nil)
	f, err := s.Template.Function("ReceiverFunction")
	if err != nil {
		t.Fatal(err)
	}
	env, err := s.Resources.Environment(f)
	if err != nil {
		t.Fatal(err)
	}
	if env["EVENTS_TABLE"] != s.Table("EventsTable") || env["QUEUE_URL"] != s.Queue("WebhookQueue").URL || env["STRIPE_MODE"] != "test" {
		t.Errorf("environment: got %v", env)
	}
}

func TestResolveSubstitutesResourcesLeftInSubStrings(t *testing.T) {
	res := &provision.Resources{
		Tables: map[string]string{"EventsTable": "p-events"},
		Queues: map[string]provision.Queue{"WebhookQueue": {URL: "http://q/p-webhooks", ARN: "arn:aws:sqs:us-east-1:000000000000:p-webhooks"}},
	}
	for in, want := range map[string]string{
		"${EventsTable.Arn}/index/pending": "arn:aws:dynamodb:" + template.Region + ":" + template.AccountID + ":table/p-events/index/pending",
		"${WebhookQueue.Arn}":              "arn:aws:sqs:us-east-1:000000000000:p-webhooks",
		"table ${EventsTable}":             "table p-events",
		"no variables":                     "no variables",
	} {
		if got, err := res.Resolve(in); err != nil || got != want {
			t.Errorf("Resolve(%q): got %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := res.Resolve("${Missing.Arn}"); err == nil {
		t.Error("Resolve of an unknown resource: got nil error")
	}
}

// TestProvisionAgainLeavesAnEnabledTTLAlone: a second run reads each
// table's TTL and asks for no change when it is already the template's
// (DynamoDB refuses to enable it twice, with an error only its text tells
// apart); a TTL on another attribute is set to the template's.
func TestProvisionAgainLeavesAnEnabledTTLAlone(t *testing.T) {
	ctx := context.Background()
	s := testenv.Provision(t, nil)
	var mu sync.Mutex
	var ops []string
	counted := dynamodb.NewFromConfig(s.AWS, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(
				middleware.InitializeMiddlewareFunc(
					"count",
					func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
						mu.Lock()
						ops = append(ops, awsmiddleware.GetOperationName(ctx))
						mu.Unlock()
						return next.HandleInitialize(ctx, in)
					},
				),
				middleware.After,
			)
		})
	})
	p := &provision.Provisioner{DynamoDB: counted, SQS: s.SQS, Prefix: s.Prefix}
	if _, err := p.Provision(ctx, s.Template); err != nil {
		t.Fatalf("second provision: %v", err)
	}
	if slices.Contains(ops, "UpdateTimeToLive") {
		t.Errorf("second provision: got %v, want no UpdateTimeToLive", ops)
	}

	events := s.Table("EventsTable")
	if _, err := s.DynamoDB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(events),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String("other"), Enabled: aws.Bool(true)},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Provision(ctx, s.Template); err != nil {
		t.Fatalf("provision over another TTL attribute: %v", err)
	}
	ttl, err := s.DynamoDB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(events)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != "expires_at" {
		t.Errorf("TTL attribute: got %s, want the template's expires_at", got)
	}
}

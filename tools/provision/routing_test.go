package provision_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

func partnerSource(t *testing.T) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "aws.partner/stripe.com/ed_test_" + hex.EncodeToString(b[:])
}

// TestRoutingIsCreatedFromTheTemplate: with Stripe's EventBridge
// destination on, the emulator's CloudFormation creates the template's
// bus (named after the partner source, associated with it), its rule
// (the template's pattern; the ingress queue as target, with the retry
// policy and the dead-letter queue) and the queue policy that lets only
// that rule send, on the queues Provision created; a second run changes
// nothing. moto's CloudFormation and EventBridge cannot run it (a bus name
// with "/", Ref of a bus): there the routing is left out and said so, and
// asking moto for it fails with the reason. The day moto can, this test
// fails and asks for the EventBridge tests to run there too.
func TestRoutingIsCreatedFromTheTemplate(t *testing.T) {
	ctx := context.Background()
	src := partnerSource(t)
	s := testenv.Provision(t, map[string]string{"StripeEventSourceName": src})
	cf := cloudformation.NewFromConfig(s.AWS)
	if testenv.Backend(t, "CloudFormation") != "localstack" {
		want := []string{"IngressQueuePolicy", "StripeEventBus", "StripeEventRule"}
		if !slices.Equal(s.Resources.LeftOut, want) || s.Resources.Routing != nil {
			t.Errorf("moto: left out %v, routing %v; want %v left out", s.Resources.LeftOut, s.Resources.Routing, want)
		}
		if _, ok := s.Resources.Queues["IngressQueue"]; !ok {
			t.Error("moto: the ingress queue is not provisioned")
		}
		p := &provision.Provisioner{DynamoDB: s.DynamoDB, SQS: s.SQS, CloudFormation: cf, Prefix: s.Prefix}
		_, err := p.Provision(ctx, s.Template)
		t.Logf("moto: %v", err)
		if err == nil || !strings.Contains(err.Error(), "LocalStack") {
			t.Errorf(
				"moto with a CloudFormation client: got %v, want the routing refused, naming LocalStack (if moto now runs it, run the EventBridge tests on moto too: docs/localstack.md)",
				err,
			)
		}
		return
	}
	if len(s.Resources.LeftOut) != 0 {
		t.Fatalf("left out %v on LocalStack", s.Resources.LeftOut)
	}
	eb := eventbridge.NewFromConfig(s.AWS)
	bus, err := eb.DescribeEventBus(ctx, &eventbridge.DescribeEventBusInput{Name: aws.String(src)})
	if err != nil || aws.ToString(bus.Name) != src || s.Resources.Routing["StripeEventBus"] != src {
		t.Fatalf("bus: got %+v (%v), routing %v; want one named %s", bus, err, s.Resources.Routing, src)
	}
	rules, err := eb.ListRules(ctx, &eventbridge.ListRulesInput{EventBusName: aws.String(src)})
	if err != nil || len(rules.Rules) != 1 {
		t.Fatalf("rules on the bus: got %+v (%v), want one", rules, err)
	}
	rule := rules.Rules[0]
	tmplRule, _ := s.Template.Resource("StripeEventRule")
	var got any
	if err := json.Unmarshal([]byte(aws.ToString(rule.EventPattern)), &got); err != nil {
		t.Fatal(err)
	}
	if want := tmplRule.Properties["EventPattern"]; !reflect.DeepEqual(got, want) {
		t.Errorf("rule's pattern: got %v, want the template's %v", got, want)
	}
	targets, err := eb.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: rule.Name, EventBusName: aws.String(src)})
	if err != nil || len(targets.Targets) != 1 {
		t.Fatalf("targets: got %+v (%v), want one", targets, err)
	}
	tg := targets.Targets[0]
	ingress, dlq := s.Queue("IngressQueue"), s.Queue("IngressDeadLetterQueue")
	if aws.ToString(tg.Arn) != ingress.ARN || tg.DeadLetterConfig == nil || aws.ToString(tg.DeadLetterConfig.Arn) != dlq.ARN ||
		tg.RetryPolicy == nil || aws.ToInt32(tg.RetryPolicy.MaximumRetryAttempts) != 185 || aws.ToInt32(tg.RetryPolicy.MaximumEventAgeInSeconds) != 86400 {
		t.Errorf("target: got %+v, want the ingress queue %s, retries 185 over 86400 s, dead letters to %s", tg, ingress.ARN, dlq.ARN)
	}
	for _, q := range []provision.Queue{ingress, dlq} {
		attrs, err := s.SQS.GetQueueAttributes(
			ctx,
			&sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNamePolicy}},
		)
		if err != nil {
			t.Fatal(err)
		}
		var policy struct {
			Statement []struct {
				Effect    string
				Principal map[string]any
				Action    any
				Condition map[string]map[string]any
			}
		}
		if err := json.Unmarshal([]byte(attrs.Attributes["Policy"]), &policy); err != nil || len(policy.Statement) != 1 {
			t.Fatalf("%s's policy: %q (%v), want one statement", q.Name, attrs.Attributes["Policy"], err)
		}
		st := policy.Statement[0]
		if st.Effect != "Allow" || st.Principal["Service"] != "events.amazonaws.com" || st.Action != "sqs:SendMessage" ||
			st.Condition["ArnEquals"]["aws:SourceArn"] != aws.ToString(rule.Arn) {
			t.Errorf("%s's policy: got %+v, want only the rule %s allowed to send", q.Name, st, aws.ToString(rule.Arn))
		}
	}

	// Again, as a restarted local stack provisions: nothing changes.
	p := &provision.Provisioner{DynamoDB: s.DynamoDB, SQS: s.SQS, CloudFormation: cf, Prefix: s.Prefix}
	again, err := p.Provision(ctx, s.Template)
	if err != nil {
		t.Fatalf("second provision: %v", err)
	}
	if !reflect.DeepEqual(again.Routing, s.Resources.Routing) {
		t.Errorf("routing after a second run: got %v, want %v", again.Routing, s.Resources.Routing)
	}
}

func TestRoutingStackName(t *testing.T) {
	for in, want := range map[string]string{
		"webhook-inbox-local":      "webhook-inbox-local-routing",
		"t1a2b3c-TestX_y":          "t1a2b3c-TestX-y-routing",
		"1abc":                     "r1abc-routing",
		"a.b/c":                    "a-b-c-routing",
		"webhook-inbox-dev-devcon": "webhook-inbox-dev-devcon-routing",
	} {
		if got := provision.RoutingStackName(in); got != want {
			t.Errorf("RoutingStackName(%q): got %q, want %q", in, got, want)
		}
	}
}

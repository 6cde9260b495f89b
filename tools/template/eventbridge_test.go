package template

import (
	"reflect"
	"regexp"
	"testing"
)

const testPartnerSource = "aws.partner/stripe.com/ed_test_template"

// TestStripeEventBridgeDestinationIsWiredAsDocumented: with the partner
// source named, the bus is named after it and associated with it; the
// rule's target is the ingress queue with EventBridge's longest retries and
// the dead-letter queue; the queue policy lets only that rule send; the
// ingress queue redrives to its own dead-letter queue, which an alarm
// watches; the bridge consumes the ingress queue in batches with partial
// batch failures, within its visibility timeout. A source that is not a
// Stripe partner source is refused before any deploy.
func TestStripeEventBridgeDestinationIsWiredAsDocumented(t *testing.T) {
	tmpl := load(t, map[string]string{"StripeEventSourceName": testPartnerSource})
	bus, ok := tmpl.Resource("StripeEventBus")
	if !ok || bus.Properties["Name"] != testPartnerSource || bus.Properties["EventSourceName"] != testPartnerSource {
		t.Errorf("StripeEventBus: got %v, want named after and associated with %s", bus.Properties, testPartnerSource)
	}
	rule, _ := tmpl.Resource("StripeEventRule")
	if ref, _, ok := Symbol(rule.Properties["EventBusName"]); !ok || ref.LogicalID != "StripeEventBus" || rule.Properties["State"] != "ENABLED" {
		t.Errorf("StripeEventRule: got bus %v, state %v; want StripeEventBus, ENABLED", rule.Properties["EventBusName"], rule.Properties["State"])
	}
	targets, _ := rule.Properties["Targets"].([]any)
	if len(targets) != 1 {
		t.Fatalf("StripeEventRule: got %d targets, want the ingress queue alone", len(targets))
	}
	target := targets[0].(map[string]any)
	_, arn, _ := Symbol(target["Arn"])
	_, dlq, _ := Symbol(target["DeadLetterConfig"].(map[string]any)["Arn"])
	retry := target["RetryPolicy"].(map[string]any)
	attempts, _ := Int(retry["MaximumRetryAttempts"])
	age, _ := Int(retry["MaximumEventAgeInSeconds"])
	if arn != (GetAtt{"IngressQueue", "Arn"}) || dlq != (GetAtt{"IngressDeadLetterQueue", "Arn"}) || attempts != 185 || age != 86400 {
		t.Errorf("the rule's target: got %v, want the ingress queue, 185 retries over 24 h, then IngressDeadLetterQueue", target)
	}

	policy, _ := tmpl.Resource("IngressQueuePolicy")
	var queues []string
	for _, q := range policy.Properties["Queues"].([]any) {
		ref, _, _ := Symbol(q)
		queues = append(queues, ref.LogicalID)
	}
	statements := policy.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any)
	st := statements[0].(map[string]any)
	_, source, _ := Symbol(st["Condition"].(map[string]any)["ArnEquals"].(map[string]any)["aws:SourceArn"])
	if !reflect.DeepEqual(queues, []string{"IngressQueue", "IngressDeadLetterQueue"}) || len(statements) != 1 || st["Effect"] != "Allow" ||
		!reflect.DeepEqual(
			st["Principal"],
			map[string]any{"Service": "events.amazonaws.com"},
		) || st["Action"] != "sqs:SendMessage" || source != (GetAtt{"StripeEventRule", "Arn"}) {
		t.Errorf(
			"IngressQueuePolicy: got queues %v, statements %v; want both queues, sqs:SendMessage for events.amazonaws.com on StripeEventRule's ARN only",
			queues,
			statements,
		)
	}

	ingress, _ := tmpl.Resource("IngressQueue")
	redrive := ingress.Properties["RedrivePolicy"].(map[string]any)
	_, target2, _ := Symbol(redrive["deadLetterTargetArn"])
	if target2 != (GetAtt{"IngressDeadLetterQueue", "Arn"}) {
		t.Errorf("IngressQueue's redrive: got %v, want IngressDeadLetterQueue", redrive)
	}
	alarm, ok := tmpl.Resource("IngressDeadLetterQueueAlarm")
	dims, _ := alarm.Properties["Dimensions"].([]any)
	if !ok || len(dims) != 1 {
		t.Fatalf("IngressDeadLetterQueueAlarm: got %v", alarm.Properties)
	}
	if _, q, _ := Symbol(dims[0].(map[string]any)["Value"]); q.LogicalID != "IngressDeadLetterQueue" {
		t.Errorf("IngressDeadLetterQueueAlarm watches %v, want IngressDeadLetterQueue", dims)
	}

	f, err := tmpl.Function("BridgeFunction")
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.SQS()
	if err != nil {
		t.Fatal(err)
	}
	visibility, _ := Int(ingress.Properties["VisibilityTimeout"])
	if src.Queue.LogicalID != "IngressQueue" || src.BatchSize != 10 || !src.ReportBatchItemFailures || src.MaxConcurrency < 2 || visibility < f.Timeout {
		t.Errorf(
			"the bridge's event source: got %+v, timeout %d s, visibility %d s; want the ingress queue, batches of 10 with partial failures, bounded concurrency, the timeout within the visibility",
			src,
			f.Timeout,
			visibility,
		)
	}
	for _, k := range []string{"EVENTBRIDGE_SOURCE", "EVENTBRIDGE_ACCOUNT", "INGRESS_DLQ_URL"} {
		if f.Environment[k] == nil {
			t.Errorf("the bridge's environment has no %s", k)
		}
	}

	// CloudFormation checks the parameter's AllowedPattern before a deploy.
	pattern := regexp.MustCompile(Scalar(tmpl.Parameters()["StripeEventSourceName"]["AllowedPattern"]))
	for v, want := range map[string]bool{
		"": true, testPartnerSource: true, "aws.partner/stripe.com/ed_61RM8ltWcTW4IH7sI16RLDUTQMMtqJyN1GNpLXDv5Zd0": true,
		"my.app/events": false, "aws.partner/other.com/ed_1": false, "aws.partner/stripe.com": false, "aws.partner/stripe.com/ed 1": false,
	} {
		if pattern.MatchString(v) != want {
			t.Errorf("StripeEventSourceName %q: accepted %v, want %v", v, !want, want)
		}
	}
}

// TestTheBridgeUsesTheCustomerKeyThroughItsServicesOnly: with KmsKeyArn
// the ingress queue and its dead-letter queue use the key, and the bridge
// may decrypt through DynamoDB and SQS (the table it writes, the queues it
// receives from) and generate data keys through SQS (to send); without
// it, SSE-SQS and no grant.
func TestTheBridgeUsesTheCustomerKeyThroughItsServicesOnly(t *testing.T) {
	const key = "arn:aws:kms:us-east-1:000000000000:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	for _, withKey := range []bool{false, true} {
		overrides := map[string]string{"StripeEventSourceName": testPartnerSource}
		if withKey {
			overrides["KmsKeyArn"] = key
		}
		tmpl := load(t, overrides)
		for _, id := range []string{"IngressQueue", "IngressDeadLetterQueue"} {
			q, _ := tmpl.Resource(id)
			if got := q.Properties["KmsMasterKeyId"]; withKey != (got == key) || withKey == (q.Properties["SqsManagedSseEnabled"] == true) {
				t.Errorf("key %v: %s: KmsMasterKeyId %v, SqsManagedSseEnabled %v", withKey, id, got, q.Properties["SqsManagedSseEnabled"])
			}
		}
		sids := policySids(t, tmpl, "BridgeFunction")
		for sid, want := range map[string]struct {
			action string
			via    []any
		}{
			// Decrypt through DynamoDB (the events table it writes) and
			// SQS (the queues it receives from and sends to); a data key
			// through SQS alone, to send.
			"UseCustomerKey":       {"kms:Decrypt", []any{"dynamodb." + Region + ".amazonaws.com", "sqs." + Region + ".amazonaws.com"}},
			"SendUnderCustomerKey": {"kms:GenerateDataKey", []any{"sqs." + Region + ".amazonaws.com"}},
		} {
			st, ok := sids[sid]
			if ok != withKey {
				t.Errorf("key %v: the bridge's %s present %v", withKey, sid, ok)
				continue
			}
			if !ok {
				continue
			}
			via := st["Condition"].(map[string]any)["StringEquals"].(map[string]any)["kms:ViaService"]
			if st["Action"] != want.action || st["Resource"] != key || !reflect.DeepEqual(via, want.via) {
				t.Errorf("the bridge's %s: got %v, want %s on the key, through %v only", sid, st, want.action, want.via)
			}
		}
	}
}

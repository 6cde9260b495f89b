package template

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func load(t *testing.T, overrides map[string]string) *Template {
	t.Helper()
	tmpl, err := Load("../../template.yaml", overrides)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestProcessorEventSourceComesFromTheTemplate(t *testing.T) {
	f, err := load(t, nil).Function("ProcessorFunction")
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.SQS()
	if err != nil {
		t.Fatal(err)
	}
	if src.Queue.LogicalID != "WebhookQueue" || src.BatchSize != 10 || !src.ReportBatchItemFailures || src.MaxConcurrency < 2 {
		t.Errorf("SQS source: got %+v", src)
	}
	if f.Timeout != 30 {
		t.Errorf("timeout: got %d, want 30", f.Timeout)
	}
}

func TestOverridesReachTheResources(t *testing.T) {
	tmpl := load(t, map[string]string{"MaxReceiveCount": "2", "QueueVisibilityTimeout": "12"})
	q, ok := tmpl.Resource("WebhookQueue")
	if !ok {
		t.Fatal("no WebhookQueue")
	}
	rp := q.Properties["RedrivePolicy"].(map[string]any)
	if n, _ := Int(rp["maxReceiveCount"]); n != 2 {
		t.Errorf("maxReceiveCount: got %v", rp["maxReceiveCount"])
	}
	if _, dlq, ok := Symbol(rp["deadLetterTargetArn"]); !ok || dlq.LogicalID != "DeadLetterQueue" || dlq.Attr != "Arn" {
		t.Errorf("deadLetterTargetArn: got %v", rp["deadLetterTargetArn"])
	}
	if v := Scalar(q.Properties["VisibilityTimeout"]); v != "12" {
		t.Errorf("VisibilityTimeout: got %q", v)
	}
	f, _ := tmpl.Function("ProcessorFunction")
	if got := Scalar(f.Environment["MAX_RECEIVE_COUNT"]); got != "2" {
		t.Errorf("MAX_RECEIVE_COUNT follows the redrive policy: got %q", got)
	}
	if ref, _, ok := Symbol(f.Environment["EVENTS_TABLE"]); !ok || ref.LogicalID != "EventsTable" {
		t.Errorf("EVENTS_TABLE (from Globals): got %v", f.Environment["EVENTS_TABLE"])
	}
}

func TestUnknownOverrideIsAnError(t *testing.T) {
	if _, err := Load("../../template.yaml", map[string]string{"NoSuchParameter": "1"}); err == nil {
		t.Fatal("got nil error for an unknown parameter override")
	}
}

func TestQueueVisibilityIsAtLeastSixProcessorTimeouts(t *testing.T) {
	tmpl := load(t, nil)
	f, _ := tmpl.Function("ProcessorFunction")
	q, _ := tmpl.Resource("WebhookQueue")
	vt, _ := Int(q.Properties["VisibilityTimeout"])
	if vt < 6*f.Timeout {
		t.Errorf("visibility timeout %ds < 6 x processor timeout %ds (AWS's guidance for SQS event sources)", vt, f.Timeout)
	}
}

func TestSubResolvesPseudoParametersLikeRef(t *testing.T) {
	r, ok := load(t, map[string]string{"WebhookSecretsParameter": "/w/secrets"}).Resource("ReceiverFunction")
	if !ok {
		t.Fatal("no ReceiverFunction")
	}
	var arns []string
	for _, p := range r.Properties["Policies"].([]any) {
		for _, st := range p.(map[string]any)["Statement"].([]any) {
			if s, ok := st.(map[string]any)["Resource"].(string); ok {
				arns = append(arns, s)
			}
		}
	}
	want := "arn:aws:ssm:" + Region + ":" + AccountID + ":parameter/w/secrets"
	found := false
	for _, a := range arns {
		found = found || a == want
	}
	if !found {
		t.Errorf("!Sub ARNs: got %v, want one to be %s", arns, want)
	}
	if got := sub("", []any{"${A}-${!B}-${X.Arn}", map[string]any{"A": "a"}}, nil); got != "a-${B}-${X.Arn}" {
		t.Errorf("sub with variables: got %v", got)
	}
}

// TestRulesKeepOtherStagesOffTheDevSecrets: the template's Rules, checked
// when it is loaded as CloudFormation checks them at deploy.
func TestRulesKeepOtherStagesOffTheDevSecrets(t *testing.T) {
	own := map[string]string{"WebhookSecretsParameter": "/webhook-inbox/prod/stripe/webhook-secrets", "ApiKeyParameter": "/webhook-inbox/prod/stripe/api-key"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	merge := func(a, b map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range a {
			m[k] = v
		}
		for k, v := range b {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		refused   bool
	}{
		{"dev with the defaults", nil, false},
		{"prod with the dev secrets", with("Stage", "prod"), true},
		{"live mode with the dev secrets", with("StripeMode", "live"), true},
		{"prod with its own secrets", merge(with("Stage", "prod", "StripeMode", "live"), own), false},
		{"prod with only its own API key", with("Stage", "prod", "ApiKeyParameter", own["ApiKeyParameter"]), true},
	} {
		_, err := Load("../../template.yaml", tc.overrides)
		if tc.refused && (err == nil || !strings.Contains(err.Error(), "OtherStagesNeedTheirOwnSecrets")) {
			t.Errorf("%s: got %v, want the rule's refusal", tc.name, err)
		}
		if !tc.refused && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestSamconfigEnvironmentsPassTheRules loads the template with each
// samconfig.toml environment's parameter_overrides, as `sam deploy
// --config-env` would send them.
func TestSamconfigEnvironmentsPassTheRules(t *testing.T) {
	data, err := os.ReadFile("../../samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?m)^\[(\w+)\.deploy\.parameters\]$`)
	list := regexp.MustCompile(`(?s)parameter_overrides = \[(.*?)\]`)
	item := regexp.MustCompile(`"([^"=]+)=([^"]*)"`)
	envs := map[string]map[string]string{}
	locs := section.FindAllStringSubmatchIndex(string(data), -1)
	for i, loc := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := string(data[loc[1]:end])
		m := list.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("samconfig.toml: [%s.deploy.parameters] has no parameter_overrides", data[loc[2]:loc[3]])
		}
		overrides := map[string]string{}
		for _, kv := range item.FindAllStringSubmatch(m[1], -1) {
			overrides[kv[1]] = kv[2]
		}
		envs[string(data[loc[2]:loc[3]])] = overrides
	}
	if len(envs) != 2 || envs["default"] == nil || envs["prod"] == nil {
		t.Fatalf("samconfig.toml environments: got %v, want default and prod", envs)
	}
	if envs["prod"]["StripeMode"] != "live" || envs["prod"]["Stage"] != "prod" {
		t.Errorf("prod overrides: got %v, want Stage=prod and StripeMode=live", envs["prod"])
	}
	for name, overrides := range envs {
		if _, err := Load("../../template.yaml", overrides); err != nil {
			t.Errorf("samconfig.toml %s: %v", name, err)
		}
	}
}

// conditional is a template whose resources depend on a parameter through
// Conditions, Fn::If and AWS::NoValue, as template.yaml's optional
// features do.
const conditional = `
Parameters:
  KeyArn: {Type: String, Default: ""}
Conditions:
  HasKey: !Not [!Equals [!Ref KeyArn, ""]]
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      KmsMasterKeyId: !If [HasKey, !Ref KeyArn, !Ref AWS::NoValue]
      SqsManagedSseEnabled: !If [HasKey, !Ref AWS::NoValue, true]
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Policies:
        - Statement:
            - {Sid: Always, Effect: Allow, Action: sqs:SendMessage, Resource: "*"}
            - !If
              - HasKey
              - {Sid: UseKey, Effect: Allow, Action: kms:Decrypt, Resource: !Ref KeyArn}
              - !Ref AWS::NoValue
  KeyAlarm:
    Type: AWS::CloudWatch::Alarm
    Condition: HasKey
    Properties: {}
`

func TestConditionsShapeTheDocumentAsCloudFormationDeploysIt(t *testing.T) {
	sids := func(tmpl *Template) []string {
		fn, _ := tmpl.Resource("Fn")
		var out []string
		for _, st := range fn.Properties["Policies"].([]any)[0].(map[string]any)["Statement"].([]any) {
			m, ok := st.(map[string]any)
			if !ok {
				t.Fatalf("statement: got %#v, want a map", st)
			}
			out = append(out, m["Sid"].(string))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		queue     map[string]any
		sids      []string
		alarm     bool
	}{
		{"condition false", nil, map[string]any{"SqsManagedSseEnabled": true}, []string{"Always"}, false},
		{"condition true", map[string]string{"KeyArn": "arn:aws:kms:us-east-1:000000000000:key/k"},
			map[string]any{"KmsMasterKeyId": "arn:aws:kms:us-east-1:000000000000:key/k"}, []string{"Always", "UseKey"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Parse([]byte(conditional), tc.overrides)
			if err != nil {
				t.Fatal(err)
			}
			q, _ := tmpl.Resource("Queue")
			if !reflect.DeepEqual(q.Properties, tc.queue) {
				t.Errorf("queue properties: got %v, want %v", q.Properties, tc.queue)
			}
			if got := sids(tmpl); !reflect.DeepEqual(got, tc.sids) {
				t.Errorf("statements: got %v, want %v", got, tc.sids)
			}
			if _, got := tmpl.Resource("KeyAlarm"); got != tc.alarm {
				t.Errorf("resource with Condition: HasKey present: got %v, want %v", got, tc.alarm)
			}
			if got := len(tmpl.Resources("AWS::CloudWatch::Alarm")); got != map[bool]int{true: 1}[tc.alarm] {
				t.Errorf("Resources(alarm): got %d", got)
			}
		})
	}
}

// TestRuleFunctions evaluates the rule-specific functions CloudFormation
// offers in Rules, as it does: Fn::Contains compares whole strings.
func TestRuleFunctions(t *testing.T) {
	rules := func(assert string) string {
		return `
Parameters:
  A: {Type: String, Default: /app/dev/a}
  B: {Type: String, Default: /app/dev/b}
Rules:
  R:
    Assertions:
      - Assert: ` + assert + `
        AssertDescription: refused
Resources: {}
`
	}
	for _, tc := range []struct {
		assert  string
		refused bool
	}{
		{`{"Fn::Contains": [[/app/dev/a, /x], !Ref A]}`, false},
		{`{"Fn::Contains": [[/app/dev/b, /x], !Ref A]}`, true},
		{`{"Fn::Contains": [[/app], !Ref A]}`, true}, // not a substring test
		{`!Not [{"Fn::Contains": [[!Ref B], !Ref A]}]`, false},
		{`{"Fn::EachMemberEquals": [[!Ref A, /app/dev/a], /app/dev/a]}`, false},
		{`{"Fn::EachMemberEquals": [[!Ref A, !Ref B], /app/dev/a]}`, true},
		{`{"Fn::EachMemberIn": [[!Ref A, !Ref B], [/app/dev/b, /app/dev/a, /c]]}`, false},
		{`{"Fn::EachMemberIn": [[!Ref A, /d], [/app/dev/a, /c]]}`, true},
	} {
		_, err := Parse([]byte(rules(tc.assert)), nil)
		switch {
		case tc.refused && (err == nil || !strings.Contains(err.Error(), "R: refused")):
			t.Errorf("%s: got %v, want the rule's refusal", tc.assert, err)
		case !tc.refused && err != nil:
			t.Errorf("%s: %v", tc.assert, err)
		}
	}
	_, err := Parse([]byte(rules(`{"Fn::EachMemberEquals": [{"Fn::ValueOfAll": ["AWS::EC2::VPC::Id", Tags.Team]}, x]}`)), nil)
	if err == nil || !strings.Contains(err.Error(), "Fn::ValueOfAll: not evaluated") {
		t.Errorf("Fn::ValueOfAll: got %v, want an error naming it", err)
	}
}

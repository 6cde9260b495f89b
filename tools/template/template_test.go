package template

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
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
		{"prod with its own secrets", merge(with("Stage", "prod", "StripeMode", "live", "AlarmEmail", "oncall@example.com"), own), false},
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

// policySids lists the Sids of a function's inline policy statements.
func policySids(t *testing.T, tmpl *Template, id string) map[string]map[string]any {
	t.Helper()
	r, ok := tmpl.Resource(id)
	if !ok {
		t.Fatalf("no %s", id)
	}
	out := map[string]map[string]any{}
	for _, p := range r.Properties["Policies"].([]any) {
		for _, st := range p.(map[string]any)["Statement"].([]any) {
			m := st.(map[string]any)
			out[m["Sid"].(string)] = m
		}
	}
	return out
}

// TestRulesGiveEachSecretItsOwnParameter: the secrets' parameters differ,
// and forwarding is configured whole (and signed in live mode).
func TestRulesGiveEachSecretItsOwnParameter(t *testing.T) {
	const w, a, f = "/webhook-inbox/dev/stripe/webhook-secrets", "/webhook-inbox/dev/stripe/api-key", "/webhook-inbox/dev/forward/secret"
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		refused   string // the rule, or "" for accepted
	}{
		{"one parameter for signing secrets and API key", map[string]string{"ApiKeyParameter": w}, "EachSecretHasItsOwnParameter"},
		{"forward secret in the signing secrets' parameter", map[string]string{"ForwardUrl": "https://app.example.com/events", "ForwardSecretParameter": w}, "EachSecretHasItsOwnParameter"},
		{"forward secret in the API key's parameter", map[string]string{"ForwardUrl": "https://app.example.com/events", "ForwardSecretParameter": a}, "EachSecretHasItsOwnParameter"},
		{"forward secret without a URL", map[string]string{"ForwardSecretParameter": f}, "ForwardSecretNeedsForwardUrl"},
		{"live forwarding unsigned", map[string]string{"Stage": "prod", "StripeMode": "live", "WebhookSecretsParameter": "/webhook-inbox/prod/w", "ApiKeyParameter": "/webhook-inbox/prod/a", "ForwardUrl": "https://app.example.com/events"}, "LiveForwardingIsSigned"},
		{"live forwarding signed", map[string]string{"Stage": "prod", "StripeMode": "live", "WebhookSecretsParameter": "/webhook-inbox/prod/w", "ApiKeyParameter": "/webhook-inbox/prod/a", "ForwardUrl": "https://app.example.com/events", "ForwardSecretParameter": "/webhook-inbox/prod/f", "AlarmEmail": "oncall@example.com"}, ""},
		{"prod without an alarm address", map[string]string{"Stage": "prod", "StripeMode": "live", "WebhookSecretsParameter": "/webhook-inbox/prod/w", "ApiKeyParameter": "/webhook-inbox/prod/a"}, "ProdAlarmsReachSomeone"},
		{"prod with an alarm address", map[string]string{"Stage": "prod", "StripeMode": "live", "WebhookSecretsParameter": "/webhook-inbox/prod/w", "ApiKeyParameter": "/webhook-inbox/prod/a", "AlarmEmail": "oncall@example.com"}, ""},
		{"another stage without an alarm address", map[string]string{"Stage": "staging", "WebhookSecretsParameter": "/webhook-inbox/staging/w", "ApiKeyParameter": "/webhook-inbox/staging/a"}, ""},
		{"test-mode forwarding unsigned", map[string]string{"ForwardUrl": "https://app.example.com/events"}, ""},
		{"own parameters", map[string]string{"ForwardUrl": "https://app.example.com/events", "ForwardSecretParameter": f}, ""},
		{"GitHub's secrets in Stripe's parameter", map[string]string{"GithubWebhookSecretsParameter": w}, "GithubSecretsHaveTheirOwnParameter"},
		{"GitHub's and Shopify's secrets in one parameter", map[string]string{"GithubWebhookSecretsParameter": "/webhook-inbox/dev/x", "ShopifyWebhookSecretsParameter": "/webhook-inbox/dev/x"}, "GithubSecretsHaveTheirOwnParameter"},
		{"Shopify's secrets in the forward secret's parameter", map[string]string{"ForwardUrl": "https://app.example.com/events", "ForwardSecretParameter": f, "ShopifyWebhookSecretsParameter": f}, "ShopifySecretsHaveTheirOwnParameter"},
		{"Standard Webhooks secrets in the API key's parameter", map[string]string{"StandardWebhookSecretsParameter": a}, "StandardSecretsHaveTheirOwnParameter"},
		{"Connect secrets in the platform's parameter", map[string]string{"StripeConnectWebhookSecretsParameter": w}, "StripeConnectSecretsHaveTheirOwnParameter"},
		{"Connect secrets in GitHub's parameter", map[string]string{"GithubWebhookSecretsParameter": "/webhook-inbox/dev/x", "StripeConnectWebhookSecretsParameter": "/webhook-inbox/dev/x"}, "StripeConnectSecretsHaveTheirOwnParameter"},
		{"Connect secrets, their own parameter", map[string]string{"StripeConnectWebhookSecretsParameter": "/webhook-inbox/dev/stripe/connect-webhook-secrets"}, ""},
		{"every provider, each its own parameter", map[string]string{"GithubWebhookSecretsParameter": "/webhook-inbox/dev/github/webhook-secrets", "ShopifyWebhookSecretsParameter": "/webhook-inbox/dev/shopify/webhook-secrets", "StandardWebhookSecretsParameter": "/webhook-inbox/dev/standard/webhook-secrets",
			"PaddleWebhookSecretsParameter": "/webhook-inbox/dev/paddle/webhook-secrets", "RazorpayWebhookSecretsParameter": "/webhook-inbox/dev/razorpay/webhook-secrets", "LemonsqueezyWebhookSecretsParameter": "/webhook-inbox/dev/lemonsqueezy/webhook-secrets",
			"SquareWebhookSecretsParameter": "/webhook-inbox/dev/square/webhook-secrets", "SquareWebhookUrl": "https://hooks.example.com/webhooks/square", "LivekitWebhookSecretsParameter": "/webhook-inbox/dev/livekit/webhook-secrets"}, ""},
		{"Paddle's and Standard Webhooks secrets in one parameter", map[string]string{"StandardWebhookSecretsParameter": "/webhook-inbox/dev/x", "PaddleWebhookSecretsParameter": "/webhook-inbox/dev/x"}, "StandardSecretsHaveTheirOwnParameter"},
		{"LiveKit's secrets in the GitHub token's parameter", map[string]string{"GitHubHooks": "repo:a/b/1", "GitHubTokenParameter": "/webhook-inbox/dev/t", "LivekitWebhookSecretsParameter": "/webhook-inbox/dev/t"}, "GitHubTokenHasItsOwnParameter"},
		{"Razorpay's secrets in Stripe's parameter", map[string]string{"RazorpayWebhookSecretsParameter": w}, "RazorpaySecretsHaveTheirOwnParameter"},
		{"Twilio's secrets without the URL it calls", map[string]string{"TwilioWebhookSecretsParameter": "/webhook-inbox/dev/twilio/webhook-secrets"}, "TwilioSecretsNeedTheUrl"},
		{"Square's secrets without its notification URL", map[string]string{"SquareWebhookSecretsParameter": "/webhook-inbox/dev/square/webhook-secrets"}, "SquareSecretsNeedTheNotificationUrl"},
		{"senders without their secrets' path", map[string]string{"GenericSenders": `[{"name":"n8n"}]`}, "GenericSendersNeedTheirSecretsPath"},
		{"a senders' path without senders", map[string]string{"GenericSendersSecretsPath": "/webhook-inbox/dev/senders"}, "GenericSendersSecretsPathNeedsSenders"},
		{"senders and their path", map[string]string{"GenericSenders": `[{"name":"n8n"}]`, "GenericSendersSecretsPath": "/webhook-inbox/dev/senders"}, ""},
	} {
		_, err := Load("../../template.yaml", tc.overrides)
		switch {
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused+":")):
			t.Errorf("%s: got %v, want refused by %s", tc.name, err, tc.refused)
		case tc.refused == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestProviderSecretsReachOnlyTheReceiverWhenSet: each provider's
// parameter variable, and the grant to read it, exist only when its
// template parameter is set; the route serves every provider's path.
func TestProviderSecretsReachOnlyTheReceiverWhenSet(t *testing.T) {
	off := load(t, nil)
	f, _ := off.Function("ReceiverFunction")
	for _, v := range []string{"STRIPE_CONNECT_WEBHOOK_SECRETS_PARAMETER", "GITHUB_WEBHOOK_SECRETS_PARAMETER", "SHOPIFY_WEBHOOK_SECRETS_PARAMETER", "STANDARD_WEBHOOK_SECRETS_PARAMETER",
		"PADDLE_WEBHOOK_SECRETS_PARAMETER", "RAZORPAY_WEBHOOK_SECRETS_PARAMETER", "LEMONSQUEEZY_WEBHOOK_SECRETS_PARAMETER", "SQUARE_WEBHOOK_SECRETS_PARAMETER", "LIVEKIT_WEBHOOK_SECRETS_PARAMETER"} {
		if _, ok := f.Environment[v]; ok {
			t.Errorf("no provider set: %s = %v, want unset", v, f.Environment[v])
		}
	}
	for _, sid := range []string{"ReadStripeConnectSigningSecrets", "ReadGithubSigningSecrets", "ReadShopifySigningSecrets", "ReadStandardSigningSecrets",
		"ReadPaddleSigningSecrets", "ReadRazorpaySigningSecrets", "ReadLemonsqueezySigningSecrets", "ReadSquareSigningSecrets", "ReadLivekitSigningSecrets"} {
		if _, ok := policySids(t, off, "ReceiverFunction")[sid]; ok {
			t.Errorf("no provider set: the receiver has %s", sid)
		}
	}
	paths := map[string]bool{}
	for _, r := range f.Routes() {
		paths[r.Method+" "+r.Path] = true
	}
	if !paths["POST /webhooks/stripe"] || !paths["POST /webhooks/{provider}"] {
		t.Errorf("routes: got %v, want POST /webhooks/stripe and POST /webhooks/{provider}", paths)
	}

	const gh = "/webhook-inbox/dev/github/webhook-secrets"
	on := load(t, map[string]string{"GithubWebhookSecretsParameter": gh})
	f, _ = on.Function("ReceiverFunction")
	if got := Scalar(f.Environment["GITHUB_WEBHOOK_SECRETS_PARAMETER"]); got != gh {
		t.Errorf("GitHub set: GITHUB_WEBHOOK_SECRETS_PARAMETER = %q, want %s", got, gh)
	}
	if _, ok := f.Environment["SHOPIFY_WEBHOOK_SECRETS_PARAMETER"]; ok {
		t.Error("GitHub set: SHOPIFY_WEBHOOK_SECRETS_PARAMETER is set too")
	}
	sids := policySids(t, on, "ReceiverFunction")
	if st, ok := sids["ReadGithubSigningSecrets"]; !ok || !strings.Contains(fmt.Sprint(st["Resource"]), gh) {
		t.Errorf("GitHub set: ReadGithubSigningSecrets = %v, want ssm:GetParameter on %s", st, gh)
	}
	if _, ok := sids["ReadShopifySigningSecrets"]; ok {
		t.Error("GitHub set: the receiver may read Shopify's secrets too")
	}

	const connect = "/webhook-inbox/dev/stripe/connect-webhook-secrets"
	on = load(t, map[string]string{"StripeConnectWebhookSecretsParameter": connect})
	f, _ = on.Function("ReceiverFunction")
	if got := Scalar(f.Environment["STRIPE_CONNECT_WEBHOOK_SECRETS_PARAMETER"]); got != connect {
		t.Errorf("Connect set: STRIPE_CONNECT_WEBHOOK_SECRETS_PARAMETER = %q, want %s", got, connect)
	}
	if st, ok := policySids(t, on, "ReceiverFunction")["ReadStripeConnectSigningSecrets"]; !ok || !strings.Contains(fmt.Sprint(st["Resource"]), connect) {
		t.Errorf("Connect set: ReadStripeConnectSigningSecrets = %v, want ssm:GetParameter on %s", st, connect)
	}
}

// TestForwardSettingsReachOnlyTheProcessor: FORWARD_URL and
// FORWARD_SECRET_PARAMETER, and the grant to read that parameter, exist
// only when the parameters are set.
func TestForwardSettingsReachOnlyTheProcessor(t *testing.T) {
	off := load(t, nil)
	f, _ := off.Function("ProcessorFunction")
	if _, ok := f.Environment["FORWARD_URL"]; ok {
		t.Errorf("forwarding off: FORWARD_URL = %v, want unset", f.Environment["FORWARD_URL"])
	}
	if _, ok := f.Environment["FORWARD_SECRET_PARAMETER"]; ok {
		t.Errorf("forwarding off: FORWARD_SECRET_PARAMETER = %v, want unset", f.Environment["FORWARD_SECRET_PARAMETER"])
	}
	if _, ok := policySids(t, off, "ProcessorFunction")["ReadForwardSecret"]; ok {
		t.Error("forwarding off: the processor may read a forward secret")
	}

	on := load(t, map[string]string{"ForwardUrl": "https://app.example.com/events", "ForwardSecretParameter": "/webhook-inbox/dev/forward/secret"})
	f, _ = on.Function("ProcessorFunction")
	if got := Scalar(f.Environment["FORWARD_URL"]); got != "https://app.example.com/events" {
		t.Errorf("FORWARD_URL: got %q", got)
	}
	if got := Scalar(f.Environment["FORWARD_SECRET_PARAMETER"]); got != "/webhook-inbox/dev/forward/secret" {
		t.Errorf("FORWARD_SECRET_PARAMETER: got %q", got)
	}
	st, ok := policySids(t, on, "ProcessorFunction")["ReadForwardSecret"]
	want := "arn:aws:ssm:" + Region + ":" + AccountID + ":parameter/webhook-inbox/dev/forward/secret"
	if !ok || st["Action"] != "ssm:GetParameter" || st["Resource"] != want {
		t.Errorf("ReadForwardSecret: got %v, want ssm:GetParameter on %s", st, want)
	}
	for _, id := range []string{"ReceiverFunction", "ReconcilerFunction"} {
		g, _ := on.Function(id)
		if _, ok := g.Environment["FORWARD_URL"]; ok {
			t.Errorf("%s gets FORWARD_URL", id)
		}
		if _, ok := policySids(t, on, id)["ReadForwardSecret"]; ok {
			t.Errorf("%s may read the forward secret", id)
		}
	}
}

// TestKmsKeyArnEncryptsEverythingAndGrantsTheFunctions: with KmsKeyArn the
// tables, queues (the reconciler's own dead letters aside), log groups and
// topic use the key, and each function may use it for what it does, and
// only through the services that hold its data under the key
// (kms:ViaService): Decrypt through DynamoDB (its tables), SQS (the queue
// it sends to or its event source receives from) and Parameter Store (its
// SecureStrings), GenerateDataKey through SQS alone, for the functions
// that send; without it, AWS-managed encryption and no grant.
func TestKmsKeyArnEncryptsEverythingAndGrantsTheFunctions(t *testing.T) {
	const key = "arn:aws:kms:us-east-1:000000000000:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	via := func(services ...string) map[string]any {
		var v []any
		for _, s := range services {
			v = append(v, s+"."+Region+".amazonaws.com")
		}
		return map[string]any{"StringEquals": map[string]any{"kms:ViaService": v}}
	}
	type grant struct {
		action    any
		condition map[string]any
	}
	decrypt := grant{"kms:Decrypt", via("dynamodb", "sqs", "ssm")}
	send := grant{"kms:GenerateDataKey", via("sqs")}
	grants := map[string]map[string]grant{
		"ReceiverFunction":   {"UseCustomerKey": decrypt, "SendUnderCustomerKey": send},
		"ProcessorFunction":  {"UseCustomerKey": decrypt},
		"ReconcilerFunction": {"UseCustomerKey": decrypt, "SendUnderCustomerKey": send},
	}
	for _, withKey := range []bool{false, true} {
		overrides := map[string]string{}
		if withKey {
			overrides["KmsKeyArn"] = key
		}
		tmpl := load(t, overrides)
		for _, r := range tmpl.Resources("AWS::DynamoDB::Table") {
			sse := r.Properties["SSESpecification"].(map[string]any)
			want := map[string]any{"SSEEnabled": true}
			if withKey {
				want = map[string]any{"SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": key}
			}
			if !reflect.DeepEqual(sse, want) {
				t.Errorf("key %v: %s SSESpecification: got %v, want %v", withKey, r.LogicalID, sse, want)
			}
		}
		for _, r := range tmpl.Resources("AWS::SQS::Queue") {
			usesKey := withKey && r.LogicalID != "ReconcilerDeadLetterQueue"
			if got := r.Properties["KmsMasterKeyId"]; usesKey != (got == key) || (got != nil && got != key) {
				t.Errorf("key %v: %s KmsMasterKeyId: got %v", withKey, r.LogicalID, got)
			}
			if got := r.Properties["SqsManagedSseEnabled"]; usesKey != (got == nil) {
				t.Errorf("key %v: %s SqsManagedSseEnabled: got %v", withKey, r.LogicalID, got)
			}
		}
		for _, typ := range []string{"AWS::Logs::LogGroup", "AWS::SNS::Topic"} {
			prop := map[string]string{"AWS::Logs::LogGroup": "KmsKeyId", "AWS::SNS::Topic": "KmsMasterKeyId"}[typ]
			rs := tmpl.Resources(typ)
			if len(rs) == 0 {
				t.Fatalf("no %s", typ)
			}
			for _, r := range rs {
				if got, want := r.Properties[prop], map[bool]any{true: key}[withKey]; got != want {
					t.Errorf("key %v: %s %s: got %v, want %v", withKey, r.LogicalID, prop, got, want)
				}
			}
		}
		for id, want := range grants {
			sids := policySids(t, tmpl, id)
			for sid, g := range want {
				st, ok := sids[sid]
				if ok != withKey ||
					(ok && (!reflect.DeepEqual(st["Action"], g.action) || st["Resource"] != key || !reflect.DeepEqual(st["Condition"], g.condition))) {
					t.Errorf(
						"key %v: %s %s: got %v (present %v), want %v on the key with condition %v, only with KmsKeyArn",
						withKey,
						id,
						sid,
						st,
						ok,
						g.action,
						g.condition,
					)
				}
			}
			for sid, st := range sids {
				if _, ok := want[sid]; !ok && strings.Contains(fmt.Sprint(st["Action"]), "kms:") {
					t.Errorf("key %v: %s %s: a grant on the key beside %v: %v", withKey, id, sid, want, st)
				}
			}
		}
	}
}

// TestReconcilerRunsOneAtATimeAndKeepsItsFailures: a single run at a time
// (its rate limit is per run), no Lambda retries, the scheduler's retries
// bounded, and both kinds of failure kept in a queue an alarm watches.
func TestReconcilerRunsOneAtATimeAndKeepsItsFailures(t *testing.T) {
	tmpl := load(t, nil)
	r, _ := tmpl.Resource("ReconcilerFunction")
	p := r.Properties
	if n, _ := Int(p["ReservedConcurrentExecutions"]); n != 1 {
		t.Errorf("ReservedConcurrentExecutions: got %v, want 1", p["ReservedConcurrentExecutions"])
	}
	if n, ok := Int(p["EventInvokeConfig"].(map[string]any)["MaximumRetryAttempts"]); !ok || n != 0 {
		t.Errorf("EventInvokeConfig.MaximumRetryAttempts: got %v, want 0", p["EventInvokeConfig"])
	}
	dlq, _ := p["DeadLetterQueue"].(map[string]any)
	if _, target, ok := Symbol(dlq["TargetArn"]); dlq["Type"] != "SQS" || !ok || target != (GetAtt{"ReconcilerDeadLetterQueue", "Arn"}) {
		t.Errorf("DeadLetterQueue: got %v, want the SQS queue ReconcilerDeadLetterQueue", dlq)
	}
	f, _ := tmpl.Function("ReconcilerFunction")
	sched := f.Events["Schedule"]
	retry, _ := sched.Properties["RetryPolicy"].(map[string]any)
	attempts, _ := Int(retry["MaximumRetryAttempts"])
	age, _ := Int(retry["MaximumEventAgeInSeconds"])
	if sched.Type != "ScheduleV2" || retry == nil || attempts > 5 || age < 60 || age > 600 {
		t.Errorf("schedule RetryPolicy: got %v, want a few retries within minutes", retry)
	}
	sdlq, _ := sched.Properties["DeadLetterConfig"].(map[string]any)
	if _, target, ok := Symbol(sdlq["Arn"]); !ok || target.LogicalID != "ReconcilerDeadLetterQueue" {
		t.Errorf("schedule DeadLetterConfig: got %v, want ReconcilerDeadLetterQueue", sdlq)
	}
	watched := false
	for _, a := range tmpl.Resources("AWS::CloudWatch::Alarm") {
		for _, d := range a.Properties["Dimensions"].([]any) {
			if _, v, ok := Symbol(d.(map[string]any)["Value"]); ok && v.LogicalID == "ReconcilerDeadLetterQueue" {
				watched = true
			}
		}
	}
	if !watched {
		t.Error("no alarm watches ReconcilerDeadLetterQueue")
	}
}

// TestEveryFunctionKnowsItsStage: the functions refuse secret parameters
// outside their stage's path, so each gets STAGE.
func TestEveryFunctionKnowsItsStage(t *testing.T) {
	tmpl := load(t, map[string]string{"Stage": "staging", "WebhookSecretsParameter": "/webhook-inbox/staging/w", "ApiKeyParameter": "/webhook-inbox/staging/a"})
	for _, id := range tmpl.Functions() {
		f, _ := tmpl.Function(id)
		if got := Scalar(f.Environment["STAGE"]); got != "staging" {
			t.Errorf("%s: STAGE=%q, want staging", id, got)
		}
	}
}

// TestEveryScannerSkipSaysWhy: each checkov check skipped in the template
// carries its reason, for the reviewer reading the template.
func TestEveryScannerSkipSaysWhy(t *testing.T) {
	n := 0
	for id, raw := range load(t, nil).section("Resources") {
		meta, _ := raw.(map[string]any)["Metadata"].(map[string]any)
		ckv, _ := meta["checkov"].(map[string]any)
		skips, _ := ckv["skip"].([]any)
		for _, s := range skips {
			m, _ := s.(map[string]any)
			check, _ := m["id"].(string)
			comment, _ := m["comment"].(string)
			if !strings.HasPrefix(check, "CKV_") || len(strings.Fields(comment)) < 5 {
				t.Errorf("%s: skip %v: want a check id and a one-line reason", id, s)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("no checkov skips found: has the Metadata layout changed?")
	}
}

func TestGlobalsAreReadable(t *testing.T) {
	g := load(t, nil).Globals("Function")
	if v, _ := Int(g["MemorySize"]); v != 256 {
		t.Errorf("Globals.Function.MemorySize: got %v, want 256", g["MemorySize"])
	}
	if got := load(t, nil).Globals("NoSuchKind"); got != nil {
		t.Errorf("Globals of an absent kind: got %v, want nil", got)
	}
}

// TestEveryProviderOfTheTableHasItsSecretsParameter: each provider of
// package provider's table but Stripe has its template parameter
// (<Name>WebhookSecretsParameter, the name the local stack and the
// failure-point enumeration set), which sets its variable and grants the
// receiver the read of that parameter alone; and its settings' variables
// (provider.SettingVariable) reach the receiver.
func TestEveryProviderOfTheTableHasItsSecretsParameter(t *testing.T) {
	for _, spec := range provider.All {
		if spec.Name == provider.Stripe {
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			cap := strings.ToUpper(spec.Name[:1]) + spec.Name[1:]
			param := "/webhook-inbox/dev/" + spec.Name + "/webhook-secrets"
			over := map[string]string{cap + "WebhookSecretsParameter": param}
			for _, s := range spec.Settings {
				over[cap+"Webhook"+strings.ToUpper(s[:1])+s[1:]] = "https://hooks.example.com/webhooks/" + spec.Name
			}
			tmpl, err := Load("../../template.yaml", over)
			if err != nil {
				t.Fatal(err)
			}
			f, _ := tmpl.Function("ReceiverFunction")
			if got := Scalar(f.Environment[strings.ToUpper(spec.Name)+"_WEBHOOK_SECRETS_PARAMETER"]); got != param {
				t.Errorf("%s_WEBHOOK_SECRETS_PARAMETER = %q, want %s", strings.ToUpper(spec.Name), got, param)
			}
			for _, s := range spec.Settings {
				if got := Scalar(f.Environment[provider.SettingVariable(spec.Name, s)]); got == "" {
					t.Errorf("%s: unset, want the template parameter's value", provider.SettingVariable(spec.Name, s))
				}
			}
			st, ok := policySids(t, tmpl, "ReceiverFunction")["Read"+cap+"SigningSecrets"]
			if !ok || !strings.Contains(fmt.Sprint(st["Resource"]), param) {
				t.Errorf("Read%sSigningSecrets = %v, want ssm:GetParameter on %s", cap, st, param)
			}
		})
	}
}

// TestDeclaredSendersReachTheReceiverWhenSet: GENERIC_SENDERS and its
// secrets' path reach the receiver (and the declarations the reconciler's
// stuck sweep), with the grant to read the parameters under that path
// alone, only when senders are declared.
func TestDeclaredSendersReachTheReceiverWhenSet(t *testing.T) {
	off := load(t, nil)
	f, _ := off.Function("ReceiverFunction")
	for _, v := range []string{"GENERIC_SENDERS", "GENERIC_SENDERS_SECRETS_PATH"} {
		if _, ok := f.Environment[v]; ok {
			t.Errorf("no sender declared: %s is set", v)
		}
	}
	if _, ok := policySids(t, off, "ReceiverFunction")["ReadGenericSendersSigningSecrets"]; ok {
		t.Error("no sender declared: the receiver may read the senders' secrets")
	}
	const decl, path = `[{"name":"n8n","signature_header":"x-n8n-signature","id_field":"id"}]`, "/webhook-inbox/dev/senders"
	on := load(t, map[string]string{"GenericSenders": decl, "GenericSendersSecretsPath": path})
	f, _ = on.Function("ReceiverFunction")
	if got := Scalar(f.Environment["GENERIC_SENDERS"]); got != decl {
		t.Errorf("GENERIC_SENDERS = %q, want the declarations", got)
	}
	if got := Scalar(f.Environment["GENERIC_SENDERS_SECRETS_PATH"]); got != path {
		t.Errorf("GENERIC_SENDERS_SECRETS_PATH = %q, want %s", got, path)
	}
	st, ok := policySids(t, on, "ReceiverFunction")["ReadGenericSendersSigningSecrets"]
	if !ok || !strings.Contains(fmt.Sprint(st["Resource"]), "parameter"+path+"/*") {
		t.Errorf("ReadGenericSendersSigningSecrets = %v, want ssm:GetParameter on %s/*", st, path)
	}
	r, _ := on.Function("ReconcilerFunction")
	if got := Scalar(r.Environment["GENERIC_SENDERS"]); got != decl {
		t.Errorf("reconciler: GENERIC_SENDERS = %q, want the declarations", got)
	}
}

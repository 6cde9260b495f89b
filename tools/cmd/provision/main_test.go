package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

func TestProvisionsTheTemplateTwiceWithTheSameResult(t *testing.T) {
	cfg := testenv.AWS(t)
	prefix := testenv.Prefix(t)
	param := "/webhook-inbox/" + prefix + "/webhook-secrets"
	env := func(k string) string {
		return map[string]string{"AWS_ENDPOINT_URL": testenv.Endpoint(t), "STRIPE_WEBHOOK_SECRET": "whsec_provision_test"}[k]
	}
	args := []string{"-prefix", prefix, "-parameter-overrides", "MaxReceiveCount=2 WebhookSecretsParameter=" + param}
	var outs [2]Output
	for i := range outs {
		var stdout, stderr bytes.Buffer
		if code := run(args, env, &stdout, &stderr); code != 0 {
			t.Fatalf("run %d: exit %d: %s", i+1, code, stderr.String())
		}
		if err := json.Unmarshal(stdout.Bytes(), &outs[i]); err != nil {
			t.Fatalf("run %d: output is not JSON: %v\n%s", i+1, err, stdout.String())
		}
	}
	if a, _ := json.Marshal(outs[0]); !bytes.Equal(a, must(json.Marshal(outs[1]))) {
		t.Errorf("second run differs:\n%s\n%s", a, must(json.Marshal(outs[1])))
	}
	out := outs[0]
	ctx := context.Background()
	if _, err := dynamodb.NewFromConfig(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(out.Tables["EventsTable"])}); err != nil {
		t.Errorf("events table: %v", err)
	}
	q := out.Queues["WebhookQueue"]
	attrs, err := sqs.NewFromConfig(cfg).
		GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.URL), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
	if err != nil {
		t.Fatal(err)
	}
	var redrive struct {
		MaxReceiveCount     json.Number `json:"maxReceiveCount"`
		DeadLetterTargetArn string      `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(attrs.Attributes["RedrivePolicy"]), &redrive); err != nil || redrive.MaxReceiveCount != "2" ||
		redrive.DeadLetterTargetArn != out.Queues["DeadLetterQueue"].ARN {
		t.Errorf("queue redrive policy: got %s (%v), want maxReceiveCount 2 (the override) to the DLQ", attrs.Attributes["RedrivePolicy"], err)
	}
	if got := out.Functions["ReceiverFunction"]["EVENTS_TABLE"]; got != out.Tables["EventsTable"] {
		t.Errorf("receiver EVENTS_TABLE: got %q, want %q", got, out.Tables["EventsTable"])
	}
	p, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(param), WithDecryption: aws.Bool(true)})
	if err != nil || aws.ToString(p.Parameter.Value) != "whsec_provision_test" || p.Parameter.Type != "SecureString" {
		t.Errorf("signing secret: got %+v (%v), want a SecureString", p, err)
	}
}

func TestRefusesWithoutAnEmulatorEndpoint(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(nil, func(string) string { return "" }, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "AWS_ENDPOINT_URL") {
		t.Fatalf("got exit %d %q, want a refusal naming AWS_ENDPOINT_URL", code, stderr.String())
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestMain lets the test binary stand in for the provision binary (as the
// init hook's $bin), so the hook test needs no second build of the SDK.
func TestMain(m *testing.M) {
	if os.Getenv("PROVISION_TEST_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// The LocalStack init hook, run here as LocalStack runs it (CI has no
// Docker): the provision command and template.yaml where the compose file
// mounts them, against the emulator.
func TestLocalStackInitHookProvisions(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nPROVISION_TEST_AS_MAIN=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(home, "bin", "provision"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "template.yaml"), tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := testenv.Prefix(t)
	hook := exec.Command("bash", filepath.Join(root, "localstack", "init", "ready.d", "10-provision.sh"))
	hook.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"WEBHOOK_INBOX_HOME=" + home,
		"WEBHOOK_INBOX_PREFIX=" + prefix,
		"WEBHOOK_INBOX_PARAMETER_OVERRIDES=WebhookSecretsParameter=/webhook-inbox/" + prefix + "/secrets ApiKeyParameter=/webhook-inbox/" + prefix + "/api-key",
	}
	// LocalStack's container would have every service; on the host,
	// DynamoDB may have an endpoint of its own (make test-localstack).
	hook.Env = testenv.Endpoints(t).Environ(hook.Env)
	var stdout, stderr bytes.Buffer
	hook.Stdout, hook.Stderr = &stdout, &stderr
	if err := hook.Run(); err != nil {
		t.Fatalf("hook: %v\n%s", err, stderr.String())
	}
	var out Output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("hook output is not the resources' JSON: %v\n%s", err, stdout.String())
	}
	if out.Tables["EventsTable"] != prefix+"-EventsTable" || out.Queues["DeadLetterQueue"].URL == "" {
		t.Errorf("resources: got %+v", out)
	}
	if _, err := dynamodb.NewFromConfig(testenv.AWS(t)).DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(out.Tables["MirrorTable"])}); err != nil {
		t.Errorf("mirror table: %v", err)
	}
}

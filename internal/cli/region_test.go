package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// sharedConfig points the SDK at a shared config file holding profile
// inbox-eu (region eu-west-1, the emulators' credentials) and clears the
// process's region variables, which the SDK also reads.
func sharedConfig(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	if err := os.WriteFile(cfg, []byte("[profile inbox-eu]\nregion = eu-west-1\naws_access_key_id = test\naws_secret_access_key = test\n\n[profile no-region]\naws_access_key_id = test\naws_secret_access_key = test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", cfg)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
}

// TestRegionIsTheSDKs: inboxctl finds its region as the SDK and the AWS
// CLI do (the flag, AWS_REGION, AWS_DEFAULT_REGION, the profile's), not a
// fixed us-east-1 that sends a profile of another region to a region where
// its stack is not. Only the local stack, which nothing names, keeps the
// emulators' us-east-1.
func TestRegionIsTheSDKs(t *testing.T) {
	sharedConfig(t)
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // the region, or the usage error's text
		code int
	}{
		{"the profile's region", []string{"--profile", "inbox-eu", "--stage", "prod"}, nil, "eu-west-1", 0},
		{"AWS_REGION over the profile's", []string{"--profile", "inbox-eu"}, map[string]string{"AWS_REGION": "ap-south-1"}, "ap-south-1", 0},
		{"AWS_DEFAULT_REGION", []string{"--stage", "prod"}, map[string]string{"AWS_DEFAULT_REGION": "eu-central-1"}, "eu-central-1", 0},
		{"--region over everything", []string{"--profile", "inbox-eu", "--region", "us-west-2"}, map[string]string{"AWS_REGION": "ap-south-1"}, "us-west-2", 0},
		{"the local stack", nil, nil, "us-east-1", 0},
		{"a stage and no region anywhere", []string{"--profile", "no-region", "--stage", "prod"}, nil, "no AWS region: pass --region, set AWS_REGION, or set the profile's region", ExitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			a := &app{stderr: &stderr, getenv: func(k string) string { return tc.env[k] }, now: time.Now}
			cmd := a.root()
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := a.aws(context.Background())
			if tc.code != 0 {
				var ue usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want a usage error saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != tc.want {
				t.Errorf("region %q, want %q", cfg.Region, tc.want)
			}
		})
	}
}

// createStack creates, in the emulator's CloudFormation in region, a
// stack named name whose outputs are outputs, and waits for it.
func createStack(t *testing.T, w *world, region, name string, outputs map[string]string) {
	t.Helper()
	outs := map[string]any{}
	for k, v := range outputs {
		outs[k] = map[string]any{"Value": v}
	}
	tmpl, _ := json.Marshal(map[string]any{
		"AWSTemplateFormatVersion": "2010-09-09",
		"Resources":                map[string]any{"Placeholder": map[string]any{"Type": "AWS::SQS::Queue"}},
		"Outputs":                  outs,
	})
	cfg := w.s.AWS.Copy()
	cfg.Region = region
	client := cloudformation.NewFromConfig(cfg)
	_, err := client.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(string(tmpl))})
	// Names are unique to the run, so "already exists" means the SDK
	// retried our own create whose first answer came too late.
	var exists *cftypes.AlreadyExistsException
	if err != nil && !errors.As(err, &exists) {
		t.Fatal(err)
	}
	if err := cloudformation.NewStackCreateCompleteWaiter(client, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, time.Second
	}).Wait(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(name)}, time.Minute); err != nil {
		t.Fatalf("stack %s: %v", name, err)
	}
}

// TestStackInTheProfilesRegion: a stack in the profile's region (not
// us-east-1) is found, by --stage and by --stack for a stack of any name.
func TestStackInTheProfilesRegion(t *testing.T) {
	w := newWorld(t, false)
	sharedConfig(t)
	ctx := context.Background()
	// Not an execute-api host: LocalStack rewrites those in stack outputs
	// to its own address.
	const url = "https://inbox-eu.example.com/webhooks/stripe"
	// Names unique to this run: the emulator may be shared with other runs.
	run := time.Now().UnixNano() % 1e9
	stage, stack := fmt.Sprintf("eu%d", run), fmt.Sprintf("billing-inbox-%d", run)
	createStack(t, w, "eu-west-1", StackName(stage), map[string]string{"WebhookUrl": url})
	createStack(t, w, "eu-west-1", stack, map[string]string{"WebhookUrl": url + "?stack"})

	c := w.cli()
	c.prefix = ""
	c.env = map[string]string{}
	for _, tc := range []struct {
		target []string
		want   string
	}{
		{[]string{"--stage", stage}, url},
		{[]string{"--stack", stack}, url + "?stack"},
	} {
		args := append(append(append([]string{"--profile", "inbox-eu"}, tc.target...), endpointFlags(t)...), "types", "--json")
		r := c.run(ctx, args...).must(t, 0)
		var out TypesJSON
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.WebhookURL != tc.want {
			t.Errorf("%v: webhook_url %q (%v), want %q", tc.target, out.WebhookURL, err, tc.want)
		}
	}

	// The same stage elsewhere names the region it looked in.
	r := c.run(ctx, append(append([]string{"--profile", "inbox-eu", "--region", "us-east-1", "--stage", "euprod"}, endpointFlags(t)...), "types")...).must(t, 1)
	if !strings.Contains(r.stderr, "no stack webhook-inbox-euprod in us-east-1") || !strings.Contains(r.stderr, "--stack names any other") {
		t.Errorf("a stack in another region: %s", r.stderr)
	}
	r = c.run(ctx, "--stage", "euprod", "--stack", "billing-inbox", "types").must(t, 2)
	if !strings.Contains(r.stderr, "pass one") {
		t.Errorf("--stage and --stack: %s", r.stderr)
	}
	c.run(ctx, "--stack", "2bad_name", "types").must(t, 2)
}

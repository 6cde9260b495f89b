// Command provision creates the tables and queues of template.yaml on an AWS
// emulator (LocalStack, moto) and stores the local secrets where the
// template says the functions read them, with the same template-derived
// provisioner the local stack and the tests use. It is idempotent: run it as
// often as you like. LocalStack's init hook (localstack/init/ready.d) runs it
// inside the container.
//
// It only talks to AWS_ENDPOINT_URL, which must be set: real AWS accounts
// are deployed with `sam deploy`, never with this command.
//
//	AWS_ENDPOINT_URL=http://localhost:4566 go run ./tools/cmd/provision
//
// It prints the provisioned resources and each function's resolved
// environment as JSON.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/webhook-inbox/webhook-inbox/internal/awsconfig"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/provision"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// Output is what provision prints.
type Output struct {
	Endpoint  string                       `json:"endpoint"`
	Prefix    string                       `json:"prefix"`
	Tables    map[string]string            `json:"tables"`
	Queues    map[string]provision.Queue   `json:"queues"`
	Functions map[string]map[string]string `json:"functions"`
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("provision", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tmplPath := fs.String("template", defaultTemplate(), "path of template.yaml")
	prefix := fs.String("prefix", "webhook-inbox-local", "name prefix of the tables and queues (make dev uses webhook-inbox-local)")
	params := fs.String("parameter-overrides", "", "template parameter overrides, as Key=Value pairs separated by spaces")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "provision:", err)
		return 1
	}
	endpoint := getenv("AWS_ENDPOINT_URL")
	if endpoint == "" {
		return fail(errors.New("AWS_ENDPOINT_URL is not set: this command provisions an emulator (like http://localhost:4566); deploy to AWS with sam deploy"))
	}
	overrides := map[string]string{}
	for _, kv := range strings.Fields(*params) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintf(stderr, "provision: -parameter-overrides: %q is not Key=Value\n", kv)
			return 2
		}
		overrides[k] = v
	}
	t, err := template.Load(*tmplPath, overrides)
	if err != nil {
		return fail(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return fail(err)
	}
	p := &provision.Provisioner{DynamoDB: dynamodb.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg), Prefix: *prefix}
	res, err := p.Provision(ctx, t)
	if err != nil {
		return fail(err)
	}
	secret := getenv("STRIPE_WEBHOOK_SECRET")
	if secret == "" {
		secret = devstack.DefaultWebhookSecret
	}
	if err := putSecrets(ctx, ssm.NewFromConfig(cfg), t, map[string]string{
		"WebhookSecretsParameter": secret,
		"ApiKeyParameter":         getenv("STRIPE_API_KEY"),
	}); err != nil {
		return fail(err)
	}

	out := Output{Endpoint: endpoint, Prefix: *prefix, Tables: res.Tables, Queues: res.Queues, Functions: map[string]map[string]string{}}
	for _, id := range t.Functions() {
		f, err := t.Function(id)
		if err != nil {
			return fail(err)
		}
		if out.Functions[id], err = res.Environment(f); err != nil {
			return fail(err)
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fail(err)
	}
	return 0
}

// putSecrets stores each value as a SecureString under the parameter name
// the template parameter param holds, as a deployment's operator does with
// `aws ssm put-parameter`. Empty values are skipped.
func putSecrets(ctx context.Context, client *ssm.Client, t *template.Template, values map[string]string) error {
	for param, value := range values {
		name, ok := t.Parameter(param)
		if !ok || value == "" {
			continue
		}
		_, err := client.PutParameter(ctx, &ssm.PutParameterInput{
			Name: aws.String(name), Value: aws.String(value),
			Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true),
		})
		if err != nil {
			// The error names the parameter, never its value.
			return fmt.Errorf("store parameter %s: %w", name, err)
		}
	}
	return nil
}

// defaultTemplate is the project's template.yaml, or ./template.yaml
// outside the project (inside the LocalStack container).
func defaultTemplate() string {
	if root, err := repo.Root(); err == nil {
		return filepath.Join(root, "template.yaml")
	}
	return "template.yaml"
}

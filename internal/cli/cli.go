// Package cli implements inboxctl, the operator's command line: send test
// deliveries, and inspect, replay and repair events, against the local stack
// or a deployed one, with the same configuration as the functions.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/devstack"
	"github.com/webhook-inbox/webhook-inbox/shared/boot"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// LocalEndpoint is the local stack's emulator.
const LocalEndpoint = "http://127.0.0.1:4566"

// usageError marks errors in how the command was called.
type usageError struct{ error }

// app holds the global flags and the clients built from them.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string

	endpoint, region, profile, stage, prefix string
	eventsTable, mirrorTable, queueURL       string

	cfg *aws.Config
}

// Run executes inboxctl with args and returns its exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv}
	root := a.root()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "inboxctl:", err)
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown ") || strings.Contains(err.Error(), "flag") || strings.Contains(err.Error(), "arg(s)") {
		fmt.Fprintln(stderr, "Run 'inboxctl --help' for usage.")
		return ExitUsage
	}
	return ExitFailure
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "inboxctl",
		Short:         "Inspect, replay and repair webhook-inbox events",
		SilenceUsage:  true,
		SilenceErrors: true,
		Long: `inboxctl talks to a webhook-inbox stack: the local one (make dev) by default,
or a deployed one with --stage (and --profile/--region).

Configuration comes from the same environment as the functions
(EVENTS_TABLE, MIRROR_TABLE, QUEUE_URL, AWS_ENDPOINT_URL, AWS_REGION,
STRIPE_WEBHOOK_SECRET); flags override it.`,
	}
	f := root.PersistentFlags()
	f.StringVar(&a.endpoint, "endpoint", "", "AWS endpoint URL (default: AWS_ENDPOINT_URL, else the local stack's emulator unless --stage or --profile is given)")
	f.StringVar(&a.region, "region", "", "AWS region (default: AWS_REGION, else us-east-1)")
	f.StringVar(&a.profile, "profile", "", "AWS shared-config profile")
	f.StringVar(&a.stage, "stage", "", "deployed stage: resolve tables and queues from the stack's outputs")
	f.StringVar(&a.prefix, "prefix", "webhook-inbox-local", "resource name prefix of the local stack")
	f.StringVar(&a.eventsTable, "events-table", "", "events table (default: EVENTS_TABLE)")
	f.StringVar(&a.mirrorTable, "mirror-table", "", "mirror table (default: MIRROR_TABLE)")
	f.StringVar(&a.queueURL, "queue-url", "", "webhook queue URL (default: QUEUE_URL)")
	root.AddCommand(a.sendCmd(), a.eventCmd())
	return root
}

func (a *app) env(key, def string) string {
	if v := strings.TrimSpace(a.getenv(key)); v != "" {
		return v
	}
	return def
}

// aws loads the AWS configuration once.
func (a *app) aws(ctx context.Context) (aws.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	opts := []func(*config.LoadOptions) error{config.WithHTTPClient(boot.HTTPClient())}
	region := a.region
	if region == "" {
		region = a.env("AWS_REGION", "us-east-1")
	}
	opts = append(opts, config.WithRegion(region))
	if a.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(a.profile))
	}
	endpoint := a.endpoint
	if endpoint == "" && a.getenv("AWS_ENDPOINT_URL") == "" && a.stage == "" && a.profile == "" {
		endpoint = LocalEndpoint
	}
	local := endpoint != "" || a.getenv("AWS_ENDPOINT_URL") != ""
	if endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(endpoint))
	}
	if local && a.getenv("AWS_ACCESS_KEY_ID") == "" && a.profile == "" {
		// Emulators accept any credentials.
		opts = append(opts, config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "inboxctl-local"}, nil
		})))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	a.cfg = &cfg
	return cfg, nil
}

// resources resolves the table names and queue URL.
func (a *app) resources(ctx context.Context) (events, mirror, queue string, err error) {
	events = firstOf(a.eventsTable, a.getenv("EVENTS_TABLE"))
	mirror = firstOf(a.mirrorTable, a.getenv("MIRROR_TABLE"))
	queue = firstOf(a.queueURL, a.getenv("QUEUE_URL"))
	if a.stage != "" && (events == "" || mirror == "" || queue == "") {
		return "", "", "", usageError{errors.New("--stage: resolving a deployed stack is not available in this build; pass --events-table, --mirror-table and --queue-url")}
	}
	if events == "" {
		events = a.prefix + "-EventsTable"
	}
	if mirror == "" {
		mirror = a.prefix + "-MirrorTable"
	}
	if queue == "" {
		cfg, err := a.aws(ctx)
		if err != nil {
			return "", "", "", err
		}
		out, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(a.prefix + "-WebhookQueue")})
		if err != nil {
			return "", "", "", hint(fmt.Errorf("find the webhook queue: %w", err))
		}
		queue = aws.ToString(out.QueueUrl)
	}
	return events, mirror, queue, nil
}

func (a *app) dynamo(ctx context.Context) (*dynamodb.Client, error) {
	cfg, err := a.aws(ctx)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg), nil
}

// hint adds what to do next to errors that mean "nothing is listening".
func hint(err error) error {
	if err != nil && (strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "ResourceNotFound") || strings.Contains(err.Error(), "NonExistentQueue")) {
		return fmt.Errorf("%w\n(is the local stack running? start it with `make dev`; for a deployed stack pass --stage, --profile or --endpoint)", err)
	}
	return err
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func defaultSecret(getenv func(string) string) string {
	if v := getenv("STRIPE_WEBHOOK_SECRET"); v != "" {
		return strings.Split(v, ",")[0]
	}
	return devstack.DefaultWebhookSecret
}

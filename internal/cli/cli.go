// Package cli implements inboxctl, the operator's command line: send test
// deliveries, inspect events, objects and entitlements, replay events, list,
// redrive and discard the dead-letter queue's messages, diagnose signatures,
// and print what to register in Stripe, against the local stack or a
// deployed one, with the same configuration as the functions. docs/cli.md
// documents every command, its flags, its exit codes and its JSON shapes;
// the JSON shapes are the exported *JSON types here.
//
// Commands format; the logic they rely on lives elsewhere: reads in the
// shared packages that own each table (store queries, mirror reads,
// signature diagnosis), and what an operator does to a stack (replay, the
// dead-letter queue's redrive and discard, erasure) in internal/ops, which
// the console runs too. Every command reaches the stack through open.
package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	neturl "net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/webhook-inbox/webhook-inbox/internal/awsconfig"
	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// LocalEndpoint is the local stack's emulator.
const LocalEndpoint = "http://127.0.0.1:4566"

// StackName is the CloudFormation stack of a stage, as samconfig.toml and
// the deployment guide name it: --stage S reads the stack
// webhook-inbox-S; --stack names any other.
func StackName(stage string) string { return "webhook-inbox-" + stage }

// usageError marks errors in how the command was called (exit code 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// failedError is a failure already explained on the output: Run prints
// nothing more than its message.
type failedError struct{ msg string }

func (e failedError) Error() string { return e.msg }

// app holds the global flags, the clients built from them and what tests
// inject.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	// colour: stdout is a terminal (and NO_COLOR is not set).
	colour bool
	// bars: stderr is a terminal, so progress bars may draw on it.
	bars bool
	// stdinTTY: stdin is a terminal, so nothing was piped.
	stdinTTY bool
	shuffle  func(n int, swap func(i, j int))
	// wrapSQS lets tests inject faults into the SQS calls of a command.
	wrapSQS func(SQS) SQS
	// pollEvery is how often dlq redrive reads a move task's progress, and
	// the first wait between two reads of a stack's status (--stage).
	pollEvery time.Duration
	// stageAPIBase is the Stripe API base of a --stage run: Stripe's own
	// unless a test points it at a local stand-in. Nothing typed or
	// exported in a shell sets it (see reconcile).
	stageAPIBase string

	// endpoints are the --endpoint flags: URL, or SERVICE=URL.
	endpoints                          []string
	region, profile, stage, prefix     string
	stack                              string
	eventsTable, mirrorTable, queueURL string
	dlqURL                             string

	cfg     *aws.Config
	outputs map[string]string
	params  map[string]string // the stage stack's parameters
}

// Run executes inboxctl with args and returns its exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	a := &app{
		stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv,
		now:     time.Now,
		shuffle: rand.Shuffle,
	}
	noColour := getenv("NO_COLOR") != "" || getenv("TERM") == "dumb"
	a.colour = isTerminal(stdout) && !noColour
	a.bars = isTerminal(stderr) && getenv("TERM") != "dumb"
	a.stdinTTY = isTerminal(stdin)
	return a.run(ctx, args)
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (a *app) run(ctx context.Context, args []string) int {
	root := a.root()
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(a.stderr, "inboxctl:", err)
	var ns neverSeenError
	if errors.As(err, &ns) {
		return ExitNeverSeen
	}
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		path := "inboxctl"
		if cmd, _, err := root.Find(args); err == nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", path)
		return ExitUsage
	}
	return ExitFailure
}

// Command returns inboxctl's command tree as Run builds it, without running
// anything: the documentation's tests check every command and flag the docs
// show against it (tools/docs).
func Command() *cobra.Command {
	return (&app{getenv: os.Getenv, now: time.Now, shuffle: rand.Shuffle}).root()
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "inboxctl",
		Short:         "See, replay and repair webhook-inbox events",
		SilenceUsage:  true,
		SilenceErrors: true,
		Long: `inboxctl talks to a webhook-inbox stack: the local one (make dev) by default,
or a deployed one with --stage S (the stack webhook-inbox-S) or --stack NAME,
with --profile and --region as the AWS CLI takes them.

Configuration comes from the same environment as the functions
(EVENTS_TABLE, MIRROR_TABLE, QUEUE_URL, AWS_ENDPOINT_URL,
AWS_ENDPOINT_URL_<SERVICE>, STRIPE_WEBHOOK_SECRET); --stage and --stack
read the deployed stack's outputs instead, reach AWS's own endpoints
(AWS_ENDPOINT_URL* are ignored; --endpoint is not) and use none of the
local-only variables; flags override both. The region is the SDK's:
--region, AWS_REGION, AWS_DEFAULT_REGION, then the profile's.

Exit codes: 0 success, 1 failure, 2 usage error, 3 an id never seen. Every read command takes
--json (shapes in docs/cli.md).`,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(a.consoleCmd())
	root.AddCommand(a.statusCmd())
	f := root.PersistentFlags()
	f.StringArrayVar(&a.endpoints, "endpoint", nil, "AWS endpoint URL of every service, or SERVICE=URL for one of "+strings.Join(endpointServices, ", ")+
		" (repeat it; default: AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>, else the local stack's emulator unless --stage or --profile is given)")
	f.StringVar(&a.region, "region", "",
		"AWS region (default: AWS_REGION, AWS_DEFAULT_REGION, then the profile's region, as the AWS CLI; the local stack's is us-east-1)")
	f.StringVar(&a.profile, "profile", "", "AWS shared-config profile")
	f.StringVar(
		&a.stage,
		"stage",
		"",
		"deployed stage: read tables and queues from the outputs of the stack webhook-inbox-<stage> (samconfig.toml's stack_name)",
	)
	f.StringVar(&a.stack, "stack", "", "deployed stack of any name: like --stage, for a stack not named webhook-inbox-<stage>")
	f.StringVar(&a.prefix, "prefix", "webhook-inbox-local", "resource name prefix of the local stack")
	f.StringVar(&a.eventsTable, "events-table", "", "events table (default: --stage's output, else EVENTS_TABLE)")
	f.StringVar(&a.mirrorTable, "mirror-table", "", "mirror table (default: --stage's output, else MIRROR_TABLE)")
	f.StringVar(&a.queueURL, "queue-url", "", "webhook queue URL (default: --stage's output, else QUEUE_URL)")
	f.StringVar(&a.dlqURL, "dlq-url", "", "dead-letter queue URL (default: --stage's output, else the webhook queue's redrive policy)")
	root.AddCommand(
		a.sendCmd(), a.eventCmd(), a.eventsCmd(), a.objectCmd(), a.entitlementCmd(),
		a.replayCmd(), a.dlqCmd(), a.verifyCmd(), a.reconcileCmd(), a.auditCmd(), a.eraseCmd(),
		a.typesCmd(), a.versionCmd(),
	)
	refuseUnknownSubcommands(root)
	return root
}

// args wraps a cobra argument check so that its errors are usage errors.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, v []string) error {
		if err := check(cmd, v); err != nil {
			return usageError{err}
		}
		return nil
	}
}

var stagePattern = regexp.MustCompile(`^[a-z0-9-]{1,20}$`)

// stackPattern is CloudFormation's rule for a stack name.
var stackPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,127}$`)

// deployed reports whether inboxctl talks to a deployed stack (--stage or
// --stack) rather than the local one.
func (a *app) deployed() bool { return a.stage != "" || a.stack != "" }

// stackName is the deployed stack: --stack, else the stage's.
func (a *app) stackName() string {
	if a.stack != "" {
		return a.stack
	}
	return StackName(a.stage)
}

// target names the deployed stack as the command line did, for messages:
// "--stage prod" or "--stack my-inbox".
func (a *app) target() string {
	if a.stack != "" {
		return "--stack " + a.stack
	}
	return "--stage " + a.stage
}

// localRegion is the local stack's region (make dev, the emulators), used
// when nothing names one: an emulator keeps each region's resources apart.
const localRegion = "us-east-1"

// aws loads the AWS configuration once.
func (a *app) aws(ctx context.Context) (aws.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	if a.stage != "" && !stagePattern.MatchString(a.stage) {
		return aws.Config{}, usagef("--stage %q: a stage is 1-20 lower-case letters, digits or dashes, as in template.yaml", a.stage)
	}
	if a.stage != "" && a.stack != "" {
		return aws.Config{}, usagef("--stage %s and --stack %s: pass one (--stage %s is --stack %s)", a.stage, a.stack, a.stage, StackName(a.stage))
	}
	if a.stack != "" && !stackPattern.MatchString(a.stack) {
		return aws.Config{}, usagef("--stack %q: a stack name is a letter, then up to 127 letters, digits or dashes", a.stack)
	}
	general, services, err := a.endpointsOf()
	if err != nil {
		return aws.Config{}, err
	}
	var opts []func(*config.LoadOptions) error
	// The region as the SDK and the AWS CLI resolve it: the flag, then
	// AWS_REGION and AWS_DEFAULT_REGION (read through getenv, like every
	// other setting of a run), then the profile's region, which the SDK
	// reads from the shared config. A fixed default would send a profile
	// that names eu-west-1 to us-east-1, where its stack is not.
	// The local stack (no --stage, --stack or --profile) is in
	// localRegion whatever the shared config's default profile says.
	region := cmp.Or(a.region, strings.TrimSpace(a.getenv("AWS_REGION")), strings.TrimSpace(a.getenv("AWS_DEFAULT_REGION")))
	if region == "" && !a.deployed() && a.profile == "" {
		region = localRegion
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if a.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(a.profile))
	}
	if !a.deployed() && a.profile == "" && a.getenv("AWS_ACCESS_KEY_ID") == "" && (general != "" || len(services) > 0) {
		// Emulators accept any credentials.
		opts = append(opts, config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "inboxctl-local"}, nil
		})))
	}
	cfg, err := awsconfig.Load(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, usagef("no AWS region: pass --region, set AWS_REGION, or set the profile's region (aws configure set region <region>%s)",
			profileFlag(a.profile))
	}
	if a.deployed() {
		stageEndpoints(&cfg)
	}
	awsconfig.SetEndpoints(&cfg, general, services)
	a.cfg = &cfg
	return cfg, nil
}

// endpointServices are the services inboxctl calls, as --endpoint
// SERVICE=URL names them (the suffix of AWS_ENDPOINT_URL_<SERVICE>, in
// lower case).
var endpointServices = []string{"dynamodb", "sqs", "ssm", "cloudformation"}

// endpointsOf returns the endpoint of every service (cfg.BaseEndpoint) and
// each service's own, by the suffix of its variable (DYNAMODB). A
// service's endpoint is, first found: --endpoint SERVICE=URL,
// AWS_ENDPOINT_URL_<SERVICE>, --endpoint URL, AWS_ENDPOINT_URL, and the
// local stack's emulator unless --stage or --profile is given. The more
// specific setting wins, as in the SDK and the functions: the make
// test-localstack shell (AWS_ENDPOINT_URL at LocalStack,
// AWS_ENDPOINT_URL_DYNAMODB at moto) works with --endpoint at LocalStack.
// The variables are read through getenv, which keeps every setting of a
// run in one place.
//
// A deployed stage is reached at AWS's own endpoints, or at those typed
// for this run with --endpoint, never at one from the environment: see
// stageEndpoints.
func (a *app) endpointsOf() (general string, services map[string]string, err error) {
	flags := map[string]string{}
	for _, v := range a.endpoints {
		service, url := "", v
		if k, u, ok := strings.Cut(v, "="); ok && !strings.Contains(k, "/") {
			service, url = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(u)
			if !slices.Contains(endpointServices, service) {
				return "", nil, usagef(
					"--endpoint %s: no service %q: name one of %s, or give a URL for every service",
					v,
					k,
					strings.Join(endpointServices, ", "),
				)
			}
		}
		if u, perr := neturl.Parse(url); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", nil, usagef("--endpoint %s: %q is not an http(s) URL", v, url)
		}
		if _, dup := flags[service]; dup {
			return "", nil, usagef("--endpoint %s: given twice for %s", v, cmp.Or(service, "every service"))
		}
		flags[service] = url
	}
	env := func(k string) string {
		if a.deployed() {
			return ""
		}
		return strings.TrimSpace(a.getenv(k))
	}
	general = cmp.Or(flags[""], env("AWS_ENDPOINT_URL"))
	if general == "" && !a.deployed() && a.profile == "" {
		general = LocalEndpoint
	}
	services = map[string]string{}
	for _, s := range endpointServices {
		suffix := strings.ToUpper(s)
		if v := cmp.Or(flags[s], env("AWS_ENDPOINT_URL_"+suffix), general); v != "" {
			services[suffix] = v
		}
	}
	return general, services, nil
}

// stageEndpoints makes cfg reach AWS's own endpoints, whatever the
// environment and the shared config say (AWS_ENDPOINT_URL,
// AWS_ENDPOINT_URL_<SERVICE>, a profile's endpoint_url); only --endpoint,
// set afterwards, applies. An endpoint left in the shell by local work
// would otherwise get the stage's requests, signed with its credentials (a
// signed SSM read can be replayed to AWS for minutes), and answer them with
// a stack and secrets of its own.
func stageEndpoints(cfg *aws.Config) {
	cfg.BaseEndpoint = nil
	// The service clients (and package secrets') consult this before any
	// configured endpoint, as they do for
	// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true.
	cfg.ConfigSources = append([]any{ignoreConfiguredEndpoints{}}, cfg.ConfigSources...)
}

type ignoreConfiguredEndpoints struct{}

func (ignoreConfiguredEndpoints) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return true, true, nil
}

// Output keys of the deployed stack (template.yaml Outputs).
const (
	outEventsTable = "EventsTableName"
	outMirrorTable = "MirrorTableName"
	outQueueURL    = "QueueUrl"
	outDLQURL      = "DeadLetterQueueUrl"
	outWebhookURL  = "WebhookUrl"
)

// stageOutputs reads the outputs of the stage's stack once.
func (a *app) stageOutputs(ctx context.Context) (map[string]string, error) {
	if a.outputs != nil {
		return a.outputs, nil
	}
	cfg, err := a.aws(ctx)
	if err != nil {
		return nil, err
	}
	// The first call to a deployed stack: without credentials it would
	// fail with the SDK's provider chain alone.
	if err := credentialsOK(ctx, cfg, a.profile); err != nil {
		return nil, err
	}
	name := a.stackName()
	client := cloudformation.NewFromConfig(cfg)
	in := &cloudformation.DescribeStacksInput{StackName: aws.String(name)}
	out, err := client.DescribeStacks(ctx, in)
	if err != nil {
		if noStack(err) {
			return nil, fmt.Errorf("%s: no stack %s in %s: check the stack's name (--stage S reads the stack webhook-inbox-S; --stack names any other), "+
				"--region and --profile, or deploy it with `sam deploy --config-env <env>`", a.target(), name, cfg.Region)
		}
		return nil, fmt.Errorf("%s: describe stack %s: %w", a.target(), name, err)
	}
	if len(out.Stacks) == 0 {
		return nil, fmt.Errorf("%s: no stack %s in %s", a.target(), name, cfg.Region)
	}
	if out, err = a.settle(ctx, client, in, out); err != nil {
		return nil, fmt.Errorf("%s: %w", a.target(), err)
	}
	outputs := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	a.params = map[string]string{}
	for _, p := range out.Stacks[0].Parameters {
		a.params[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	a.outputs = outputs
	return outputs, nil
}

// poll is the first wait between two reads of a stack's status (and how
// often dlq redrive reads a move task's progress: ops.Stack.PollEvery).
func (a *app) poll() time.Duration {
	if a.pollEvery > 0 {
		return a.pollEvery
	}
	return time.Second
}

// stageWait bounds the wait for a stack being created or updated: a
// deployment of the template takes minutes.
const stageWait = 30 * time.Minute

// settle waits, with the SDK's CloudFormation waiters, for a stack that is
// being created, updated or imported (CloudFormation does that
// asynchronously: outputs appear when it ends) and returns its description
// then; a stack at rest is returned as it is. A creation or update that
// fails ends the wait with the stack's status and reason.
func (a *app) settle(ctx context.Context, client *cloudformation.Client, in *cloudformation.DescribeStacksInput,
	out *cloudformation.DescribeStacksOutput) (*cloudformation.DescribeStacksOutput, error) {
	status := string(out.Stacks[0].StackStatus)
	name := aws.ToString(in.StackName)
	if !strings.HasSuffix(status, "_IN_PROGRESS") || status == string(cftypes.StackStatusReviewInProgress) {
		return out, nil
	}
	if strings.HasPrefix(status, "DELETE_") {
		return nil, fmt.Errorf("stack %s is being deleted (%s)", name, status)
	}
	fmt.Fprintf(a.stderr, "inboxctl: stack %s is %s; waiting for it to finish (up to %s)\n", name, status, stageWait)
	// AWS's own defaults poll every 30 s at first; a local emulator's stack
	// is ready in a second, and a person is waiting.
	minDelay := a.poll()
	maxDelay := max(minDelay, 15*time.Second)
	var err error
	switch {
	case strings.HasPrefix(status, "UPDATE_"):
		out, err = cloudformation.NewStackUpdateCompleteWaiter(client, func(o *cloudformation.StackUpdateCompleteWaiterOptions) {
			o.MinDelay, o.MaxDelay = minDelay, maxDelay
		}).WaitForOutput(ctx, in, stageWait)
	case strings.HasPrefix(status, "IMPORT_"):
		out, err = cloudformation.NewStackImportCompleteWaiter(client, func(o *cloudformation.StackImportCompleteWaiterOptions) {
			o.MinDelay, o.MaxDelay = minDelay, maxDelay
		}).WaitForOutput(ctx, in, stageWait)
	default: // CREATE_IN_PROGRESS, ROLLBACK_IN_PROGRESS
		out, err = cloudformation.NewStackCreateCompleteWaiter(client, func(o *cloudformation.StackCreateCompleteWaiterOptions) {
			o.MinDelay, o.MaxDelay = minDelay, maxDelay
		}).WaitForOutput(ctx, in, stageWait)
	}
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("stopped waiting for stack %s: %w", name, ctx.Err())
	}
	// The waiter says only that it failed: the stack says how.
	now, derr := client.DescribeStacks(ctx, in)
	if derr != nil || len(now.Stacks) == 0 {
		return nil, fmt.Errorf("wait for stack %s: %w", name, err)
	}
	st := now.Stacks[0]
	if st.StackStatus == cftypes.StackStatusUpdateRollbackComplete {
		// The previous deployment is back in place, outputs and all.
		fmt.Fprintf(a.stderr, "inboxctl: the update of stack %s was rolled back (%s); using the stack as it is now\n",
			name, cmp.Or(aws.ToString(st.StackStatusReason), "no reason given"))
		return now, nil
	}
	return nil, fmt.Errorf("stack %s ended %s (%s): deploy it again, or check its events in CloudFormation",
		name, st.StackStatus, cmp.Or(aws.ToString(st.StackStatusReason), "no reason given"))
}

// stageParameters reads the parameters the stage's stack was deployed with.
func (a *app) stageParameters(ctx context.Context) (map[string]string, error) {
	if _, err := a.stageOutputs(ctx); err != nil {
		return nil, err
	}
	return a.params, nil
}

// resolve returns a resource name: the flag, else the stage's output, else
// the environment variable, else the local stack's name.
func (a *app) resolve(ctx context.Context, flag, output, envKey, local string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if a.deployed() {
		outputs, err := a.stageOutputs(ctx)
		if err != nil {
			return "", err
		}
		if v := outputs[output]; v != "" {
			return v, nil
		}
		return "", fmt.Errorf(
			"%s: stack %s has no output %s: deploy the current template.yaml, or pass the name with a flag",
			a.target(),
			a.stackName(),
			output,
		)
	}
	if envKey != "" {
		if v := strings.TrimSpace(a.getenv(envKey)); v != "" {
			return v, nil
		}
	}
	return local, nil
}

// Parts of a stack a command opens (open).
type parts int

const (
	withEvents parts = 1 << iota // the events table
	withMirror                   // the mirror table, to read and to erase
	withQueue                    // the webhook queue
	withDLQ                      // the webhook queue and its dead-letter queue
)

// open is how every command reaches the stack: it resolves the names of
// the tables and queues want asks for (resolve: a flag, the stage's
// outputs, the environment, the local stack's names) and builds their
// clients on the one AWS configuration (aws), so a wrong flag or a
// stopped stack fails here, with the same hints, whatever the command.
// The operations (package ops) report through a: hints on errors,
// progress bars and notes on stderr.
func (a *app) open(ctx context.Context, want parts) (*ops.Stack, error) {
	s := &ops.Stack{
		Now:       a.now,
		Explain:   a.hint,
		Progress:  func(total int, what string) ops.Progress { return a.progress(total, what) },
		Note:      func(msg string) { fmt.Fprintln(a.stderr, "inboxctl: "+msg) },
		PollEvery: a.pollEvery,
	}
	var db *dynamodb.Client
	if want&(withEvents|withMirror) != 0 {
		cfg, err := a.aws(ctx)
		if err != nil {
			return nil, err
		}
		db = dynamodb.NewFromConfig(cfg)
	}
	if want&withEvents != 0 {
		table, err := a.resolve(ctx, a.eventsTable, outEventsTable, "EVENTS_TABLE", a.prefix+"-EventsTable")
		if err != nil {
			return nil, err
		}
		s.Events = &store.Events{DB: db, Table: table}
	}
	if want&withMirror != 0 {
		table, err := a.resolve(ctx, a.mirrorTable, outMirrorTable, "MIRROR_TABLE", a.prefix+"-MirrorTable")
		if err != nil {
			return nil, err
		}
		s.Mirror = &mirror.Reader{DB: db, Table: table}
		s.Eraser = &mirror.Eraser{DB: db, Table: table, Now: a.now}
	}
	if want&(withQueue|withDLQ) != 0 {
		cfg, err := a.aws(ctx)
		if err != nil {
			return nil, err
		}
		var client ops.SQS = sqs.NewFromConfig(cfg)
		if a.wrapSQS != nil {
			client = a.wrapSQS(client)
		}
		s.SQS = client
		if s.Queue, err = a.queue(ctx, client); err != nil {
			return nil, err
		}
		if want&withDLQ != 0 {
			if s.DLQ, err = a.deadLetterQueue(ctx, client, s.Queue); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// queue resolves the webhook queue's URL.
func (a *app) queue(ctx context.Context, client SQS) (string, error) {
	url, err := a.resolve(ctx, a.queueURL, outQueueURL, "QUEUE_URL", "")
	if err != nil || url != "" {
		return url, err
	}
	name := a.prefix + "-WebhookQueue"
	out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", a.hint(fmt.Errorf("find the webhook queue %s: %w", name, err))
	}
	return aws.ToString(out.QueueUrl), nil
}

// deadLetterQueue resolves the dead-letter queue of the webhook queue main:
// --dlq-url, the stage's output, else main's redrive policy, which names
// it whatever the naming.
func (a *app) deadLetterQueue(ctx context.Context, client SQS, main string) (string, error) {
	dlq, err := a.resolve(ctx, a.dlqURL, outDLQURL, "", "")
	if err != nil || dlq != "" {
		return dlq, err
	}
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(main),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return "", a.hint(fmt.Errorf("read the redrive policy of %s: %w", main, err))
	}
	var policy struct {
		Target string `json:"deadLetterTargetArn"`
	}
	raw := out.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]
	if json.Unmarshal([]byte(raw), &policy) != nil || policy.Target == "" {
		return "", fmt.Errorf("queue %s has no redrive policy naming a dead-letter queue: pass --dlq-url", main)
	}
	name := policy.Target[strings.LastIndex(policy.Target, ":")+1:]
	q, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", a.hint(fmt.Errorf("find the dead-letter queue %s: %w", name, err))
	}
	return aws.ToString(q.QueueUrl), nil
}

// noStack reports whether err is CloudFormation's answer to DescribeStacks
// for a stack that does not exist: a ValidationError, for which the SDK has
// no type (the stack name is valid by then: --stage is checked first).
func noStack(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationError"
}

// nothingThere reports whether err means that nothing is there: nothing
// listens at the endpoint, or the table or queue does not exist.
func nothingThere(err error) bool {
	var noQueue *sqstypes.QueueDoesNotExist
	return errors.Is(err, syscall.ECONNREFUSED) || noTable(err) || errors.As(err, &noQueue)
}

// noTable reports whether err is DynamoDB's answer for a missing table.
func noTable(err error) bool {
	var nf *ddbtypes.ResourceNotFoundException
	return errors.As(err, &nf)
}

// hint adds what to do next to errors that mean "nothing is there".
func (a *app) hint(err error) error {
	if err == nil || !nothingThere(err) {
		return err
	}
	if a.deployed() || a.profile != "" {
		return fmt.Errorf("%w\n(check --stage or --stack, --region and --profile)", err)
	}
	return fmt.Errorf("%w\n(is the local stack running? start it with `make dev`; for a deployed stack pass --stage, --profile or --endpoint)", err)
}

// tableHint names the table in errors that mean it does not exist.
func (a *app) tableHint(table string, err error) error {
	return a.hint(ops.TableError(table, err))
}

// profileFlag is " --profile P" when a profile was named, for commands
// printed in messages.
func profileFlag(profile string) string {
	if profile == "" {
		return ""
	}
	return " --profile " + profile
}

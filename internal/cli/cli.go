package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
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

// Command devstack runs the whole pipeline locally in the foreground (make
// dev): an AWS emulator unless AWS_ENDPOINT_URL names one, the template's
// resources on it, the webhook endpoint at
// http://127.0.0.1:3000/webhooks/stripe, the processor consuming the queue,
// and the reconciler on the template's schedule when a Stripe API key or a
// local Stripe stand-in (STRIPE_API_BASE) is configured, Stripe's
// EventBridge destination with StripeEventSourceName set (on LocalStack),
// and the operator
// console (inboxctl console) at http://127.0.0.1:8080. Ctrl-C stops
// everything and leaves no process behind.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/cli"
	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/awsenv"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/demo"
	"github.com/webhook-inbox/webhook-inbox/tools/devconsole"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

func main() {
	os.Exit(run())
}

// flags are the command's flags.
type flags struct {
	addr, prefix, params, consoleAddr string
	emuPort                           int
	reconcileEvery                    time.Duration
	demoDay                           bool
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.addr, "addr", "127.0.0.1:3000", "gateway listen address")
	flag.StringVar(&f.prefix, "prefix", devstack.DefaultPrefix, "name prefix of the provisioned tables and queues")
	flag.StringVar(&f.params, "parameter-overrides", "", "template parameter overrides, as Key=Value pairs separated by spaces")
	flag.IntVar(&f.emuPort, "emulator-port", emulator.DefaultPort, "port of the emulator started when AWS_ENDPOINT_URL is not set")
	flag.StringVar(&f.consoleAddr, "console-addr", cli.DefaultConsoleAddr, "loopback address of the operator console (inboxctl console); \"off\" turns it off")
	flag.DurationVar(
		&f.reconcileEvery,
		"reconcile-every",
		0,
		"run the reconciler this often instead of the template's ReconcileRate (like 30s; negative turns it off); it runs only with STRIPE_API_KEY or STRIPE_API_BASE set",
	)
	flag.BoolVar(&f.demoDay, "demo", false,
		"the demo day (make demo): a Stripe stand-in, a downstream that fails on purpose for chosen customers, and a realistic day of events sent once the stack is up")
	flag.Parse()
	return f
}

func run() int {
	f := parseFlags()
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: logLevel()}))
	overrides, err := parseOverrides(f.params)
	if err != nil {
		fmt.Fprintf(os.Stderr, "devstack: -parameter-overrides: %v\n", err)
		return 2
	}
	root, err := repo.Root()
	if err != nil {
		fail(err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	emu, err := emulator.FromEnv(ctx, emulator.Options{Port: f.emuPort, Log: os.Stderr})
	if err != nil {
		fail(err)
		return 1
	}
	defer emu.Stop()
	// The SDK reads the endpoint and credentials from the environment, as in
	// Lambda; the emulator accepts any credentials.
	setDefault("AWS_ENDPOINT_URL", emu.URL)
	setDefault("AWS_REGION", "us-east-1")
	setDefault("AWS_ACCESS_KEY_ID", "test")
	setDefault("AWS_SECRET_ACCESS_KEY", "test")
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		fail(err)
		return 1
	}

	env := functionEnv()
	var effects *effect.Registry
	var fake *stripefake.Server
	if f.demoDay {
		fake = stripefake.New()
		defer fake.Close()
		effects = demoDay(fake, env, overrides, &f.reconcileEvery)
	}
	stack, err := devstack.Start(ctx, devstack.Options{
		Template:      filepath.Join(root, "template.yaml"),
		Overrides:     overrides,
		Prefix:        f.prefix,
		Addr:          f.addr,
		WebhookSecret: os.Getenv("STRIPE_WEBHOOK_SECRET"),
		// A Connect endpoint's secret, for connected accounts' events.
		ConnectWebhookSecret: os.Getenv("STRIPE_CONNECT_WEBHOOK_SECRET"),
		APIKey:               os.Getenv("STRIPE_API_KEY"),
		// Setting GITHUB_WEBHOOK_SECRET, SHOPIFY_WEBHOOK_SECRET or
		// STANDARD_WEBHOOK_SECRET serves that provider.
		ProviderSecrets: providerSecrets(),
		// GENERIC_SENDERS declares senders without a provider of their
		// own, each served with its <NAME>_WEBHOOK_SECRET.
		Senders:        os.Getenv(provider.SendersVariable),
		Env:            env,
		Effects:        effects,
		ReconcileEvery: f.reconcileEvery,
		AWS:            cfg,
		Logger:         log,
	})
	if err != nil {
		fail(err)
		return 1
	}
	con, consoleLine := startConsole(stack, f)
	banner(stack, emu, consoleLine)
	if f.demoDay {
		sendDemoDay(ctx, stack, fake, consoleLine)
	}
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "devstack: stopping")
	if con != nil {
		con.Close()
	}
	stack.Close()
	return 0
}

// parseOverrides reads template parameter overrides, Key=Value pairs
// separated by spaces.
func parseOverrides(params string) (map[string]string, error) {
	overrides := map[string]string{}
	for _, kv := range strings.Fields(params) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not Key=Value", kv)
		}
		overrides[k] = v
	}
	return overrides, nil
}

// functionEnv is the functions' environment from this process's: the
// variables a local stack takes from it.
func functionEnv() map[string]string {
	env := map[string]string{}
	for _, k := range []string{"STRIPE_API_BASE", "EVENT_TYPES", "GITHUB_EVENT_TYPES", "SHOPIFY_EVENT_TYPES", "STANDARD_EVENT_TYPES", "RETRY_BACKOFF_BASE", "RETRY_BACKOFF_MAX", "PROCESSOR_CONCURRENCY",
		"FORWARD_URL", "FORWARD_SECRET", "STRIPE_CONNECT_ACCOUNTS",
		"RECONCILE_SINCE", "RECONCILE_OVERLAP", "RECONCILE_SETTLE", "RECONCILE_STUCK_AFTER", "RECONCILE_MAX_PAGES",
		// GitHub's redeliveries (docs/providers.md); the token and the
		// App's key are local use only, like STRIPE_WEBHOOK_SECRET.
		"GITHUB_HOOKS", "GITHUB_API_BASE", "GITHUB_API_TOKEN", "GITHUB_APP_PRIVATE_KEY", "GITHUB_MAX_REDELIVERIES"} {
		if v := os.Getenv(k); v != "" {
			env[k] = v
		}
	}
	// Every provider's and declared sender's event types
	// (boot.ProviderTypesVariable).
	for _, name := range append(slices.Clone(provider.Names), senderNames()...) {
		if v := os.Getenv(boot.ProviderTypesVariable(name)); v != "" {
			env[boot.ProviderTypesVariable(name)] = v
		}
	}
	// Your effects' secrets, locally (boot.EffectSecretVariable).
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "EFFECT_SECRET_") && v != "" {
			env[k] = v
		}
	}
	return env
}

// demoDay sets the demo day's Stripe stand-in (fake), environment,
// template overrides and reconciler period, where not set, and returns
// its effects.
func demoDay(fake *stripefake.Server, env, overrides map[string]string, reconcileEvery *time.Duration) *effect.Registry {
	env["STRIPE_API_BASE"] = fake.URL
	for k, v := range demo.Env {
		if _, set := env[k]; !set {
			env[k] = v
		}
	}
	for k, v := range demo.Overrides {
		if _, set := overrides[k]; !set {
			overrides[k] = v
		}
	}
	if *reconcileEvery == 0 {
		*reconcileEvery = demo.ReconcileEvery
	}
	return demo.Registry(hooks.Registry())
}

// startConsole starts the operator console unless turned off; it returns
// the line the banner shows for it.
func startConsole(stack *devstack.Stack, f flags) (*devconsole.Console, string) {
	if f.consoleAddr == "off" {
		return nil, "off (-console-addr off)"
	}
	// The pipeline is what make dev is for: a console that cannot
	// start (its port taken) is reported, and the stack runs on.
	con, err := devconsole.Start(stack, f.prefix, f.consoleAddr, os.Stdout)
	if err != nil {
		return nil, fmt.Sprintf("not started: %v (pick another address with DEV_FLAGS='-console-addr 127.0.0.1:0')", err)
	}
	return con, con.URL
}

// sendDemoDay sends the demo day and prints each event's status.
func sendDemoDay(ctx context.Context, stack *devstack.Stack, fake *stripefake.Server, consoleLine string) {
	secret := os.Getenv("STRIPE_WEBHOOK_SECRET")
	if secret == "" {
		secret = devstack.DefaultWebhookSecret
	}
	secret, _, _ = strings.Cut(secret, ",") // the current one, listed first
	fmt.Fprintln(os.Stderr, "devstack: sending the demo day")
	day, err := demo.Send(ctx, stack.URL+"/webhooks/stripe", secret, fake, time.Now(), os.Stderr)
	if err != nil {
		fail(err)
		return
	}
	fmt.Fprintf(os.Stderr, "\ndemo day sent: in a few seconds the console (%s) shows each status:\n", consoleLine)
	for _, e := range day.Events {
		fmt.Fprintf(os.Stderr, "  %-40s %-16s %s\n", e.ID, e.Status, e.Why)
	}
	fmt.Fprintf(os.Stderr, "  the duplicate delivery's answer: %s\n\n", day.Duplicate)
}

// providerSecrets reads the other providers' local-only secret variables.
func providerSecrets() map[string]string {
	out := map[string]string{}
	for _, name := range append(slices.Clone(provider.Names), senderNames()...) {
		if name == provider.Stripe {
			continue // WebhookSecret
		}
		if v := os.Getenv(boot.WebhookSecretVariable(name)); v != "" {
			out[name] = v
		}
	}
	return out
}

// senderNames are the names of the senders GENERIC_SENDERS declares; a
// declaration that does not parse is reported when the stack starts.
func senderNames() []string {
	senders, _ := provider.ParseSenders(os.Getenv(provider.SendersVariable))
	var out []string
	for _, s := range senders {
		out = append(out, s.Name)
	}
	return out
}

func banner(s *devstack.Stack, emu *emulator.Emulator, console string) {
	env := s.FunctionEnv[devstack.ProcessorID]
	reconciler := "off (set STRIPE_API_KEY or STRIPE_API_BASE)"
	if s.ReconcileEvery > 0 {
		reconciler = "every " + s.ReconcileEvery.String()
	}
	eventbridge := "off (-parameter-overrides StripeEventSourceName=aws.partner/stripe.com/ed_..., on LocalStack: docs/localstack.md)"
	if bus := s.Resources.Routing["StripeEventBus"]; bus != "" {
		eventbridge = "bus " + bus + " -> " + s.Resources.Queues["IngressQueue"].URL + " -> bridge"
	}
	// inboxctl takes no secret silently: say which one this stack checks.
	try := "go run ./cmd/inboxctl send --dev customer.subscription.created"
	if os.Getenv("STRIPE_WEBHOOK_SECRET") != "" {
		try = "go run ./cmd/inboxctl send customer.subscription.created   (with this STRIPE_WEBHOOK_SECRET)"
	}
	fmt.Fprintf(os.Stderr, `
webhook-inbox local stack is up
  webhook endpoint  %s/webhooks/stripe
                    (and /webhooks/github, shopify, standard with their *_WEBHOOK_SECRET set)
  health            %s/healthz
  AWS emulator      %s%s
  events table      %s
  mirror table      %s
  queue             %s
  reconciler        %s
  eventbridge       %s
  console           %s

Try:  %s
      stripe listen --forward-to localhost:3000/webhooks/stripe
Ctrl-C stops everything. The emulator keeps its data in memory: what this
stack stored is gone when it stops, and the next make dev starts empty.

`, s.URL, s.URL, emu.URL, ownEndpoints(emu.Endpoints), env["EVENTS_TABLE"], env["MIRROR_TABLE"], env["QUEUE_URL"], reconciler, eventbridge, console, try)
}

// fail reports err once, prefixed "devstack:" (errors of package
// devstack already are), and when an address is taken says the likely
// reason: a make dev already running.
func fail(err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "devstack: ") {
		msg = "devstack: " + msg
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		msg += "\n(is make dev already running, in another terminal? stop it there with Ctrl-C, or give this one other ports: DEV_FLAGS='-addr 127.0.0.1:3001 -emulator-port 4567 -console-addr 127.0.0.1:0')"
	}
	fmt.Fprintln(os.Stderr, msg)
}

// ownEndpoints lists the services with an endpoint of their own
// (AWS_ENDPOINT_URL_<SERVICE>), one per line, for the banner.
func ownEndpoints(e emulator.Endpoints) string {
	var b strings.Builder
	for _, s := range slices.Sorted(maps.Keys(e.Services)) {
		fmt.Fprintf(&b, "\n  %-17s %s", strings.ToLower(s), e.Services[s])
	}
	return b.String()
}

func setDefault(k, v string) {
	if os.Getenv(k) == "" {
		os.Setenv(k, v)
	}
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv("LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return l
}

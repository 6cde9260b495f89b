package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/console"
	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// DefaultConsoleAddr is where inboxctl console listens by default.
const DefaultConsoleAddr = "127.0.0.1:8080"

func (a *app) consoleCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "console [--addr 127.0.0.1:8080]",
		Short: "Serve the web console on this machine: events, objects, the dead-letter queue, the reconciler; replay and redrive",
		Long: `console serves a web console for the stack the other commands talk to (the
local one, or a deployed one with --stage), resolving its tables and queues
the same way, with your AWS credentials, on this machine only: it listens
on a loopback address and prints a URL carrying a token made for this run;
any request without it gets 401.

Pages: events (filtered by provider, status, type and day, a page at a
time), an event's record, transitions and payload, an object's snapshot
and events (and a customer's entitlement), the dead-letter queue beside its
events' status, and the reconciler's checkpoints and last runs. Replaying
an event and redriving the dead-letter queue run the code of inboxctl
replay and inboxctl dlq redrive, after a confirmation page.

It runs until Ctrl-C. docs/cli.md describes it.`,
		Example: `  inboxctl console
  inboxctl --stage prod console --addr 127.0.0.1:0`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serveConsole(cmd.Context(), addr, func(url string) {
				fmt.Fprintf(a.stdout, "console: %s\n(open it in a browser; it works only with this URL's token, until Ctrl-C)\n", url)
			})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", DefaultConsoleAddr, "loopback address to listen on (127.0.0.1, [::1] or localhost; port 0 picks a free one)")
	return cmd
}

// ServeConsole serves the console, as inboxctl console does, for the stack
// that inboxctl's global flags in args select (--endpoint, --prefix,
// --stage, ...; getenv stands for the environment), on the loopback
// address addr, until ctx ends. ready receives the console's URL, token
// included, once it listens; the console's log goes to logw. make dev's
// stack serves it this way (tools/cmd/devstack).
func ServeConsole(ctx context.Context, args []string, addr string, getenv func(string) string, logw io.Writer, ready func(url string)) error {
	a := &app{stdout: logw, stderr: logw, getenv: getenv, now: time.Now}
	root := a.root()
	if err := root.ParseFlags(args); err != nil {
		return usageError{fmt.Errorf("console: %w", err)}
	}
	return a.serveConsole(ctx, addr, ready)
}

func (a *app) serveConsole(ctx context.Context, addr string, ready func(string)) error {
	// Progress bars would draw over the console's own log.
	a.bars = false
	srv, err := a.console(ctx)
	if err != nil {
		return err
	}
	ln, url, err := console.Listen(addr, srv.token)
	if errors.Is(err, console.ErrNotLoopback) {
		return usagef("--addr %s: %w", addr, err)
	}
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Server, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	ready(url)
	select {
	case err := <-done:
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return nil
}

// consoleServer is a console with its token.
type consoleServer struct {
	*console.Server
	token string
}

// console builds the console for the stack a's flags select. It resolves
// every table and queue first, so that a wrong flag or a stopped stack
// fails now, with the same hints as the other commands.
func (a *app) console(ctx context.Context) (*consoleServer, error) {
	s, err := a.open(ctx, withEvents|withMirror|withDLQ)
	if err != nil {
		return nil, err
	}
	stack := "local stack " + a.prefix
	if a.stage != "" {
		stack = "stage " + a.stage
	}
	types := a.handledTypes()
	token := console.NewToken()
	events := s.Events
	srv, err := console.New(console.Config{
		Events:     events,
		Mirror:     s.Mirror,
		Reconciler: a.reconciler(s, types),
		// The operations of inboxctl's replay and dlq commands.
		Actions: s,
		Token:   token,
		Stack:   stack,
		Types:   types,
		// Shown only while no run is recorded: the local stack's
		// reconciler runs with a key or a stand-in only.
		ReconcilerOff: a.reconcilerOff(),
		Explain:       func(err error) error { return a.tableHint(events.Table, err) },
		Logger:        slog.New(slog.NewJSONHandler(a.stderr, nil)),
	})
	if err != nil {
		return nil, err
	}
	return &consoleServer{Server: srv, token: token}, nil
}

// handledTypes are the deployed reconciler's types: a stage's functions
// take the template's, as the reconcile command assumes; locally
// EVENT_TYPES may narrow them.
func (a *app) handledTypes() []string {
	env := boot.Env(a.getenv)
	if a.stage != "" {
		env = func(string) string { return "" }
	}
	return boot.HandledTypeList(boot.EventTypesFrom(env), hooks.Registry())
}

// reconciler reads the reconciler's state of the stack s.
func (a *app) reconciler(s *ops.Stack, types []string) *consoleReconciler {
	return &consoleReconciler{groups: reconcile.Groups(event.ProviderStripe, types),
		checkpoints: &store.Checkpoints{DB: s.Events.DB, Table: s.Events.Table}, runs: &store.Runs{DB: s.Events.DB, Table: s.Events.Table}}
}

// consoleReconciler reads the reconciler's checkpoints, one per group of
// the handled types, and its last runs.
type consoleReconciler struct {
	groups      []reconcile.Group
	checkpoints *store.Checkpoints
	runs        *store.Runs
}

func (r *consoleReconciler) Checkpoints(ctx context.Context) ([]store.Checkpoint, error) {
	var out []store.Checkpoint
	for _, g := range r.groups {
		cp, err := r.checkpoints.Load(ctx, g.Checkpoint)
		if err != nil {
			return nil, err
		}
		cp.Types = g.Types
		out = append(out, cp)
	}
	return out, nil
}

func (r *consoleReconciler) Runs(ctx context.Context) ([]store.Run, error) {
	return r.runs.Recent(ctx, event.ProviderStripe)
}

func (r *consoleReconciler) Audits(ctx context.Context) ([]store.AuditRun, error) {
	return r.runs.RecentAudits(ctx, event.ProviderStripe)
}

// reconcilerOff says why the local stack's reconciler does not run (make
// dev starts it only with a Stripe API key or a stand-in's API base), ""
// when it may: a stage's always runs on its schedule.
func (a *app) reconcilerOff() string {
	if a.stage != "" || a.getenv("STRIPE_API_KEY") != "" || a.getenv("STRIPE_API_KEY_PARAMETER") != "" || a.getenv("STRIPE_API_BASE") != "" {
		return ""
	}
	return "no Stripe API key is configured (make dev runs it with STRIPE_API_KEY or STRIPE_API_BASE set)"
}

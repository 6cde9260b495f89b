package docs_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/tools/docs"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Rotating a signing secret", "rotating-a-signing-secret"},
		{"Cost: `make cost`", "cost-make-cost"},
		{"Permissions, alarms, dashboard", "permissions-alarms-dashboard"},
		{`What "exactly once" means here, precisely`, "what-exactly-once-means-here-precisely"},
		{"Stripe → EventBridge", "stripe--eventbridge"},
		{"dlq list", "dlq-list"},
		{"snake_case and dash-case", "snake_case-and-dash-case"},
		{"Äpfel über alles", "äpfel-über-alles"},
	} {
		if got := docs.Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// tree is a small command tree shaped like inboxctl's.
func tree() *cobra.Command {
	root := &cobra.Command{Use: "inboxctl"}
	root.PersistentFlags().String("stage", "", "")
	run := func(*cobra.Command, []string) {}
	events := &cobra.Command{Use: "events", Run: run}
	events.Flags().String("status", "", "")
	events.Flags().String("since", "", "")
	events.Flags().Bool("json", false, "")
	send := &cobra.Command{Use: "send", Run: run}
	send.Flags().Bool("dev", false, "")
	send.Flags().Int("repeat", 1, "")
	send.Flags().String("secret", "", "")
	_ = send.Flags().MarkHidden("secret")
	verify := &cobra.Command{Use: "verify", Run: run}
	verify.Flags().String("header", "", "")
	verify.Flags().Bool("dev", false, "")
	verify.Flags().Bool("json", false, "")
	verify.Flags().Bool("payload", false, "")
	event := &cobra.Command{Use: "event", Run: run}
	event.Flags().Bool("json", false, "")
	event.Flags().Bool("payload", false, "")
	dlq := &cobra.Command{Use: "dlq"}
	redrive := &cobra.Command{Use: "redrive", Run: run}
	redrive.Flags().Int("max", 0, "")
	dlq.AddCommand(&cobra.Command{Use: "list", Run: run}, redrive)
	root.AddCommand(events, send, verify, event, dlq)
	return root
}

func TestCommands(t *testing.T) {
	c := &docs.Checker{Targets: map[string]bool{"dev": true, "test": true, "loadtest": true}, CLI: tree()}
	for _, tc := range []struct {
		name  string
		code  string
		block bool
		want  []string // substrings of the problems, in order
	}{
		{name: "make targets", code: "make dev\nmake test   # every test", block: true},
		{name: "unknown make target", code: "make dev && make tset", block: true, want: []string{`no target "tset"`}},
		{name: "make with variables", code: `DEV_FLAGS='-parameter-overrides "X=3"' make dev` + "\n" + `make loadtest LOADTEST_FLAGS="-n 500 -c 8"`, block: true},
		{name: "make placeholder", code: "make build-<Function>"},
		{name: "make in a comment", code: "sam deploy   # then make nothing", block: true},
		{name: "inline make", code: "make lnt", want: []string{`no target "lnt"`}},
		{name: "subcommands and flags", code: "inboxctl --stage prod events --status failed --since 24h --json\ninboxctl dlq redrive --max 10", block: true},
		{name: "unknown command", code: "inboxctl evnts --status failed", want: []string{`inboxctl: no command "evnts"`}},
		{name: "unknown nested command", code: "inboxctl dlq purge", want: []string{`inboxctl dlq: no command "purge"`}},
		{name: "unknown flag", code: "inboxctl events --statuses failed", want: []string{"inboxctl events: no flag --statuses"}},
		{name: "flag of another command", code: "inboxctl dlq list --max 5", want: []string{"inboxctl dlq list: no flag --max"}},
		{name: "hidden flag", code: "inboxctl send --secret whsec_x invoice.paid", want: []string{"--secret is hidden"}},
		{name: "go run", code: "go run ./cmd/inboxctl send --dev --repeat 3 invoice.paid", block: true},
		{name: "go run, unknown", code: "go run ./cmd/inboxctl sned", want: []string{`no command "sned"`}},
		{name: "building is no invocation", code: "go build -o bin/inboxctl ./cmd/inboxctl"},
		{name: "pipes and redirections", code: `inboxctl event evt_1 --payload | inboxctl verify --dev --header "$SIG" < body.json`, block: true},
		{name: "a pipe's second command", code: "inboxctl event evt_1 | inboxctl verfy", want: []string{`no command "verfy"`}},
		{name: "synopsis", code: "inboxctl event <event-id> [--json | --payload]\n" +
			"inboxctl verify --header 't=...,v1=...' [--dev]\n              [--json] [--payload] < body.json", block: true},
		{name: "synopsis continued, unknown", code: "inboxctl verify --header X\n              [--jsn]", block: true, want: []string{"inboxctl verify: no flag --jsn"}},
		{name: "placeholder command", code: "inboxctl <command> --help"},
		{name: "a shell prompt", code: "$ make tset", block: true, want: []string{`no target "tset"`}},
		{name: "not a command", code: "inboxctl:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Commands(tc.code, tc.block)
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want problems containing %q", got, tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("problem %d: got %q, want it to contain %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestMakeTargets(t *testing.T) {
	got := docs.MakeTargets([]byte(".PHONY: dev test\nVENV := .venv\nLOCK ?= x\n$(STAMP): dev/requirements.lock\n" +
		"dev: venv\n\texec bin/devstack\nbuild-A build-B: x\nlint:\n\tgo vet ./...\n"))
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"build-A", "build-B", "dev", "lint"}; !slices.Equal(names, want) {
		t.Errorf("got %q, want %q", names, want)
	}
}

// TestLinks builds a small repository and checks every kind of link.
func TestLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/ops.md", "# Operations\n\n## Rotating a signing secret\n\n## Cost: `make cost`\n\n## Runbooks\n\n## Runbooks\n\n"+
		"```sh\n# not a heading\n```\n\n<a id=\"custom\"></a>\n")
	write("docs/done.md", "# Written already\n")
	write("go.mod", "module x\n")
	readme := "# Title\n\n## Local part\n\n" +
		"[ok](docs/ops.md) [ok](docs/ops.md#rotating-a-signing-secret) [ok](docs/ops.md#cost-make-cost)\n" +
		"[ok](docs/ops.md#runbooks-1) [ok](docs/ops.md#custom) [ok](#local-part) [ok](https://example.com/#x)\n" +
		"[ok](go.mod) [ok](go.mod#L1) [ok](docs/) [ok](docs/pending.md)\n\n" +
		"[bad](docs/ops.md#encryption)\n\n" +
		"[bad](docs/gone.md)\n\n" +
		"[bad](#nowhere)\n\n" +
		"[bad](docs/ops.md#not-a-heading)\n\n" +
		"[bad](../outside.md)\n\n" +
		"[bad](docs/pending.md#part)\n\n" +
		"![bad](docs/img.png)\n\n" +
		"`inline [x](docs/gone.md) in code is no link`\n"
	c := &docs.Checker{Root: root, Pending: map[string]string{"docs/pending.md": "someone writes it", "docs/done.md": "written"}}
	var got []string
	for _, p := range c.Check([]*docs.Doc{docs.Parse("README.md", []byte(readme))}) {
		got = append(got, p.String())
	}
	want := []string{
		"README.md:9: link docs/ops.md#encryption: docs/ops.md has no heading with anchor #encryption",
		"README.md:11: link docs/gone.md: no file docs/gone.md",
		"README.md:13: link #nowhere: README.md has no heading with anchor #nowhere",
		"README.md:15: link docs/ops.md#not-a-heading: docs/ops.md has no heading with anchor #not-a-heading",
		"README.md:17: link ../outside.md: leaves the repository",
		"README.md:19: link docs/pending.md#part: docs/pending.md is not written yet",
		"README.md:21: link docs/img.png: no file docs/img.png",
		"docs/done.md:0: exists now: remove it from Pending",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems:\n%s\nwant %d:\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\ngot  %s\nwant %s...", i, got[i], want[i])
		}
	}
}

func TestTestNames(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a_test.go"), []byte("package a\n\nfunc TestHere(t *testing.T) {}\nfunc BenchmarkThere(b *testing.B) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names, err := docs.TestNames(root)
	if err != nil {
		t.Fatal(err)
	}
	c := &docs.Checker{Root: root, Tests: names}
	got := c.Check([]*docs.Doc{docs.Parse("README.md", []byte("`TestHere` and `BenchmarkThere`, `TestGone`\n\n```sh\ngo test -run TestMissing ./...\n```\n"))})
	if len(got) != 2 || !strings.Contains(got[0].Msg, "TestGone") || !strings.Contains(got[1].Msg, "TestMissing") {
		t.Errorf("got %v, want TestGone and TestMissing reported", got)
	}
}

// TestSamCommandsAndSecrets: a deploy runs from a samconfig.toml
// environment, never --guided; no command line the docs show carries a
// secret's value.
func TestSamCommandsAndSecrets(t *testing.T) {
	c := &docs.Checker{SamEnvs: map[string]bool{"dev": true, "prod": true}}
	for _, tc := range []struct {
		name string
		code string
		want []string
	}{
		{"deploy an environment", "sam build && sam deploy --config-env prod", nil},
		{"placeholder environment", "sam deploy --config-env <env>", nil},
		{"guided", "sam build && sam deploy --guided", []string{"--guided: its prompts stop on defaults", "sam deploy without --config-env"}},
		{"no environment", "sam deploy", []string{"sam deploy without --config-env"}},
		{"unknown environment", "sam delete --config-env staging", []string{`samconfig.toml has no environment "staging"`}},
		{"other commands need none", "sam logs --stack-name webhook-inbox-dev --tail", nil},
		{"a value from stdin", `(read -rsp 'Key: ' k; printf %s "$k") | aws ssm put-parameter --type SecureString --name /x --value file:///dev/stdin`, nil},
		{"a value on the command line", `aws ssm put-parameter --type SecureString --name /x --value "$KEY"`, []string{"--value $KEY: a secret on the command line"}},
		{"a literal on the command line", `awslocal ssm put-parameter --name /x --value=whsec_live`, []string{"--value whsec_live"}},
		{"the development secret is public", `awslocal ssm put-parameter --name /x --value whsec_local_development_only`, nil},
		{"an exported secret", "export STRIPE_WEBHOOK_SECRET=whsec_123", []string{"STRIPE_WEBHOOK_SECRET=...: a secret typed on a command line"}},
		{"an assignment before a command", "STRIPE_API_KEY=rk_test_1 inboxctl reconcile", []string{"STRIPE_API_KEY=..."}},
		{"read from the terminal", "read -rs STRIPE_WEBHOOK_SECRET && export STRIPE_WEBHOOK_SECRET", nil},
		{"from a command", "export STRIPE_WEBHOOK_SECRET=$(stripe listen --print-secret)", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Commands(tc.code, true)
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want problems containing %q", got, tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("problem %d: got %q, want it to contain %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

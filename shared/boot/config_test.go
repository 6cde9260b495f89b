package boot_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/bridgeboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/processorboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// parsers are the functions' configuration parsers, by the template's
// function: each reads its function's whole environment. The reconciler
// function runs the audit too, which reads its own at its first run.
var parsers = map[string]func(boot.Env){
	"ReceiverFunction": func(env boot.Env) { _, _ = receiverboot.ConfigFromEnv(env, aws.Config{}) },
	"ProcessorFunction": func(env boot.Env) {
		_, _ = processorboot.ConfigFromEnv(env, aws.Config{}, &effect.Registry{})
	},
	"ReconcilerFunction": func(env boot.Env) {
		_, _ = reconcilerboot.ConfigFromEnv(env, aws.Config{})
		_, _ = reconcilerboot.AuditConfigFromEnv(env, aws.Config{}, &effect.Registry{})
	},
	"BridgeFunction": func(env boot.Env) { _, _ = bridgeboot.ConfigFromEnv(env, aws.Config{}) },
}

// unread are the variables the template gives the functions that no
// parser reads, and why.
var unread = map[string]string{
	// A new value changes every function's configuration, so Lambda
	// replaces every warm environment, which reads its secrets anew.
	"SECRETS_VERSION": "rotation: a new value replaces the warm environments",
}

// triggers are values under which a parser reads the variables that
// depend on another: the forward effect's secret, GitHub's credentials,
// the audit's effects, the senders' secrets.
var triggers = map[string]string{
	"FORWARD_URL":       "https://forward.example.com/hook",
	"GITHUB_HOOKS":      "repo:o/r/1,app:2",
	"AUDIT_RUN_EFFECTS": "true",
	"GENERIC_SENDERS":   `[{"name":"n8n","signature_header":"x-n8n-signature","id_field":"id","type_field":"type"}]`,
}

// templateVariables returns the variables template.yaml gives each
// function of parsers, with every condition on: each parameter a
// condition compares with "" set, and the audit running the effects.
func templateVariables(t *testing.T) map[string][]string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "template.yaml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]string{"AuditRunEffects": "true"}
	for _, m := range regexp.MustCompile(`!Equals \[!Ref (\w+), ""\]`).FindAllStringSubmatch(string(text), -1) {
		on[m[1]] = "/webhook-inbox/dev/" + m[1]
	}
	tmpl, err := template.Load(path, on)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for id := range parsers {
		f, err := tmpl.Function(id)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = slices.Sorted(maps.Keys(f.Environment))
	}
	return out
}

// TestEveryTemplateVariableIsParsed: each variable template.yaml gives a
// function is read by that function's parser, so a variable the template
// sets and the code forgot (or renamed) fails here, not in a deployed
// cold start that silently takes a default.
func TestEveryTemplateVariableIsParsed(t *testing.T) {
	for id, vars := range templateVariables(t) {
		t.Run(id, func(t *testing.T) {
			var mu sync.Mutex
			read := map[string]bool{}
			parsers[id](func(k string) string {
				mu.Lock()
				defer mu.Unlock()
				read[k] = true
				return triggers[k]
			})
			for _, v := range vars {
				if _, ok := unread[v]; !ok && !read[v] {
					t.Errorf("template.yaml gives %s the variable %s, which its parser does not read", id, v)
				}
			}
		})
	}
}

// parserDirs are the packages that read the variables: shared/boot and
// each function's boot package. provider.SendersVariable names
// GENERIC_SENDERS where the senders' format is defined.
var parserDirs = []string{"shared/boot", "shared/boot/receiverboot", "shared/boot/processorboot", "shared/boot/reconcilerboot", "shared/boot/bridgeboot"}

var nameHomes = map[string]bool{"shared/providers/provider/generic.go": true}

// environments are the files that may spell the variables, and why: each
// builds or checks a deployed function's environment (or reads the
// operator's, whose variables inboxctl shares by design), not a
// configuration to call a constructor with in-process. A file listed
// that no longer spells one fails the test, so the list only shrinks.
var environments = map[string]string{
	"tools/template/template_test.go":          tmplTest,
	"tools/template/audit_test.go":             tmplTest,
	"tools/template/eventbridge_test.go":       tmplTest,
	"shared/pipeline/reconcile/unit_test.go":   tmplTest,
	"shared/pipeline/processor/budget_test.go": tmplTest,
	"tools/provision/provision_test.go":        tmplTest,
	"tools/cmd/provision/main_test.go":         tmplTest,
	"tools/devstack/devstack.go":               derived,
	"tools/devstack/devstack_test.go":          derived,
	"tools/cmd/devstack/main.go":               derived,
	"tools/failpoints/start.go":                derived,
	"tools/failpoints/stack.go":                derived,
	"tools/cost/setup.go":                      derived,
	"tools/cost/scenarios.go":                  derived,
	"tools/cost/report.go":                     derived,
	"tools/loadtest/loadtest.go":               derived,
	"tools/demo/demo.go":                       derived,
	"tools/devconsole/devconsole.go":           operator,
	"internal/cli/stack.go":                    operator,
	"internal/cli/console.go":                  operator,
	"internal/cli/reconcile.go":                deployed,
	"internal/cli/audit.go":                    deployed,
	"internal/cli/stage_test.go":               deployed,
	"internal/cli/providers_test.go":           deployed,
	"internal/cli/world_test.go":               operator,
	"e2e/github_redelivery_test.go":            derived,
	"e2e/providers_test.go":                    derived,
	"e2e/lambda/github_reconciler_test.go":     binaries,
	"e2e/lambda/bridge_test.go":                binaries,
	"e2e/lambda/forward_test.go":               binaries,
	"e2e/lambda/effect_test.go":                binaries,
	"e2e/lambda/functions_test.go":             binaries,
	"e2e/browser/console_test.go":              derived,
	"drills/harness_test.go":                   derived,
	"drills/drills_test.go":                    derived,
}

const (
	tmplTest = "checks what template.yaml gives a function"
	derived  = "derives a function's environment from template.yaml (the local stack's Options.Env overlays it), which the parser then reads"
	deployed = "rebuilds the deployed function's environment from the stack's parameters, which the parser then reads"
	operator = "reads the operator's environment (inboxctl's variables are the functions')"
	binaries = "runs the real binaries with the template's environment"
)

// TestVariablesAreSpelledOnlyByTheParsers: no Go file outside the parsers
// (and the environments above) has a string literal equal to a variable
// the template gives a function: a caller in the same process builds the
// function's Config instead of a fake environment.
func TestVariablesAreSpelledOnlyByTheParsers(t *testing.T) {
	names := map[string]bool{}
	for _, vars := range templateVariables(t) {
		for _, v := range vars {
			names[v] = true
		}
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || slices.Contains(parserDirs, filepath.ToSlash(filepath.Dir(rel))) || nameHomes[rel] {
			return nil
		}
		lits := spelled(t, path, names)
		seen[rel] = len(lits) > 0
		if _, ok := environments[rel]; ok {
			return nil
		}
		for _, lit := range lits {
			t.Errorf("%s spells the variable %s: build the function's Config (package boot's parsers read the environment)", rel, lit)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range slices.Sorted(maps.Keys(environments)) {
		if !seen[rel] {
			t.Errorf("environments lists %s, which spells no variable now: remove it", rel)
		}
	}
}

// spelled returns the string literals of the Go file path that are in
// names.
func spelled(t *testing.T, path string, names map[string]bool) []string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil && names[v] {
				out = append(out, v)
			}
		}
		return true
	})
	return out
}

package samconfig_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/cli"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/samconfig"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

func TestParseOverridesAsSAMDoes(t *testing.T) {
	for _, tc := range []struct {
		entries []string
		want    map[string]string
		err     string
	}{
		{[]string{"Stage=dev", "RetentionDays=31"}, map[string]string{"Stage": "dev", "RetentionDays": "31"}, ""},
		{[]string{`ReconcileRate="rate(10 minutes)"`}, map[string]string{"ReconcileRate": "rate(10 minutes)"}, ""},
		{[]string{`AlarmEmail=""`}, map[string]string{"AlarmEmail": ""}, ""},
		{[]string{`X=a\ b`, "A=1 B=2"}, map[string]string{"X": "a b", "A": "1", "B": "2"}, ""},
		{[]string{"MirrorKeepFields=subscription:metadata.app_user_id,*:metadata.tenant"}, map[string]string{"MirrorKeepFields": "subscription:metadata.app_user_id,*:metadata.tenant"}, ""},
		// What SAM reads differently from how it looks.
		{[]string{"ReconcileRate=rate(10 minutes)"}, nil, `SAM reads it as ReconcileRate="rate(10" and cannot place "minutes)"`},
		{[]string{"AlarmEmail="}, nil, "SAM reads it as nothing"},
		{[]string{"Stage=dev", "Stage=prod"}, nil, "Stage given twice"},
	} {
		got, err := samconfig.ParseOverrides(tc.entries)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: got %v, %v; want an error saying %q", tc.entries, got, err, tc.err)
		case tc.err == "" && (err != nil || !maps.Equal(got, tc.want)):
			t.Errorf("%q: got %v, %v; want %v", tc.entries, got, err, tc.want)
		}
	}
}

// TestEveryEnvironmentDeploysTheTemplate holds each environment of
// samconfig.toml that deploys to what `sam deploy --config-env <env>` and
// the stack need, so that the documented deploy (never --guided) works as
// written: every parameter it names exists, as SAM reads it, with a value
// CloudFormation accepts (AllowedValues, AllowedPattern, MinValue, ...) and
// the template's Rules allow; every parameter without a default is given;
// the environment deploys the stage it is named after, dev in test mode
// and prod in live mode; the stack is the one `inboxctl --stage <Stage>`
// looks for; and each secret's parameter is under the stage's path, as the
// functions insist at cold start (a deploy that passed CloudFormation would
// otherwise fail every invocation).
func TestEveryEnvironmentDeploysTheTemplate(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := samconfig.Load(filepath.Join(root, "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.Load(filepath.Join(root, "template.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	params := tmpl.Parameters()
	deploys := 0
	for _, name := range slices.Sorted(maps.Keys(envs)) {
		env := envs[name]
		if env.Deploy == nil {
			continue
		}
		deploys++
		t.Run(name, func(t *testing.T) {
			for _, k := range slices.Sorted(maps.Keys(env.Overrides)) {
				decl, ok := params[k]
				if !ok {
					t.Errorf("parameter_overrides names %s, which template.yaml does not declare", k)
					continue
				}
				if msg := allowed(decl, env.Overrides[k]); msg != "" {
					t.Errorf("%s=%q: %s", k, env.Overrides[k], msg)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(params)) {
				if _, hasDefault := params[k]["Default"]; !hasDefault {
					if _, given := env.Overrides[k]; !given {
						t.Errorf("template parameter %s has no default and parameter_overrides does not give it", k)
					}
				}
			}
			overrides := env.Overrides
			if env.Overrides["Stage"] == "prod" && env.Overrides["AlarmEmail"] == "" {
				// prod ships without the team's on-call address, which only
				// the operator knows: the template refuses it until it is
				// set (ProdAlarmsReachSomeone), and accepts the rest.
				_, err := template.Load(filepath.Join(root, "template.yaml"), overrides)
				if err == nil || !strings.Contains(err.Error(), "ProdAlarmsReachSomeone") {
					t.Errorf("prod without AlarmEmail: got %v, want the template's ProdAlarmsReachSomeone refusal", err)
				}
				overrides = maps.Clone(overrides)
				overrides["AlarmEmail"] = "oncall@example.com"
			}
			if _, err := template.Load(filepath.Join(root, "template.yaml"), overrides); err != nil {
				t.Errorf("the template with these overrides: %v", err)
			}
			stage := env.Overrides["Stage"]
			if stage == "" {
				t.Fatal("no Stage: name the stage, which names the stack and the secrets' path")
			}
			if stage != name {
				t.Errorf("Stage=%s in environment %s: `sam deploy --config-env %s` would deploy another stage than it names", stage, name, name)
			}
			if want := cli.StackName(stage); env.StackName != want {
				t.Errorf("stack_name %q for Stage=%s: inboxctl --stage %s looks for %s (or pass --stack)", env.StackName, stage, stage, want)
			}
			for _, k := range []string{"WebhookSecretsParameter", "ApiKeyParameter", "ForwardSecretParameter"} {
				if v := env.Overrides[k]; v != "" && !strings.Contains(v+"/", "/"+stage+"/") {
					t.Errorf("%s=%s is not under stage %s's path: the functions refuse to start", k, v, stage)
				}
			}
			if caps := fmt.Sprint(env.Deploy["capabilities"]); !strings.Contains(caps, "CAPABILITY_IAM") {
				t.Errorf("capabilities %q: the template creates IAM roles, CloudFormation needs CAPABILITY_IAM", caps)
			}
			if _, ok := env.Deploy["guided"]; ok {
				t.Error("guided: the deploy runs from samconfig.toml, never --guided")
			}
		})
	}
	if deploys < 2 {
		t.Errorf("%d environments deploy, want dev and prod at least", deploys)
	}
	// docs/operations.md's first deploy is dev in test mode, and "Switching
	// to live mode" deploys prod.
	for name, mode := range map[string]string{"dev": "test", "prod": "live"} {
		if env, ok := envs[name]; !ok || env.Overrides["StripeMode"] != mode {
			t.Errorf("environment %s: want StripeMode=%s, as docs/operations.md deploys it", name, mode)
		}
	}
}

// allowed checks a value against a parameter's declaration as
// CloudFormation does before a deploy.
func allowed(decl map[string]any, v string) string {
	if vs, ok := decl["AllowedValues"].([]any); ok {
		found := false
		for _, a := range vs {
			found = found || template.Scalar(a) == v
		}
		if !found {
			return fmt.Sprintf("not one of AllowedValues %v", vs)
		}
	}
	if p, ok := decl["AllowedPattern"].(string); ok && !regexp.MustCompile(`^(?:`+p+`)$`).MatchString(v) {
		return "does not match AllowedPattern " + p
	}
	if decl["Type"] == "Number" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return "not a Number"
		}
		if lo, ok := template.Int(decl["MinValue"]); ok && n < float64(lo) {
			return fmt.Sprintf("below MinValue %d", lo)
		}
		if hi, ok := template.Int(decl["MaxValue"]); ok && n > float64(hi) {
			return fmt.Sprintf("above MaxValue %d", hi)
		}
	}
	return ""
}

// TestTheDocsExplainEveryParameterAnEnvironmentSets: the deploy section of
// docs/operations.md has a row for each parameter a samconfig.toml
// environment sets, and for each without a default: what to choose.
func TestTheDocsExplainEveryParameterAnEnvironmentSets(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	envs, err := samconfig.Load(filepath.Join(root, "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.Load(filepath.Join(root, "template.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, env := range envs {
		for k := range env.Overrides {
			set[k] = true
		}
	}
	for k, decl := range tmpl.Parameters() {
		if _, ok := decl["Default"]; !ok {
			set[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if !regexp.MustCompile("(?m)^\\| `" + k + "`").Match(doc) {
			t.Errorf("docs/operations.md has no table row for %s (| `%s` | ...), which a deployment chooses", k, k)
		}
	}
}

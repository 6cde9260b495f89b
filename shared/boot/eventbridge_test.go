package boot_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/bridge"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

var update = flag.Bool("update", false, "rewrite template.yaml's EventBridge rule with the handled types")

// TestEventBridgeRuleRoutesTheHandledTypes holds the rule of Stripe's
// EventBridge destination to the receiver's allowlist, the one source of
// the types the receiver accepts (boot.AcceptedTypeList: the handled
// types of boot.HandledTypeList with the team's effects, and their thin forms, as a
// deployed function reads it: the template sets no EVENT_TYPES): the rule
// routes exactly those to the ingress queue, and only Stripe's partner
// sources. With -update it rewrites the rule's list in template.yaml.
func TestEventBridgeRuleRoutesTheHandledTypes(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "template.yaml")
	want := boot.AcceptedTypeList(nil, hooks.Registry())
	if len(want) == 0 {
		t.Fatal("the allowlist is empty")
	}
	if *update {
		if err := rewriteRuleTypes(path, want); err != nil {
			t.Fatal(err)
		}
	}
	tmpl, err := template.Load(path, map[string]string{"StripeEventSourceName": bridge.PartnerSourcePrefix + "/ed_test_rule"})
	if err != nil {
		t.Fatal(err)
	}
	rule, ok := tmpl.Resource("StripeEventRule")
	if !ok {
		t.Fatal("template: no StripeEventRule with StripeEventSourceName set")
	}
	pattern, _ := rule.Properties["EventPattern"].(map[string]any)
	var got []string
	types, _ := pattern["detail-type"].([]any)
	for _, v := range types {
		got = append(got, fmt.Sprint(v))
	}
	if !slices.Equal(got, want) {
		t.Errorf(
			"StripeEventRule's detail-type:\n got  %v\n want %v (the handled types)\nrun: go test ./shared/boot -run TestEventBridgeRuleRoutesTheHandledTypes -update",
			got,
			want,
		)
	}
	if src := fmt.Sprint(pattern["source"]); src != "[map[prefix:"+bridge.PartnerSourcePrefix+"]]" {
		t.Errorf("StripeEventRule's source: got %s, want a prefix of %s", src, bridge.PartnerSourcePrefix)
	}
	if len(pattern) != 2 {
		t.Errorf("StripeEventRule's pattern: got %v, want source and detail-type only", pattern)
	}
	// Off by default: none of the destination's resources without the
	// parameter.
	off, err := template.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"StripeEventBus", "StripeEventRule", "IngressQueue", "IngressDeadLetterQueue", "IngressQueuePolicy", "BridgeFunction"} {
		if _, ok := off.Resource(id); ok {
			t.Errorf("%s is in the template without StripeEventSourceName", id)
		}
	}
}

// ruleTypes finds the rule's detail-type list: the line naming it and the
// list items below it.
var ruleTypes = regexp.MustCompile(`(?m)^(\s+)detail-type:\n((?:\s+- .*\n)+)`)

// rewriteRuleTypes replaces the detail-type list of StripeEventRule in the
// template at path by types, keeping every other byte (the comments too).
func rewriteRuleTypes(path string, types []string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	start := strings.Index(s, "\n  StripeEventRule:\n")
	if start < 0 {
		return fmt.Errorf("%s: no StripeEventRule", path)
	}
	loc := ruleTypes.FindStringSubmatchIndex(s[start:])
	if loc == nil {
		return fmt.Errorf("%s: StripeEventRule has no detail-type list", path)
	}
	indent := s[start+loc[2] : start+loc[3]]
	var b strings.Builder
	for _, ty := range types {
		b.WriteString(indent + "  - " + ty + "\n")
	}
	out := s[:start+loc[4]] + b.String() + s[start+loc[5]:]
	return os.WriteFile(path, []byte(out), 0o644)
}

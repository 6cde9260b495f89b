package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/docs"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// TestEveryAlarmHasARunbookSection: each alarm in template.yaml has a
// section of docs/runbook.md named as the alarm, with what to run
// (inboxctl) and a Logs Insights query that follows an event by its
// event_id; and the alarm's description, which its notification carries,
// links to that section. An alarm added without one fails here.
func TestEveryAlarmHasARunbookSection(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.Load(filepath.Join(root, "template.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The optional features' alarms too: Stripe's EventBridge destination.
	full, err := template.Load(filepath.Join(root, "template.yaml"), map[string]string{"StripeEventSourceName": "aws.partner/stripe.com/ed_test_runbook"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "docs", "runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := docs.Parse("docs/runbook.md", src)
	base, ok := tmpl.Parameter("RunbookUrl")
	if !ok || base != "docs/runbook.md" {
		t.Fatalf("RunbookUrl's default is %q, want docs/runbook.md (the alarms link to its sections)", base)
	}
	alarms := tmpl.Resources("AWS::CloudWatch::Alarm")
	if len(alarms) < 8 {
		t.Fatalf("template.yaml has %d alarms, want the 8 at least", len(alarms))
	}
	if optional := full.Resources("AWS::CloudWatch::Alarm"); len(optional) > len(alarms) {
		alarms = optional
	} else {
		t.Fatalf("template.yaml has no alarm of its own for Stripe's EventBridge destination (got %d with it, %d without)", len(optional), len(alarms))
	}
	for _, a := range alarms {
		section := sectionOf(string(src), a.LogicalID)
		if section == "" {
			t.Errorf("%s: docs/runbook.md has no section `## %s`", a.LogicalID, a.LogicalID)
			continue
		}
		anchor := docs.Slug(a.LogicalID)
		if !doc.Anchors[anchor] {
			t.Errorf("%s: no anchor #%s in docs/runbook.md", a.LogicalID, anchor)
		}
		desc := template.Scalar(a.Properties["AlarmDescription"])
		if !strings.HasSuffix(strings.TrimSpace(desc), base+"#"+anchor) {
			t.Errorf("%s: AlarmDescription %q does not end with a link to its runbook section, %s#%s", a.LogicalID, desc, base, anchor)
		}
		for _, want := range []string{"**Means:**", "inboxctl ", "```text", `filter event_id = "evt_`} {
			if !strings.Contains(section, want) {
				t.Errorf("%s: its runbook section has no %q (what it means, what to run, a Logs Insights query by event_id)", a.LogicalID, want)
			}
		}
	}
}

// sectionOf returns the text of the `## heading` section of a Markdown
// document, up to the next heading of that level.
func sectionOf(src, heading string) string {
	_, rest, ok := strings.Cut(src, "\n## "+heading+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

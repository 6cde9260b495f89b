package reconcilerboot

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// TestTheAuditScheduleReachesTheAudit: the template's Audit schedule sends
// AuditInput, which the handler hands to the audit (here its configuration
// is refused, so the run goes no further); any other payload is the
// reconciliation's (here a since it refuses).
func TestTheAuditScheduleReachesTheAudit(t *testing.T) {
	tmpl, err := template.Load("../../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tmpl.Function("ReconcilerFunction")
	if err != nil {
		t.Fatal(err)
	}
	input, _ := f.Events["Audit"].Properties["Input"].(string)
	if input != AuditInput {
		t.Fatalf("the template's Audit Input is %q, want AuditInput %q", input, AuditInput)
	}
	if resume, _ := f.Events["AuditResume"].Properties["Input"].(string); resume != AuditResumeInput {
		t.Fatalf("the template's AuditResume Input is %q, want AuditResumeInput %q", resume, AuditResumeInput)
	}
	env := envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"STRIPE_API_KEY": "sk_test_local", "STRIPE_API_BASE": "http://127.0.0.1:1",
		"AUDIT_MAX_PAGES": "0",
	})
	cfg := aws.Config{Region: "us-east-1"}
	rec, err := FromEnv(context.Background(), env, cfg, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := Handler(AuditFromEnv(env, cfg, nil), cfg, slog.Default(), rec, nil)
	if err := h(context.Background(), json.RawMessage(input)); err == nil || !strings.Contains(err.Error(), "AUDIT_MAX_PAGES") {
		t.Errorf("audit payload: got %v, want the audit's refusal of AUDIT_MAX_PAGES=0", err)
	}
	if err := h(context.Background(), json.RawMessage(AuditResumeInput)); err == nil || !strings.Contains(err.Error(), "AUDIT_MAX_PAGES") {
		t.Errorf("audit resume payload: got %v, want the audit's refusal of AUDIT_MAX_PAGES=0", err)
	}
	if err := h(context.Background(), json.RawMessage(`{"since":"soon"}`)); err == nil || !strings.Contains(err.Error(), "since") ||
		strings.Contains(err.Error(), "AUDIT") {
		t.Errorf("reconcile payload: got %v, want the reconciliation's refusal of since", err)
	}
}

package template

import (
	"encoding/json"
	"testing"
)

// TestTheAuditRunsOnItsOwnScheduleThroughTheReconciler: the
// scheduled audit is a second schedule of the reconciler function (its
// key, rate limit and one run at a time), on the AuditRate parameter
// (daily by default, overridable), with the payload the function reads as
// "audit", and its failures kept where the reconciler's are; the
// reconciliation's own schedule is still Schedule().
func TestTheAuditRunsOnItsOwnScheduleThroughTheReconciler(t *testing.T) {
	tmpl := load(t, nil)
	if v, ok := tmpl.Parameter("AuditRate"); !ok || v != "rate(1 day)" {
		t.Fatalf("AuditRate: got %q (%v), want the parameter, default rate(1 day)", v, ok)
	}
	f, err := tmpl.Function("ReconcilerFunction")
	if err != nil {
		t.Fatal(err)
	}
	if expr, ok := f.ScheduleOf("Audit"); !ok || expr != "rate(1 day)" {
		t.Errorf("Audit schedule: got %q (%v), want AuditRate's default", expr, ok)
	}
	if expr, _ := f.Schedule(); expr != "rate(10 minutes)" {
		t.Errorf("Schedule(): got %q, want the reconciliation's ReconcileRate", expr)
	}
	ev := f.Events["Audit"]
	var in struct {
		Run string `json:"run"`
	}
	if s, _ := ev.Properties["Input"].(string); json.Unmarshal([]byte(s), &in) != nil || in.Run != "audit" {
		t.Errorf("Audit Input: got %v, want {\"run\":\"audit\"} (reconcilerboot.AuditInput)", ev.Properties["Input"])
	}
	dlq, _ := ev.Properties["DeadLetterConfig"].(map[string]any)
	if _, target, ok := Symbol(dlq["Arn"]); !ok || target.LogicalID != "ReconcilerDeadLetterQueue" {
		t.Errorf("Audit DeadLetterConfig: got %v, want ReconcilerDeadLetterQueue", dlq)
	}
	retry, _ := ev.Properties["RetryPolicy"].(map[string]any)
	if n, ok := Int(retry["MaximumRetryAttempts"]); !ok || n > 5 {
		t.Errorf("Audit RetryPolicy: got %v, want a few retries", retry)
	}
	// A pass cut by a run's budget continues within minutes, its failures
	// kept in the same queue.
	if expr, ok := f.ScheduleOf("AuditResume"); !ok || expr != "rate(10 minutes)" {
		t.Errorf("AuditResume schedule: got %q (%v), want rate(10 minutes)", expr, ok)
	}
	rdlq, _ := f.Events["AuditResume"].Properties["DeadLetterConfig"].(map[string]any)
	if _, target, ok := Symbol(rdlq["Arn"]); !ok || target.LogicalID != "ReconcilerDeadLetterQueue" {
		t.Errorf("AuditResume DeadLetterConfig: got %v, want ReconcilerDeadLetterQueue", rdlq)
	}
	// The repairs keep what the processor's writes keep.
	p, _ := tmpl.Function("ProcessorFunction")
	if a, b := Scalar(f.Environment["MIRROR_KEEP_FIELDS"]), Scalar(p.Environment["MIRROR_KEEP_FIELDS"]); a != b {
		t.Errorf("MIRROR_KEEP_FIELDS: reconciler %q, processor %q", a, b)
	}

	over := load(t, map[string]string{"AuditRate": "rate(7 days)"})
	g, _ := over.Function("ReconcilerFunction")
	if expr, _ := g.ScheduleOf("Audit"); expr != "rate(7 days)" {
		t.Errorf("AuditRate override: got %q", expr)
	}
}

// TestTheAuditRunsNoEffectUnlessAsked: AuditRunEffects is off by default,
// and then the reconciler has neither the effects' settings nor a grant on
// their secrets; on, it has both, as the processor does.
func TestTheAuditRunsNoEffectUnlessAsked(t *testing.T) {
	grants := func(tmpl *Template) bool {
		r, _ := tmpl.Resource("ReconcilerFunction")
		for _, p := range r.Properties["Policies"].([]any) {
			m, _ := p.(map[string]any)
			sts, _ := m["Statement"].([]any)
			for _, st := range sts {
				if s, _ := st.(map[string]any); s["Sid"] == "ReadEffectSecrets" {
					return true
				}
			}
		}
		return false
	}
	effects := map[string]string{"EffectSettings": "BILLING_API_URL=https://billing.example.com/v1/paid", "EffectSecrets": "billing-api-token"}
	off := load(t, effects)
	f, _ := off.Function("ReconcilerFunction")
	if v := Scalar(f.Environment["AUDIT_RUN_EFFECTS"]); v != "false" {
		t.Errorf("AUDIT_RUN_EFFECTS by default: got %q, want false", v)
	}
	if _, ok := f.Environment["EFFECT_SETTINGS"]; ok || grants(off) {
		t.Errorf("off: the reconciler gets the effects' settings (%v) or their secrets' grant (%v)", f.Environment["EFFECT_SETTINGS"], grants(off))
	}
	on := map[string]string{"AuditRunEffects": "true"}
	for k, v := range effects {
		on[k] = v
	}
	tmpl := load(t, on)
	g, _ := tmpl.Function("ReconcilerFunction")
	if Scalar(g.Environment["AUDIT_RUN_EFFECTS"]) != "true" || Scalar(g.Environment["EFFECT_SETTINGS"]) != effects["EffectSettings"] ||
		Scalar(g.Environment["EFFECT_SECRETS"]) != effects["EffectSecrets"] || !grants(tmpl) {
		t.Errorf("on: env %v, grant %v; want the effects' settings, secrets and the grant on their path", g.Environment, grants(tmpl))
	}
}

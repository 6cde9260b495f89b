package processor

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// TestTheTemplatesRetryBudget holds template.yaml to the processor's
// retry rule: its default parameters retry an event for at least six
// hours before dead-lettering it, the processor gets the same parameters
// (RETRY_BACKOFF_BASE, RETRY_BACKOFF_MAX, MAX_RECEIVE_COUNT), the total
// the template and docs/operations.md state is the one RetryBudget
// computes, the queue's redrive policy dead-letters on the same receive,
// and the webhook queue keeps a message at least twice the longest budget
// the processor accepts.
func TestTheTemplatesRetryBudget(t *testing.T) {
	tmpl, err := template.Load("../../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	seconds := func(name string) time.Duration {
		v, ok := tmpl.Parameter(name)
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			t.Fatalf("parameter %s: %q", name, v)
		}
		return time.Duration(n) * time.Second
	}
	base, max := seconds("RetryBackoffBase"), seconds("RetryBackoffMax")
	receives, _ := strconv.Atoi(func() string { v, _ := tmpl.Parameter("MaxReceiveCount"); return v }())
	if base != DefaultBackoffBase || max != DefaultBackoffMax {
		t.Errorf("template defaults %v, %v; the processor's %v, %v: want the same", base, max, DefaultBackoffBase, DefaultBackoffMax)
	}
	budget := RetryBudget(base, max, receives)
	if budget < 6*time.Hour {
		t.Errorf("default retry budget: got %v, want at least 6 h", budget)
	}
	stated := fmt.Sprintf("%d h %d min", int(budget.Hours()), int(budget.Minutes())%60)
	raw, err := os.ReadFile("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"template.yaml": string(raw), "docs/operations.md": string(docs)} {
		flat := strings.Join(strings.Fields(text), " ")
		if !strings.Contains(flat, stated) {
			t.Errorf("%s does not state the default retry budget, %s", name, stated)
		}
	}

	fn, err := tmpl.Function("ProcessorFunction")
	if err != nil {
		t.Fatal(err)
	}
	for key, param := range map[string]string{"RETRY_BACKOFF_BASE": "RetryBackoffBase", "RETRY_BACKOFF_MAX": "RetryBackoffMax", "MAX_RECEIVE_COUNT": "MaxReceiveCount"} {
		v, _ := tmpl.Parameter(param)
		if got := template.Scalar(fn.Environment[key]); got != v {
			t.Errorf("processor's %s: got %q, want parameter %s (%s)", key, got, param, v)
		}
	}
	q, ok := tmpl.Resource("WebhookQueue")
	if !ok {
		t.Fatal("no WebhookQueue")
	}
	// SQS moves a message to the DLQ after the redrive policy's count; the
	// processor marks its record dead_lettered on MAX_RECEIVE_COUNT: the
	// two must be the same parameter, or the store and the DLQ disagree.
	rp, _ := q.Properties["RedrivePolicy"].(map[string]any)
	if got, ok := template.Int(rp["maxReceiveCount"]); !ok || got != receives {
		t.Errorf("WebhookQueue's redrive maxReceiveCount: got %v, want parameter MaxReceiveCount (%d)", rp["maxReceiveCount"], receives)
	}
	retention, _ := template.Int(q.Properties["MessageRetentionPeriod"])
	if time.Duration(retention)*time.Second < 2*MaxRetryBudget {
		t.Errorf("queue retention %d s: want at least twice MaxRetryBudget (%v)", retention, MaxRetryBudget)
	}
	if max > MaxBackoff {
		t.Errorf("RetryBackoffMax default %v over SQS's limit %v", max, MaxBackoff)
	}
}

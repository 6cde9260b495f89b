package mirror_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependsNotOnProcessor: the processor depends on the mirror (it
// commits the mirror's Plan), never the reverse, so the mirror can be read
// (inboxctl, the load test) without linking the processor.
func TestDependsNotOnProcessor(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages, want the mirror's whole dependency graph", len(deps))
	}
	for _, d := range deps {
		if strings.HasSuffix(d, "/shared/pipeline/processor") {
			t.Errorf("shared/stripe/mirror depends on %s", d)
		}
	}
}

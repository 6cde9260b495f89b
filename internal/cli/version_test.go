package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/version"
)

func TestVersionPrintsTheRelease(t *testing.T) {
	r := offline(t).run(context.Background(), "version").must(t, 0)
	if !strings.HasPrefix(r.stdout, "inboxctl "+version.Version+" (go") {
		t.Errorf("inboxctl version: %q, want inboxctl %s and the Go release", r.stdout, version.Version)
	}
}

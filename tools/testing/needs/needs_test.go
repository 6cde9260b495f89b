package needs

import (
	"strings"
	"testing"
)

// recorder is a testing.TB that records a skip instead of stopping the
// goroutine, so that skip's decision can be asserted.
type recorder struct {
	testing.TB
	skipped string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = format
	if len(args) > 0 {
		r.skipped = strings.ReplaceAll(format, "%s", args[0].(string))
	}
}

// TestSkipsOnlyUnderShort: the fast path skips a test that needs the
// emulator, and says what it needs; a run without -short (make test, CI)
// never skips it.
func TestSkipsOnlyUnderShort(t *testing.T) {
	for _, tc := range []struct {
		name  string
		short bool
		want  string
	}{
		{"short", true, "needs the AWS emulator: skipped under -short; make test runs it"},
		{"full", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			skip(r, tc.short, "the AWS emulator")
			if r.skipped != tc.want {
				t.Errorf("got skip %q, want %q", r.skipped, tc.want)
			}
		})
	}
}

// TestShortFollowsTheFlag: Short is go test's -short, as this binary was
// run.
func TestShortFollowsTheFlag(t *testing.T) {
	if got, want := Short(), testing.Short(); got != want {
		t.Errorf("got Short() %v, want testing.Short() %v", got, want)
	}
}

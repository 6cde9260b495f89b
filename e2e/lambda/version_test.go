package lambda

import (
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/version"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestEachFunctionLogsItsVersionAtColdStart: the real binaries write one
// JSON line at cold start, "cold start" with the release they are
// (shared/platform/version, as `inboxctl version` prints and CHANGELOG.md names),
// so a log line leads to the code that wrote it.
func TestEachFunctionLogsItsVersionAtColdStart(t *testing.T) {
	s := newSetup(t)
	for _, tc := range []struct {
		id      string
		payload string // any invocation: the cold start comes before it
	}{
		{receiverID, `{}`},
		{processorID, `{"Records":[]}`},
		{reconcilerID, `{"since":"not a duration"}`},
	} {
		t.Run(tc.id, func(t *testing.T) {
			fn := start(t, hostBootstrap(t, tc.id), s.env(t, tc.id, nil))
			fn.call(t, []byte(tc.payload))
			var lines []map[string]any
			testenv.Eventually(t, 10*time.Second, "the function's output", func() bool {
				lines = fn.logLines(map[string]string{"message": "cold start"})
				return len(lines) > 0
			})
			if len(lines) != 1 || lines[0]["version"] != version.Version || lines[0]["level"] != "INFO" {
				t.Errorf("cold start lines %v, want one at INFO with version %s; output:\n%s", lines, version.Version, fn.out.String())
			}
		})
	}
}

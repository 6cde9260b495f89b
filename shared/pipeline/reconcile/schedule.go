package reconcile

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SchedulePeriod returns the period of an EventBridge rate expression, like
// rate(10 minutes) or rate(1 hour): the template's ReconcileRate, from which
// a group's first run takes its FirstLookback. Seconds are accepted too, for
// local use (EventBridge's finest rate is a minute). cron() and at()
// expressions have no period and are refused.
func SchedulePeriod(expr string) (time.Duration, error) {
	inner, ok := strings.CutPrefix(strings.TrimSpace(expr), "rate(")
	if !ok || !strings.HasSuffix(inner, ")") {
		return 0, fmt.Errorf("reconcile: schedule %q is not rate(N unit)", expr)
	}
	fields := strings.Fields(strings.TrimSuffix(inner, ")"))
	if len(fields) != 2 {
		return 0, fmt.Errorf("reconcile: schedule %q is not rate(N unit)", expr)
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("reconcile: schedule %q: %q is not a positive integer", expr, fields[0])
	}
	units := map[string]time.Duration{
		"second": time.Second, "seconds": time.Second,
		"minute": time.Minute, "minutes": time.Minute,
		"hour": time.Hour, "hours": time.Hour,
		"day": 24 * time.Hour, "days": 24 * time.Hour,
	}
	unit, ok := units[fields[1]]
	if !ok {
		return 0, fmt.Errorf("reconcile: schedule %q: unknown unit %q", expr, fields[1])
	}
	return time.Duration(n) * unit, nil
}

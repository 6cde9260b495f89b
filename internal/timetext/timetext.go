// Package timetext writes a time for a person, as the operator's command line
// and the operations it shares with the console (internal/ops) show it:
// to the second in UTC (When), and how long before or after now (Ago), to
// two units.
package timetext

import (
	"fmt"
	"math"
	"time"
)

// When is t to the second, in UTC; "" when t is zero.
func When(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// Ago says how long before now t was ("3m05s ago"), or after it ("in
// 2h10m"), to two units; "" when t is zero.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	// Sub saturates about 292 years out; a signed timestamp can be further.
	switch d := now.Sub(t); {
	case d == math.MinInt64:
		return "in more than 292 years"
	case d == math.MaxInt64:
		return "more than 292 years ago"
	case d < 0:
		return "in " + short(-d)
	default:
		return short(d) + " ago"
	}
}

func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

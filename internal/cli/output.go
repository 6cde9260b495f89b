package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"

	"github.com/webhook-inbox/webhook-inbox/internal/timetext"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// ANSI colours, used only when stdout is a terminal.
const (
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	dim    = "\x1b[2m"
	reset  = "\x1b[0m"
)

func (a *app) paint(colour, s string) string {
	if !a.colour || s == "" {
		return s
	}
	return colour + s + reset
}

// status colours a status by what it asks of an operator.
func (a *app) status(st string) string {
	switch event.Status(st) {
	case event.StatusProcessed:
		return a.paint(green, st)
	case event.StatusFailed, event.StatusProcessing, event.StatusReceived:
		return a.paint(yellow, st)
	case event.StatusFailedPermanent, event.StatusDeadLettered:
		return a.paint(red, st)
	case event.StatusIgnored:
		return a.paint(dim, st)
	}
	return st
}

// table prints rows under a header, in columns two spaces apart. Widths
// are those of the visible text: colour codes take no room.
func (a *app) table(header []string, rows [][]string) error {
	all := append([][]string{header}, rows...)
	widths := make([]int, len(header))
	for _, r := range all {
		for i, c := range r {
			if c == "" {
				r[i], c = "-", "-"
			}
			widths[i] = max(widths[i], visible(c))
		}
	}
	var b strings.Builder
	for _, r := range all {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-visible(c)+2))
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(a.stdout, b.String())
	return err
}

// visible is the width of s on a terminal: runes, less colour codes.
func visible(s string) int {
	return utf8.RuneCountInString(ansi.ReplaceAllString(s, ""))
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// rows prints label/value pairs, skipping empty values. Labels carry no
// colour, so a tabwriter aligns them.
func (a *app) rows(pairs [][2]string) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, p := range pairs {
		if strings.TrimSpace(ansi.ReplaceAllString(p[1], "")) == "" {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\n", p[0], p[1])
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// ts is the JSON form of a time: RFC 3339 in UTC, empty when not set.
func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// when is the text form of a time: to the second, in UTC.
func when(t time.Time) string { return timetext.When(t) }

// ago says how long before now t was, to two units.
func ago(now, t time.Time) string { return timetext.Ago(now, t) }

func unix(sec int64) string {
	if sec == 0 {
		return ""
	}
	return when(time.Unix(sec, 0))
}

// clip shortens s to n runes for a table cell.
func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// parseSince reads --since: a duration before now ("24h", "90m", "7d") or
// an RFC 3339 time.
func parseSince(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, usagef("--since %q: want a duration like 24h, 90m or 7d, or an RFC 3339 time", v)
	}
	return now.Add(-d), nil
}

// bar is a progress display: a bar on a terminal, nothing otherwise.
type bar interface {
	Add(n int) error
	Finish() error
}

type noBar struct{}

func (noBar) Add(int) error { return nil }
func (noBar) Finish() error { return nil }

// progress returns a progress bar of total steps on stderr when it is a
// terminal. Piped output stays plain: a bar's carriage returns would
// garble a log.
func (a *app) progress(total int, what string) bar {
	if !a.bars || total <= 0 {
		return noBar{}
	}
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionEnableColorCodes(a.colour),
	)
}

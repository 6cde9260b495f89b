package failpoints

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Markers bound the report in docs/reliability.md, which Write replaces.
const (
	BeginMarker = "<!-- failpoints:begin -->"
	EndMarker   = "<!-- failpoints:end -->"
)

// TotalsLine is the report's last line: "N cases, L lost, D doubled, S
// silent".
func (r *Report) TotalsLine() string {
	cases, lost, doubled, silent, _ := r.Totals()
	return fmt.Sprintf("%d cases, %d lost, %d doubled, %d silent", cases, lost, doubled, silent)
}

// cell is a case's outcome in a table cell.
func cell(c Result) string {
	switch {
	case c.Err != "":
		return "**ERROR**: " + c.Err
	case c.Lost:
		return "**LOST**: " + c.Why
	case c.Doubled:
		return "**DOUBLED**: " + c.Why
	case c.Silent:
		return "**SILENT**: " + c.Why
	case c.Disagree:
		return "**DLQ DISAGREES**: " + c.Why
	case len(c.Unfired) > 0:
		return c.Outcome + " (point not reached)"
	}
	return c.Outcome
}

// Markdown writes the report: the worlds, one table per world (each call
// its functions made, by fault kind), the pairs, and the totals.
func (r *Report) Markdown(out io.Writer) {
	w := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
	cases, lost, doubled, silent, disagree := r.Totals()
	w(
		"%d failure points discovered in %d worlds (an audit world's from three fault-free runs: its audit racing the event, first, and after it). %d cases of one fault; %d of two, sampled with seed %d from the %d pairs on one event's path: %d of the %d whose second fault is on a call only the first one reaches, %d of the other %d. Run in %s.\n\n",
		r.points(),
		len(r.Worlds),
		len(r.Singles),
		len(r.Pairs),
		r.Seed,
		r.FaultPathPairs+r.OtherPairs,
		r.SampledFaultPath,
		r.FaultPathPairs,
		len(r.Pairs)-r.SampledFaultPath,
		r.OtherPairs,
		r.Elapsed.Round(time.Second),
	)
	w("| world | its retries | failure points | calls in the fault-free run |\n|---|---|---|---|\n")
	for _, d := range r.Discovery {
		w("| %s | %s | %d | %d |\n", d.World.Name, d.World.Retry.Says, len(d.Sites()), len(d.Calls))
	}
	w("\n")
	for _, d := range r.Discovery {
		w("**%s**\n\n| function | service | call | fail | lost | kill | refuse |\n|---|---|---|---|---|---|---|\n", d.World.Name)
		for _, s := range d.Sites() {
			row := map[Kind]string{}
			for _, c := range r.Singles {
				if c.World.Name == d.World.Name && c.Faults[0].Site == s {
					row[c.Faults[0].Kind] = cell(c)
				}
			}
			for _, k := range Kinds {
				if !applies(k, s) {
					row[k] = "–"
				}
			}
			w("| %s | %s | `%s` | %s | %s | %s | %s |\n", s.Function, s.Service, s.Call, row[Fail], row[Lost], row[Kill], row[Refuse])
		}
		w("\n")
	}
	outcomes := map[string]int{}
	for _, c := range r.Pairs {
		outcomes[cell(c)]++
	}
	w("Pairs of faults (%d run of %d):", len(r.Pairs), r.FaultPathPairs+r.OtherPairs)
	for _, o := range sortedKeys(outcomes) {
		if !strings.HasPrefix(o, "**") {
			w(" %d %s;", outcomes[o], o)
		}
	}
	w("\n\n")
	for _, c := range r.Pairs {
		if !c.OK() {
			w("- %s: %s then %s: %s\n", c.World.Name, c.Faults[0], c.Faults[1], cell(c))
		}
	}
	if len(r.Seconds)+len(r.SecondPairs) > 0 {
		r.secondsMarkdown(out)
	}
	w("\n%s", r.TotalsLine())
	if disagree > 0 {
		w(", %d where the store and the DLQ disagree", disagree)
	}
	w(".\n")
	_ = cases + lost + doubled + silent
}

// secondOutcome is a case's outcome with a second event: the first
// event's, then the second's ("not sent" when its fault never struck).
func secondOutcome(c Result) string {
	if !c.OK() || len(c.Unfired) > 0 {
		return cell(c)
	}
	second := c.SecondOutcome
	if second == "" {
		second = "not sent"
	}
	return c.Outcome + " / " + second
}

// secondsMarkdown writes the cases with a second event: per world, how
// many ended how (the first event's outcome / the second's), and every
// case that broke an invariant.
func (r *Report) secondsMarkdown(out io.Writer) {
	w := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
	all := append(append([]Result(nil), r.Seconds...), r.SecondPairs...)
	which := "each single fault again"
	if len(r.Seconds) < len(r.Singles) {
		which = fmt.Sprintf("%d of the %d single faults again, sampled with seed %d", len(r.Seconds), len(r.Singles), r.Seed)
	}
	w("With a second event of the same object in flight, sent by its provider as the (first) fault strikes: %d cases, %s and %d sampled pairs. Outcomes: the first event's / the second's.\n\n", len(all), which, len(r.SecondPairs))
	w("| world | cases | outcomes |\n|---|---|---|\n")
	for _, d := range r.Discovery {
		outcomes := map[string]int{}
		n := 0
		for _, c := range all {
			if c.World.Name == d.World.Name {
				outcomes[secondOutcome(c)]++
				n++
			}
		}
		if n == 0 {
			continue
		}
		var parts []string
		for _, o := range sortedKeys(outcomes) {
			if !strings.HasPrefix(o, "**") {
				parts = append(parts, fmt.Sprintf("%d %s", outcomes[o], o))
			}
		}
		w("| %s | %d | %s |\n", d.World.Name, n, strings.Join(parts, "; "))
	}
	w("\n")
	for _, c := range all {
		if !c.OK() {
			var fs []string
			for _, f := range c.Faults {
				fs = append(fs, f.String())
			}
			w("- %s, a second event at %s: %s\n", c.World.Name, strings.Join(fs, " then "), cell(c))
		}
	}
}

func (r *Report) points() int {
	n := 0
	for _, d := range r.Discovery {
		n += len(d.Sites())
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Write replaces the report between BeginMarker and EndMarker in the file
// at path.
func (r *Report) Write(path string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b, rest, ok := bytes.Cut(doc, []byte(BeginMarker))
	_, after, ok2 := bytes.Cut(rest, []byte(EndMarker))
	if !ok || !ok2 {
		return errors.New("failpoints: " + path + " has no " + BeginMarker + " ... " + EndMarker)
	}
	var buf bytes.Buffer
	buf.Write(b)
	buf.WriteString(BeginMarker + "\n")
	r.Markdown(&buf)
	buf.WriteString(EndMarker)
	buf.Write(after)
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

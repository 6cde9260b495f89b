package outcome_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
)

// TestDocsDescribeEveryOutcomeOnce holds docs/outcomes.md's table to the
// vocabulary: one row per value, no row for a value the code does not emit.
func TestDocsDescribeEveryOutcomeOnce(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/outcomes.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllSubmatch(doc, -1) {
		rows[string(m[1])]++
	}
	values := map[outcome.Outcome]bool{}
	for _, list := range [][]outcome.Outcome{outcome.Receiver, outcome.Bridge, outcome.Processor, outcome.Run} {
		for _, o := range list {
			values[o] = true
		}
	}
	for o := range values {
		if n := rows[string(o)]; n != 1 {
			t.Errorf("%s: %d rows in docs/outcomes.md, want 1", o, n)
		}
	}
	for r := range rows {
		if !values[outcome.Outcome(r)] {
			t.Errorf("docs/outcomes.md describes %s, which no list of package outcome holds", r)
		}
	}
}

// TestListsHoldEachValueOnce: each list is what its emitter counts, once.
func TestListsHoldEachValueOnce(t *testing.T) {
	for name, list := range map[string][]outcome.Outcome{"Receiver": outcome.Receiver, "Bridge": outcome.Bridge, "Processor": outcome.Processor, "Run": outcome.Run} {
		s := slices.Clone(list)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(list) {
			t.Errorf("%s lists a value twice: %v", name, list)
		}
	}
}

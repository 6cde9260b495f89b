package cost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// docs/performance.md prints the one price table there is.
func TestDocsPriceTable(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(testenv.TemplatePath(t)), "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := PriceTableMarkdown(); !strings.Contains(string(doc), want) {
		t.Errorf("docs/performance.md does not hold the price table of tools/cost; want it to contain:\n%s", want)
	}
}

func TestHostedPlansSayWhatIsNotPublished(t *testing.T) {
	cases := []struct {
		plan   string
		events float64
		want   float64
		ok     bool
	}{
		// The published figure for Hookdeck Team at 1M events a month.
		{"Hookdeck Team", 1e6, 48.90, true},
		{"Hookbase Business", 1e6, 79, true},
		{"Hookbase Business", 10e6, 0, false},
		{"Svix Professional", 1e6, 585, true},
	}
	for _, tc := range cases {
		t.Run(tc.plan, func(t *testing.T) {
			for _, h := range HostedPlans {
				if h.Name != tc.plan {
					continue
				}
				got, ok := h.Monthly(tc.events)
				if ok != tc.ok || (ok && (got < tc.want-0.005 || got > tc.want+0.005)) {
					t.Errorf("at %.0f events: got $%.2f (published %t), want $%.2f (published %t)", tc.events, got, ok, tc.want, tc.ok)
				}
				return
			}
			t.Fatalf("no plan %s", tc.plan)
		})
	}
}

package cost

import (
	"bytes"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// TestTracingIsAParameterAndActiveIsPriced: X-Ray tracing is the
// template's Tracing parameter, PassThrough unless set, for every
// function; the meter prices what the template says, and prints what
// Active would add beside the total.
func TestTracingIsAParameterAndActiveIsPriced(t *testing.T) {
	for _, tc := range []struct {
		overrides map[string]string
		want      string
	}{
		{nil, "PassThrough"},
		{map[string]string{"Tracing": "Active"}, "Active"},
	} {
		tmpl, err := template.Load(testenv.TemplatePath(t), tc.overrides)
		if err != nil {
			t.Fatal(err)
		}
		m := &meter{tmpl: tmpl, source: template.SQSSource{BatchSize: 10}}
		for _, id := range tmpl.Functions() {
			if got := template.Scalar(m.functionProperty(id, "Tracing")); got != tc.want {
				t.Errorf("%v: %s's Tracing is %q, want %q", tc.overrides, id, got, tc.want)
			}
		}
		priced, active := m.xray(false)(1e6), m.xray(true)(1e6)
		if active <= 0 || (tc.want == "Active") != (priced == active) || (tc.want == "PassThrough") != (priced == 0) {
			t.Errorf("%v: X-Ray priced %.2f, Active %.2f; want the template's Tracing priced", tc.overrides, priced, active)
		}
	}

	rep := &Report{Sizes: []EventSize{Small, Large}, XRayActive: [2]float64{5.52, 1.98},
		Money:      map[string][]MoneyLine{Small.Name: {{What: "X-Ray"}}, Large.Name: {{What: "X-Ray"}}},
		PerMillion: map[string]float64{}}
	var out bytes.Buffer
	rep.printMoney(&out)
	if !strings.Contains(out.String(), "with Tracing: Active  +5.52   +5.52") {
		t.Errorf("the money table without Tracing Active: no line for what Active costs:\n%s", out.String())
	}
}

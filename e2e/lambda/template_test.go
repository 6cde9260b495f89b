package lambda

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// The dashboard's body is JSON inside a !Sub: neither sam validate nor
// cfn-lint parses it, and CloudFormation rejects the whole deploy when it is
// not valid. (cfn-lint checks that its ${...} variables resolve.)
func TestDashboardBodyIsValidJSON(t *testing.T) {
	tmpl, err := template.Load(filepath.Join(root(t), "template.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dashboards := tmpl.Resources("AWS::CloudWatch::Dashboard")
	if len(dashboards) == 0 {
		t.Fatal("template: no dashboard")
	}
	variable := regexp.MustCompile(`\$\{[A-Za-z0-9:.]+\}`)
	for _, d := range dashboards {
		body, ok := d.Properties["DashboardBody"].(string)
		if !ok {
			t.Fatalf("%s: DashboardBody is %T, want a string", d.LogicalID, d.Properties["DashboardBody"])
		}
		// Resource names and ARNs are only known at deploy time.
		var doc struct {
			Widgets []map[string]any `json:"widgets"`
		}
		if err := json.Unmarshal([]byte(variable.ReplaceAllString(body, "x")), &doc); err != nil {
			t.Fatalf("%s: DashboardBody is not JSON: %v", d.LogicalID, err)
		}
		if len(doc.Widgets) == 0 {
			t.Errorf("%s: no widgets", d.LogicalID)
		}
	}
}

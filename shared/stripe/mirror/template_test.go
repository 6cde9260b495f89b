package mirror

import (
	"fmt"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// TestTemplateDeclaresTheMirrorsKeysAndIndex: template.yaml creates the
// mirror table; the mirror, its one owner in Go, names its key and its
// index's keys the same way.
func TestTemplateDeclaresTheMirrorsKeysAndIndex(t *testing.T) {
	tmpl, err := template.Load("../../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	table, ok := tmpl.Resource("MirrorTable")
	if !ok {
		t.Fatal("template.yaml has no MirrorTable")
	}
	keys := func(schema any) string {
		var hash, rng string
		for _, k := range schema.([]any) {
			k := k.(map[string]any)
			if k["KeyType"] == "HASH" {
				hash = fmt.Sprint(k["AttributeName"])
			} else {
				rng = fmt.Sprint(k["AttributeName"])
			}
		}
		return hash + "/" + rng
	}
	got := map[string]string{"": keys(table.Properties["KeySchema"])}
	for _, ix := range table.Properties["GlobalSecondaryIndexes"].([]any) {
		ix := ix.(map[string]any)
		got[fmt.Sprint(ix["IndexName"])] = keys(ix["KeySchema"])
	}
	want := map[string]string{"": attrPK + "/", indexCustomer: attrCustomer + "/" + attrPK}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("keys (\"\" the table's): got %v, want %v", got, want)
	}
}

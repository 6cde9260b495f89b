package store

import (
	"fmt"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// keysOf reads a KeySchema of template.yaml as "hash/range".
func keysOf(schema any) string {
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

// TestTemplateDeclaresTheStoresKeysAndIndexes: template.yaml creates the
// events table; the store, its one owner in Go, names its key, its indexes'
// keys and projections and its TTL the same way. A change of the data
// model changes both, and this test, in one package. The projections hold
// keys only, or the type, which never changes: a transition that changes
// no index key writes no index.
func TestTemplateDeclaresTheStoresKeysAndIndexes(t *testing.T) {
	tmpl, err := template.Load("../../../template.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	table, ok := tmpl.Resource("EventsTable")
	if !ok {
		t.Fatal("template.yaml has no EventsTable")
	}
	p := table.Properties
	ttl, _ := p["TimeToLiveSpecification"].(map[string]any)
	if got := keysOf(p["KeySchema"]); got != attrPK+"/" || ttl["AttributeName"] != attrExpiresAt {
		t.Errorf("table: got key %s, TTL %v; want %s/, %s", got, ttl["AttributeName"], attrPK, attrExpiresAt)
	}
	want := map[string]string{
		indexUnprocessed: attrLane + "/" + attrReceivedAt + " KEYS_ONLY []",
		indexDay:         attrDayKey + "/" + attrReceivedAt + " INCLUDE [" + attrType + "]",
		indexObject:      attrObjectID + "/" + attrCreated + " KEYS_ONLY []",
		indexCustomer:    attrCustomerID + "/" + attrCreated + " KEYS_ONLY []",
		indexAccounts:    attrAccountOf + "/" + attrAccountID + " KEYS_ONLY []",
	}
	got := map[string]string{}
	for _, ix := range p["GlobalSecondaryIndexes"].([]any) {
		ix := ix.(map[string]any)
		proj := ix["Projection"].(map[string]any)
		nonKey, _ := proj["NonKeyAttributes"].([]any)
		got[fmt.Sprint(ix["IndexName"])] = fmt.Sprintf("%s %v %v", keysOf(ix["KeySchema"]), proj["ProjectionType"], nonKey)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("indexes: got %v, want %v", got, want)
	}
}

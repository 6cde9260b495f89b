package cost

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// Schema is what billing needs of the template's tables: their keys, their
// global secondary indexes with their projections, their TTL attribute.
// It comes from template.yaml only, so a change of the data model there is
// measured without a change here.
type Schema struct {
	Tables map[string]*Table // by logical id
}

// Table is one AWS::DynamoDB::Table of the template.
type Table struct {
	LogicalID string
	Hash      string
	Range     string // "" without a sort key
	Indexes   []Index
	// TTL names the time-to-live attribute; "" without TTL.
	TTL string
	// PITR is whether point-in-time recovery is enabled.
	PITR bool
}

// Index is a global secondary index.
type Index struct {
	Name  string
	Hash  string
	Range string
	// Projection is KEYS_ONLY, INCLUDE or ALL.
	Projection types.ProjectionType
	NonKey     []string
}

// Target names the table, or the table's index, in reports: "EventsTable",
// "EventsTable/pending".
func (t *Table) Target(index string) string {
	if index == "" {
		return t.LogicalID
	}
	return t.LogicalID + "/" + index
}

// LoadSchema reads the tables of a processed template.
func LoadSchema(tmpl *template.Template) (*Schema, error) {
	s := &Schema{Tables: map[string]*Table{}}
	for _, r := range tmpl.Resources("AWS::DynamoDB::Table") {
		t := &Table{LogicalID: r.LogicalID}
		var keys []types.KeySchemaElement
		if err := convert(r.Properties["KeySchema"], &keys); err != nil {
			return nil, fmt.Errorf("cost: %s.KeySchema: %w", r.LogicalID, err)
		}
		t.Hash, t.Range = keyNames(keys)
		var gsis []types.GlobalSecondaryIndex
		if v, ok := r.Properties["GlobalSecondaryIndexes"]; ok {
			if err := convert(v, &gsis); err != nil {
				return nil, fmt.Errorf("cost: %s.GlobalSecondaryIndexes: %w", r.LogicalID, err)
			}
		}
		for _, g := range gsis {
			ix := Index{Name: deref(g.IndexName)}
			ix.Hash, ix.Range = keyNames(g.KeySchema)
			if g.Projection != nil {
				ix.Projection = g.Projection.ProjectionType
				ix.NonKey = g.Projection.NonKeyAttributes
			}
			if ix.Projection == "" {
				ix.Projection = types.ProjectionTypeKeysOnly
			}
			if ix.Hash == "" {
				return nil, fmt.Errorf("cost: %s index %s has no partition key", r.LogicalID, ix.Name)
			}
			t.Indexes = append(t.Indexes, ix)
		}
		if ttl, ok := r.Properties["TimeToLiveSpecification"].(map[string]any); ok && ttl["Enabled"] == true {
			t.TTL, _ = ttl["AttributeName"].(string)
		}
		if pitr, ok := r.Properties["PointInTimeRecoverySpecification"].(map[string]any); ok {
			t.PITR = pitr["PointInTimeRecoveryEnabled"] == true
		}
		if t.Hash == "" {
			return nil, fmt.Errorf("cost: table %s has no partition key", r.LogicalID)
		}
		s.Tables[t.LogicalID] = t
	}
	return s, nil
}

// Names lists the tables' logical ids, sorted.
func (s *Schema) Names() []string {
	var out []string
	for id := range s.Tables {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func keyNames(keys []types.KeySchemaElement) (hash, rng string) {
	for _, k := range keys {
		switch k.KeyType {
		case types.KeyTypeHash:
			hash = deref(k.AttributeName)
		case types.KeyTypeRange:
			rng = deref(k.AttributeName)
		}
	}
	return hash, rng
}

// Key returns the table's primary key attributes of item.
func (t *Table) Key(item Item) Item {
	if item == nil {
		return nil
	}
	k := Item{t.Hash: item[t.Hash]}
	if t.Range != "" {
		k[t.Range] = item[t.Range]
	}
	return k
}

// Entry returns item's entry in index ix and whether item is in the index
// at all: an item without the index's key attributes is not ("sparse").
// The entry holds the table's key, the index's key and the projected
// attributes ("Attribute projections": the table's key is always projected).
func (t *Table) Entry(ix Index, item Item) (Item, bool) {
	if item == nil || item[ix.Hash] == nil || (ix.Range != "" && item[ix.Range] == nil) {
		return nil, false
	}
	if ix.Projection == types.ProjectionTypeAll {
		return item, true
	}
	e := Item{}
	for _, name := range []string{t.Hash, t.Range, ix.Hash, ix.Range} {
		if v, ok := item[name]; ok && name != "" {
			e[name] = v
		}
	}
	if ix.Projection == types.ProjectionTypeInclude {
		for _, name := range ix.NonKey {
			if v, ok := item[name]; ok {
				e[name] = v
			}
		}
	}
	return e, true
}

// PartitionValue renders the value of attribute name in item as
// "name=value", the unit hot keys are grouped by.
func PartitionValue(name string, item Item) string {
	return name + "=" + render(item[name])
}

func render(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("%x", x.Value)
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// sameValue compares two attribute values.
func sameValue(a, b types.AttributeValue) bool { return reflect.DeepEqual(a, b) }

// sameItem compares two items.
func sameItem(a, b Item) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !sameValue(v, b[k]) {
			return false
		}
	}
	return true
}

// convert copies a template value into an SDK type through JSON: the
// template's property names are the API's member names.
func convert(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

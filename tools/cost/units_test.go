package cost

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The worked examples below are DynamoDB's own, from the Developer Guide
// pages named in each case (read 2026-11-30). Sizes in KB are 1,024 bytes,
// as the guide's "Constraints" page defines them.

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func b(v []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }

// itemOf returns an item of exactly size bytes: a one-letter attribute name
// and a string of size-1 bytes.
func itemOf(size int) Item { return Item{"x": s(strings.Repeat("a", size-1))} }

func kb(f float64) int { return int(f * 1024) }

// Page "DynamoDB item sizes and formats".
func TestItemSizesAndFormats(t *testing.T) {
	cases := []struct {
		name string
		item Item
		want int
	}{
		{"a string is its name plus its UTF-8 bytes", Item{"name": s("héllo")}, 4 + 6},
		{"a number is about 1 byte per two significant digits, plus 1", Item{"n": n("1234567")}, 1 + 4 + 1},
		{"leading and trailing zeroes are trimmed", Item{"n": n("000120.500")}, 1 + 2 + 1},
		{"a number with an exponent adds no digits", Item{"n": n("-1.5E+3")}, 1 + 1 + 1},
		{"binary counts its raw bytes, not its base64", Item{"raw": b(make([]byte, 100))}, 3 + 100},
		{"a Boolean is 1 byte", Item{"ok": &types.AttributeValueMemberBOOL{Value: true}}, 2 + 1},
		{"a null is 1 byte", Item{"nothing": &types.AttributeValueMemberNULL{Value: true}}, 7 + 1},
		{"an empty map is 3 bytes of overhead", Item{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}, 1 + 3},
		{"an empty list is 3 bytes of overhead", Item{"l": &types.AttributeValueMemberL{}}, 1 + 3},
		{"each list element adds 1 byte", Item{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ab"), n("7")}}}, 1 + 3 + (2 + 1) + (2 + 1)},
		{
			"a map element counts its name too",
			Item{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v")}}},
			1 + 3 + (1 + 1 + 1),
		},
		{"nested maps add their own overhead", Item{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"in": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v")}}}}}, 1 + 3 + (2 + (3 + 3) + 1)},
		{"an item is the sum of its attributes", Item{"pk": s("stripe#evt_1"), "n": n("10")}, (2 + 12) + (1 + 2)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ItemSize(tc.item); got != tc.want {
				t.Errorf("got %d bytes, want %d", got, tc.want)
			}
		})
	}
}

// Page "DynamoDB read and write operations", Capacity unit consumption for
// read operations.
func TestReadOperations(t *testing.T) {
	cases := []struct {
		name string
		got  float64
		want float64
	}{
		{"a 3,500-byte item costs what a 4 KB item does", ReadUnits(3500, Strong), ReadUnits(kb(4), Strong)},
		{"8 KB strongly consistent: 2 read units", ReadUnits(kb(8), Strong), 2},
		{"8 KB eventually consistent: 1 read unit", ReadUnits(kb(8), Eventual), 1},
		{"8 KB transactional: 4 read units", ReadUnits(kb(8), Transactional), 4},
		{"GetItem of 3.5 KB rounds to 4 KB", ReadUnits(kb(3.5), Strong), 1},
		{"GetItem of 10 KB rounds to 12 KB", ReadUnits(kb(10), Strong), 3},
		{"BatchGetItem of 1.5 KB and 6.5 KB counts 4 KB + 8 KB, not 8 KB",
			ReadUnits(kb(1.5), Strong) + ReadUnits(kb(6.5), Strong), 3},
		{"a Query of 10 items, 40.8 KB together, rounds to 44 KB", ReadUnits(kb(40.8), Strong), 11},
		{"a Query of 1,500 items of 64 bytes reads 96 KB", ReadUnits(1500*64, Strong), 24},
		{"eventually consistent, 80 KB in all: 10 units", ReadUnits(kb(80), Eventual), 10},
		{"reading an item that does not exist: 1 unit strongly consistent", ReadUnits(0, Strong), 1},
		{"reading an item that does not exist: 0.5 eventually consistent", ReadUnits(0, Eventual), 0.5},
		// Page "Global secondary indexes", Read capacity units: 8 items of
		// 2,000 bytes from an index, eventually consistent.
		{"an index Query of 8 × 2,000 bytes costs 2 units", ReadUnits(8*2000, Eventual), 2},
		// Page "Amazon DynamoDB Transactions: How it works", Capacity
		// management: a read transaction of three 500-byte items needs 6.
		{"a read transaction of three 500-byte items: 6 units", 3 * ReadUnits(500, Transactional), 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v read units, want %v", tc.got, tc.want)
			}
		})
	}
}

// events is a table shaped like the inbox's events table, with names of its
// own: the real ones are shared/storage/store's, and the rules do not depend on them.
var events = &Table{LogicalID: "Events", Hash: "pk", Indexes: []Index{
	{Name: "by_stage", Hash: "stage_date", Range: "moment_at", Projection: types.ProjectionTypeInclude, NonKey: []string{"status", "note"}},
	{Name: "keys", Hash: "shard", Projection: types.ProjectionTypeKeysOnly},
	{Name: "all", Hash: "customer", Projection: types.ProjectionTypeAll},
}}

// Page "DynamoDB read and write operations", Capacity unit consumption for
// write operations.
func TestWriteOperations(t *testing.T) {
	cases := []struct {
		name string
		w    Write
		want int
	}{
		{"a 500-byte item costs what a 1 KB item does", Write{Kind: Put, Outcome: Applied, After: itemOf(500)}, 1},
		{"a 1.6 KB put rounds up to 2 KB", Write{Kind: Put, Outcome: Applied, After: itemOf(kb(1.6))}, 2},
		{"a 1.6 KB delete rounds up to 2 KB", Write{Kind: Delete, Outcome: Applied, Before: itemOf(kb(1.6))}, 2},
		{"a put that replaces an item costs the larger of the two", Write{Kind: Put, Outcome: Applied, Before: itemOf(kb(3.2)), After: itemOf(500)}, 4},
		{"an update costs the larger of before and after", Write{Kind: Update, Outcome: Applied, Before: itemOf(kb(7.5)), After: itemOf(kb(7.6))}, 8},
		{
			"an update that shrinks the item still pays for the item before",
			Write{Kind: Update, Outcome: Applied, Before: itemOf(kb(7.5)), After: itemOf(100)},
			8,
		},
		{"a failed conditional write of an existing 300 KB item, new item 310 KB: 310 units",
			Write{Kind: Put, Outcome: ConditionFailed, Before: itemOf(kb(300)), After: itemOf(kb(310))}, 310},
		{"a failed conditional write of a 1 KB item: 1 unit", Write{Kind: Update, Outcome: ConditionFailed, Before: itemOf(kb(1)), After: itemOf(kb(1))}, 1},
		{"twice that size: 2 units", Write{Kind: Update, Outcome: ConditionFailed, Before: itemOf(kb(1)), After: itemOf(kb(2))}, 2},
		{"a delete of an item that does not exist still costs 1", Write{Kind: Delete, Outcome: Applied}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&Table{LogicalID: "T", Hash: "x"}).Charge(tc.w).Units(); got != tc.want {
				t.Errorf("got %d write units, want %d", got, tc.want)
			}
		})
	}
	// BatchWriteItem of a 500-byte and a 3.5 KB item counts 1 KB + 4 KB.
	if got := WriteUnits(500) + WriteUnits(kb(3.5)); got != 5 {
		t.Errorf("BatchWriteItem of 500 B and 3.5 KB: got %d write units, want 5", got)
	}
}

// Page "Amazon DynamoDB Transactions: How it works", Capacity management
// for transactions: three 500-byte items written in one transaction need
// six write units, two per item (prepare and commit).
func TestTransactionsWriteEachItemTwice(t *testing.T) {
	tbl := &Table{LogicalID: "T", Hash: "x"}
	total := 0
	for range 3 {
		total += tbl.Charge(Write{Kind: Put, Outcome: Applied, Transactional: true, After: itemOf(500)}).Units()
	}
	if total != 6 {
		t.Errorf("three 500-byte items in a transaction: got %d write units, want 6", total)
	}
	check := tbl.Charge(Write{Kind: ConditionCheck, Outcome: Applied, Transactional: true, Before: itemOf(kb(2.5))})
	if check.Units() != 6 {
		t.Errorf("a ConditionCheck of a 2.5 KB item: got %d, want 6 (3 units, prepare and commit)", check.Units())
	}
	cancelled := tbl.Charge(Write{Kind: Put, Outcome: Cancelled, Transactional: true, Before: itemOf(kb(2.5)), After: itemOf(kb(1))})
	if cancelled.Units() != 3 {
		t.Errorf("a cancelled transaction's item: got %d, want 3 (its prepare, once)", cancelled.Units())
	}
}

// Page "Global secondary indexes", Provisioned throughput considerations,
// Write capacity units: the five cases, each item entry under 1 KB.
func TestIndexWrites(t *testing.T) {
	base := Item{"pk": s("e1"), "stage_date": s("received#2026-11-30"), "moment_at": n("1"), "status": s("received")}
	with := func(kv ...any) Item {
		out := Item{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(out, kv[i].(string))
				continue
			}
			out[kv[i].(string)] = kv[i+1].(types.AttributeValue)
		}
		return out
	}
	cases := []struct {
		name          string
		before, after Item
		kind          WriteKind
		want          map[string]int
	}{
		{"a new item that defines the indexed attribute: 1 put", nil, base, Put, map[string]int{"by_stage": 1}},
		{"an update that defines a previously undefined indexed attribute: 1 put", base, with("shard", s("stripe")), Update, map[string]int{"keys": 1}},
		{"a change of the index's partition key: delete + put", base, with("stage_date", s("processing#2026-11-30")), Update, map[string]int{"by_stage": 2}},
		{"a change of the index's sort key: delete + put", base, with("moment_at", n("2")), Update, map[string]int{"by_stage": 2}},
		{"the indexed attribute deleted: 1 delete", with("shard", s("stripe")), base, Update, map[string]int{"keys": 1}},
		{"an item in the index neither before nor after: nothing", base, with("other", s("x")), Update, map[string]int{}},
		{"only a projected attribute changes: 1 write", base, with("status", s("processing")), Update, map[string]int{"by_stage": 1}},
		{"an attribute the index does not project changes: nothing", base, with("payload", s("x")), Update, map[string]int{}},
		{
			"a KEYS_ONLY index ignores every non-key change",
			with("shard", s("stripe")),
			with("shard", s("stripe"), "status", s("x")),
			Update,
			map[string]int{"by_stage": 1},
		},
		{"an ALL index copies every change", with("customer", s("cus_1")), with("customer", s("cus_1"), "payload", s("x")), Update, map[string]int{"all": 1}},
		{"a deleted item leaves every index it was in", with("customer", s("cus_1")), nil, Delete, map[string]int{"by_stage": 1, "all": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := events.Charge(Write{Kind: tc.kind, Outcome: Applied, Before: tc.before, After: tc.after})
			if len(c.Index) != len(tc.want) {
				t.Fatalf("got index writes %v, want %v", c.Index, tc.want)
			}
			for ix, u := range tc.want {
				if c.Index[ix] != u {
					t.Errorf("index %s: got %d write units, want %d (all: %v)", ix, c.Index[ix], u, c.Index)
				}
			}
		})
	}
	// "Larger index entries will require additional write capacity units."
	big := with("customer", s("cus_1"), "payload", s(strings.Repeat("p", 2900)))
	if c := events.Charge(Write{Kind: Put, Outcome: Applied, After: big}); c.Index["all"] != 3 {
		t.Errorf("an ALL index entry of about 3 KB: got %d write units, want 3", c.Index["all"])
	}
	// A write whose condition failed writes no index.
	if c := events.Charge(Write{Kind: Put, Outcome: ConditionFailed, Before: base, After: base}); len(c.Index) != 0 {
		t.Errorf("a failed conditional write: got index writes %v, want none", c.Index)
	}
	// A transaction doubles the table's writes, not the index's.
	c := events.Charge(Write{Kind: Update, Outcome: Applied, Transactional: true, Before: base, After: with("stage_date", s("processed#2026-11-30"))})
	if c.Table != 2 || c.Index["by_stage"] != 2 {
		t.Errorf("an index key change in a transaction: got table %d, by_stage %d; want 2 and 2", c.Table, c.Index["by_stage"])
	}
}

func TestIndexEntriesAreTheProjection(t *testing.T) {
	item := Item{"pk": s("e1"), "stage_date": s("d"), "moment_at": n("1"), "status": s("received"), "payload": b(make([]byte, 5000))}
	e, ok := events.Entry(events.Indexes[0], item)
	if !ok {
		t.Fatal("an item with the index's keys is in the index")
	}
	// table key + index keys + the INCLUDE attributes present.
	if want := (2 + 2) + (10 + 1) + (9 + 2) + (6 + 8); ItemSize(e) != want {
		t.Errorf("INCLUDE entry: got %d bytes, want %d (%v)", ItemSize(e), want, e)
	}
	if _, ok := events.Entry(events.Indexes[1], item); ok {
		t.Error("an item without the index's partition key is not in the index (sparse)")
	}
	if _, ok := events.Entry(events.Indexes[0], Item{"pk": s("e1"), "stage_date": s("d")}); ok {
		t.Error("an item without the index's sort key is not in the index")
	}
}

func TestHotKeysCarryTheKeyValues(t *testing.T) {
	before := Item{"pk": s("e1"), "stage_date": s("received#d"), "moment_at": n("1")}
	after := Item{"pk": s("e1"), "stage_date": s("processing#d"), "moment_at": n("2")}
	c := events.Charge(Write{Kind: Update, Outcome: Applied, Before: before, After: after})
	want := []KeyWrite{
		{Target: "Events", Key: "pk=e1", Units: 1},
		{Target: "Events/by_stage", Key: "stage_date=received#d", Units: 1, Role: "delete"},
		{Target: "Events/by_stage", Key: "stage_date=processing#d", Units: 1, Role: "put"},
	}
	if len(c.Keys) != len(want) {
		t.Fatalf("got %v, want %v", c.Keys, want)
	}
	for i := range want {
		if c.Keys[i] != want[i] {
			t.Errorf("key write %d: got %+v, want %+v", i, c.Keys[i], want[i])
		}
	}
}

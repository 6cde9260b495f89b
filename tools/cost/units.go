package cost

// Capacity-unit sizes: a write unit covers 1 KB of item, a read unit 4 KB
// ("DynamoDB read and write operations"; DynamoDB's KB is 1,024 bytes).
const (
	writeUnitBytes = 1024
	readUnitBytes  = 4096
)

// WriteUnits is what writing an item of size bytes costs: 1 unit per KB,
// rounded up, and at least 1 (a 500-byte item costs what a 1 KB one does).
func WriteUnits(size int) int {
	if size <= 0 {
		return 1
	}
	return (size + writeUnitBytes - 1) / writeUnitBytes
}

// Consistency is how a read is made.
type Consistency int

// Read consistencies.
const (
	Eventual Consistency = iota
	Strong
	Transactional
)

// ReadUnits is what reading size bytes costs: 1 unit per 4 KB, rounded up,
// at least 1 (reading an item that does not exist costs the same as reading
// a small one); half for an eventually consistent read, double for a
// transactional one. size is one item's (GetItem, and each item of a
// BatchGetItem) or the total of all items read (Query, Scan).
func ReadUnits(size int, c Consistency) float64 {
	units := 1
	if size > 0 {
		units = (size + readUnitBytes - 1) / readUnitBytes
	}
	switch c {
	case Eventual:
		return float64(units) / 2
	case Transactional:
		return float64(2 * units)
	}
	return float64(units)
}

// WriteKind is the kind of one item write.
type WriteKind string

// Write kinds, as the API names them.
const (
	Put            WriteKind = "Put"
	Update         WriteKind = "Update"
	Delete         WriteKind = "Delete"
	ConditionCheck WriteKind = "ConditionCheck"
)

// Outcome is what became of one item write.
type Outcome string

// Write outcomes.
const (
	// Applied: the write took effect.
	Applied Outcome = "applied"
	// ConditionFailed: its condition was false, nothing was written.
	ConditionFailed Outcome = "condition failed"
	// Cancelled: it was part of a cancelled transaction.
	Cancelled Outcome = "cancelled"
)

// Write is one item write as the recorder saw it.
type Write struct {
	Kind    WriteKind
	Outcome Outcome
	// Before is the item before the write; nil when there was none.
	Before Item
	// After is the item after the write (nil when it was deleted or never
	// existed); for a write that did not apply, the item it would have
	// written.
	After Item
	// Transactional is true for an item of a TransactWriteItems.
	Transactional bool
}

// Charge is what one item write costs.
type Charge struct {
	// Table is the write units on the base table.
	Table int
	// Index is the write units on each index the write touched.
	Index map[string]int
	// Keys are the writes by key value, for hot keys: the base table's
	// partition and each index entry deleted, put or updated.
	Keys []KeyWrite
}

// Units is the charge's write units, table and indexes.
func (c Charge) Units() int {
	n := c.Table
	for _, u := range c.Index {
		n += u
	}
	return n
}

// KeyWrite is write units landing on one partition-key value of a table or
// an index.
type KeyWrite struct {
	Target string // "EventsTable", "EventsTable/pending"
	Key    string // "pk=stripe#evt_1", "pending_shard=stripe"
	Units  int
	// Role says which index write this is ("put", "delete", "update"; ""
	// for the base table), so that one step's index writes can be told
	// apart when hot keys are estimated.
	Role string
}

// Charge prices one item write on this table by DynamoDB's published
// rules:
//
//   - Put and Update cost the larger of the item before and after ("the
//     provisioned throughput consumed reflects the larger of these item
//     sizes"); Delete the deleted item's size; at least 1 unit.
//   - A write whose condition failed still consumes write units, on the
//     larger of the existing item and the item it would have written ("if
//     an existing item is 300kb and the new item you are trying to create
//     or update is 310kb, the write capacity units consumed will be the
//     310kb item"). It writes no index.
//   - In a transaction DynamoDB writes every item twice, once to prepare
//     and once to commit, so an item costs double; a ConditionCheck is
//     charged like a write of the item it checked. The indexes are updated
//     once, from the committed item. A cancelled transaction is not
//     documented: it is charged here as its prepare phase, each item once,
//     like a failed conditional write (an assumption, said where printed).
//   - Each global secondary index the write affects costs the size of its
//     entry, per "Global secondary indexes, Write capacity units": an item
//     entering the index is 1 put, leaving it 1 delete, changing the
//     index's key (partition or sort) a delete and a put, changing only a
//     projected attribute 1 update (charged here on the larger entry, as an
//     update of the table is); an item in the index neither before nor
//     after costs nothing. An index that projects ALL copies the item, so
//     any change of it is an update.
//
// TTL deletions are done by DynamoDB itself and cost nothing; they never
// pass through here.
func (t *Table) Charge(w Write) Charge {
	c := Charge{Index: map[string]int{}}
	switch {
	case w.Outcome != Applied:
		c.Table = WriteUnits(max(ItemSize(w.Before), ItemSize(w.After)))
	case w.Kind == Delete || w.Kind == ConditionCheck:
		c.Table = WriteUnits(ItemSize(w.Before))
	default:
		c.Table = WriteUnits(max(ItemSize(w.Before), ItemSize(w.After)))
	}
	if w.Transactional && w.Outcome == Applied {
		c.Table *= 2
	}
	if ref := firstNonNil(w.After, w.Before); ref != nil {
		c.Keys = append(c.Keys, KeyWrite{Target: t.Target(""), Key: PartitionValue(t.Hash, ref), Units: c.Table})
	}
	if w.Outcome != Applied || w.Kind == ConditionCheck {
		return c
	}
	after := w.After
	if w.Kind == Delete {
		after = nil
	}
	for _, ix := range t.Indexes {
		for _, k := range t.indexWrites(ix, w.Before, after) {
			c.Index[ix.Name] += k.Units
			c.Keys = append(c.Keys, k)
		}
	}
	return c
}

// indexWrites are the writes index ix receives when an item changes from
// before to after.
func (t *Table) indexWrites(ix Index, before, after Item) []KeyWrite {
	eb, inB := t.Entry(ix, before)
	ea, inA := t.Entry(ix, after)
	target := t.Target(ix.Name)
	put := KeyWrite{Target: target, Key: PartitionValue(ix.Hash, ea), Units: WriteUnits(ItemSize(ea)), Role: "put"}
	del := KeyWrite{Target: target, Key: PartitionValue(ix.Hash, eb), Units: WriteUnits(ItemSize(eb)), Role: "delete"}
	switch {
	case !inB && !inA:
		return nil
	case !inB:
		return []KeyWrite{put}
	case !inA:
		return []KeyWrite{del}
	case !sameValue(eb[ix.Hash], ea[ix.Hash]) || (ix.Range != "" && !sameValue(eb[ix.Range], ea[ix.Range])):
		return []KeyWrite{del, put}
	case !sameItem(eb, ea):
		return []KeyWrite{{Target: target, Key: PartitionValue(ix.Hash, ea), Units: WriteUnits(max(ItemSize(eb), ItemSize(ea))), Role: "update"}}
	}
	return nil
}

func firstNonNil(items ...Item) Item {
	for _, it := range items {
		if it != nil {
			return it
		}
	}
	return nil
}

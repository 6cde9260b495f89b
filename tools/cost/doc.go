// Package cost is the cost meter (make cost): it drives the real receiver,
// bridge (Stripe's EventBridge destination), processor and reconciler,
// built by shared/boot as the local stack builds them, against the AWS emulator, records every AWS request they make with
// an SDK middleware, and prices what it recorded.
//
// Nothing here knows the items the code writes. Write and read units come
// from the items themselves and from template.yaml's own table and index
// definitions (LoadSchema), by DynamoDB's published rules (Table.Charge,
// ReadUnits, ItemSize; each rule is unit-tested against the worked examples
// of the page it comes from). A change of the data model, the indexes or
// the mirror is therefore measured without touching the meter.
//
// # Why the meter applies DynamoDB's rules itself
//
// The emulator cannot count them. Asked for ReturnConsumedCapacity, moto
// answers a constant per request whatever the item's size (1 for a put, a
// delete, a query or a scan, 0.5 for a get), nothing for the writes to an
// index, and nothing for a transaction (TransactWriteItems, which DynamoDB
// bills twice per item): for a new 2.6 KB event it reports 3 units where
// DynamoDB's published rules give 13. A meter that summed the emulator's
// ConsumedCapacity would price the emulator, not the deployment; the rules
// applied to the items actually written price the deployment, on any
// machine, offline.
//
// # Checking it against DynamoDB
//
// The rules can still be wrong, or DynamoDB's change. With
// Options.Consumed every recorded DynamoDB request also asks for the
// capacity it consumes (ReturnConsumedCapacity=INDEXES, on a copy of the
// request: what the code sends is otherwise the same, and
// TestAskingForConsumedCapacityChangesNothing holds the figures equal),
// and Report.PrintConsumed prints, per scenario, table and index, the
// meter's units beside the reported ones. With Options.AWS the meter
// measures against AWS itself, in the account and region of a deployed
// stage's credentials, on its own copy of the template's tables and queues
// (so the stage's data is never touched, and the indexes are the stage's),
// which it deletes afterwards. docs/performance.md shows the command
// (`go run ./tools/cmd/cost -aws -consumed`) and how to read the result:
// a difference there is a rule of the meter to fix. Only requests that
// succeed can be compared: DynamoDB bills a write whose condition failed,
// but its answer is an error, without ConsumedCapacity.
//
// How the recorder sees the items (Recorder): DynamoDB requests are
// serialized by the meter (the emulator serializes them too), and around
// each recorded write a separate, unrecorded client reads every item the
// write names, strongly consistent, before and after it. The after-image of
// a write whose condition failed, or of an item in a cancelled transaction,
// cannot be read: the meter computes it by running the same update
// expression on a copy of the item in a scratch table (a put's is its
// item). Reads are priced on the whole item or, for a Query, on the items
// the same query returns without its projection: a projection does not
// lower a read's charge.
//
// The report (Report.Print) gives, per scenario (a new event, a duplicate
// delivery, a duplicate message, an event that failed once and was retried,
// a superseded event, an event of the same second as its object's last,
// settled by reading the object from Stripe's API (the stand-in), a new
// event through EventBridge; then GitHub's
// sample delivery new, redelivered, and its body under a fresh delivery
// id, which the receiver refuses as a replay after one write, its claim of
// the body), each request's write and read units by table and index; then
// dollars per million events line by line, the two ways in side by side
// (API Gateway and the receiver; EventBridge's partner event, the ingress
// queue and the bridge, whose sends to the queue EventBridge makes and the
// meter prices from the list), the fixed monthly
// cost, the hosted alternatives at the same volumes, and the write units a
// second that the hottest partition-key value of each table and index
// receives at a steady 3,000 events a second; then what an audit run
// (inboxctl audit) costs at 10,000 and 1,000,000 subscriptions, measured
// over 150. Its last three lines are the figures with targets
// (docs/performance.md).
package cost

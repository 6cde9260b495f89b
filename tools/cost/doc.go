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
// a superseded event, a new event through EventBridge), each request's
// write and read units by table and index; then dollars per million events
// line by line, the two ways in side by side (API Gateway and the receiver;
// EventBridge's partner event, the ingress queue and the bridge, whose
// sends to the queue EventBridge makes and the meter prices from the list), the fixed monthly
// cost, the hosted alternatives at the same volumes, and the write units a
// second that the hottest partition-key value of each table and index
// receives at a steady 3,000 events a second. Its last three lines are the
// figures issue 13 sets targets for.
package cost

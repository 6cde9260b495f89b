package failpoints

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/metrics"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// alarms are what the template's alarms watch: the pipeline's own metrics
// (namespace metrics.Namespace) by function and name, and the queues
// whose visible messages raise one.
type alarms struct {
	metrics map[string]bool // "<function>/<metric>"
	queues  map[string]bool // logical ids
}

func loadAlarms(t *template.Template) alarms {
	a := alarms{metrics: map[string]bool{}, queues: map[string]bool{}}
	for _, r := range t.Resources("AWS::CloudWatch::Alarm") {
		ns, _ := r.Properties["Namespace"].(string)
		name, _ := r.Properties["MetricName"].(string)
		dims, _ := r.Properties["Dimensions"].([]any)
		for _, raw := range dims {
			d, _ := raw.(map[string]any)
			switch dn, _ := d["Name"].(string); {
			case ns == metrics.Namespace && dn == "function":
				if v, ok := d["Value"].(string); ok {
					a.metrics[v+"/"+name] = true
				}
			case ns == "AWS/SQS" && dn == "QueueName" && name == "ApproximateNumberOfMessagesVisible":
				if _, att, ok := template.Symbol(d["Value"]); ok {
					a.queues[att.LogicalID] = true
				}
			}
		}
	}
	return a
}

// personMetrics are the metrics that count an event reaching a status
// that needs a person, by status: an alarm must watch one of them (or,
// for dead_lettered, the DLQ it is in).
var personMetrics = map[event.Status][]string{
	event.StatusFailedPermanent: {"failed_permanent"},
	event.StatusDeadLettered:    {"dead_lettered"},
}

// counted sums, over a function's log lines, the values of an EMF
// metric.
func counted(lines []map[string]any, name string) float64 {
	var n float64
	for _, l := range lines {
		if _, ok := l["_aws"]; !ok {
			continue
		}
		if v, ok := l[name].(float64); ok {
			n += v
		}
	}
	return n
}

// check reads where the case left each event sent and judges it by the
// invariants:
//
//   - an event the courier was answered 2xx for (or that the world repairs
//     by itself: GitHub's redeliveries, Stripe's listing) ends processed,
//     or failed_permanent or dead_lettered with its payload still readable
//     and a metric that an alarm watches counting it;
//   - its effects are committed once (the ledger's count), and the team's
//     application gets one idempotency key per effect;
//   - the store and the DLQ agree: dead_lettered exactly when the DLQ
//     holds its message;
//   - nothing is left received, processing or failed when the case ends;
//   - with a second event of the object (Spec.Second), the mirror ends in
//     the state of the newest event processed: chronological order,
//     whichever was applied last.
func (e *env) check(res *Result, s *stack, snds []*courier) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for _, snd := range snds {
		if snd.err != nil {
			res.Err = snd.err.Error()
			return
		}
		if snd.sent() {
			ids = append(ids, snd.d.id)
		}
	}
	inDLQ, err := dlqCount(ctx, sqs.NewFromConfig(e.direct), s.res.Queues["DeadLetterQueue"].URL, ids)
	if err != nil {
		res.Err = fmt.Sprintf("read the DLQ: %v", err)
		return
	}
	var recs []*event.Record
	for i, snd := range snds {
		if !snd.sent() {
			recs = append(recs, nil)
			continue
		}
		v, rec := e.checkEvent(ctx, s, snd, inDLQ[snd.d.id])
		recs = append(recs, rec)
		if v.Err != "" {
			res.Err = v.Err
			return
		}
		if i == 0 {
			res.Outcome = v.Outcome
		} else {
			res.SecondOutcome = v.Outcome
			if v.Why != "" {
				v.Why = "second event: " + v.Why
			}
		}
		res.Lost, res.Doubled = res.Lost || v.Lost, res.Doubled || v.Doubled
		res.Silent, res.Disagree = res.Silent || v.Silent, res.Disagree || v.Disagree
		if res.Why == "" {
			res.Why = v.Why
		}
	}
	if why := e.countedEach(s, recs, inDLQ); why != "" && !res.Silent {
		res.Silent, res.Why = true, strings.TrimPrefix(res.Why+"; "+why, "; ")
	}
	if len(ids) > 1 && s.w.Provider == event.ProviderStripe {
		if err := e.checkMirror(ctx, res, s, snds, recs); err != nil {
			res.Err = err.Error()
		}
	}
}

// countedEach says which status needing a person holds more of the
// case's events than the metrics an alarm watches counted (and, for
// dead_lettered, the DLQ holds): each event that needs a person is
// counted, not one for two. "" when each is.
func (e *env) countedEach(s *stack, recs []*event.Record, inDLQ map[string]int) string {
	held := map[event.Status]int{}
	dlq := map[event.Status]int{}
	for _, r := range recs {
		if r != nil && personMetrics[r.Status] != nil {
			held[r.Status]++
			if r.Status == event.StatusDeadLettered && inDLQ[r.ID] > 0 && e.alarms.queues["DeadLetterQueue"] {
				dlq[r.Status]++
			}
		}
	}
	for st, n := range held {
		if n < 2 {
			continue // checkEvent's own test
		}
		var total float64
		for _, m := range personMetrics[st] {
			for f, l := range s.logs {
				if e.alarms.metrics[f+"/"+m] {
					total += counted(l.lines(), m)
				}
			}
		}
		if int(total)+dlq[st] < n {
			return fmt.Sprintf("%d events %s, and the metrics an alarm watches counted %v", n, st, total)
		}
	}
	return ""
}

// checkEvent judges one event (check), with inDLQ its messages in the
// DLQ; it returns its record, nil when there is none.
func (e *env) checkEvent(ctx context.Context, s *stack, snd *courier, inDLQ int) (Result, *event.Record) {
	o, err := e.observe(ctx, s, snd.d)
	if err != nil {
		return Result{Err: err.Error()}, nil
	}
	o.inDLQ, o.acked, o.attempts = inDLQ, snd.acked(), snd.attempts()
	if o.found {
		o.alarmed = e.alarmed(s, o.rec.Status, inDLQ)
	}
	res := judge(s.w, o)
	if !o.found {
		return res, nil
	}
	return res, &o.rec
}

// observed is what the check saw of one event once its case ended.
type observed struct {
	rec   event.Record
	found bool // a record exists
	// commits counts the event's effects committed (the ledger's, with
	// the audit's repair's in AuditEffects worlds); keys are the
	// idempotency keys of the event the application applied.
	commits int
	keys    []string
	inDLQ   int // the event's messages in the DLQ
	// acked: a courier's attempt was acknowledged (2xx); attempts counts
	// them.
	acked    bool
	attempts int
	// alarmed: a metric or queue an alarm watches counted the event in
	// its status.
	alarmed bool
}

// observe reads the event d's record, its commits and its keys.
func (e *env) observe(ctx context.Context, s *stack, d delivery) (observed, error) {
	var o observed
	db := dynamodb.NewFromConfig(e.direct)
	events := &store.Events{DB: db, Table: s.res.Tables["EventsTable"]}
	rec, err := events.Get(ctx, s.w.Provider, d.id)
	o.rec, o.found = rec, err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return o, fmt.Errorf("read the record: %v", err)
	}
	if o.commits, err = ledgerCommits(ctx, db, s.res.Tables["MirrorTable"], s.w.Provider, d.id); err != nil {
		return o, fmt.Errorf("read the ledger: %v", err)
	}
	if s.w.AuditEffects {
		// The audit's repair to the event's state runs the change's
		// effects under its own id; the event then runs none.
		n, err := auditCommits(ctx, db, s.res.Tables["MirrorTable"], d)
		if err != nil {
			return o, fmt.Errorf("read the ledger: %v", err)
		}
		o.commits += n
	}
	o.keys = s.down.keys(keyPrefix(s.w.Provider, d.id))
	return o, nil
}

// keyPrefix begins the idempotency keys of event id of provider p.
func keyPrefix(p, id string) string {
	if p != event.ProviderStripe {
		return p + "#" + id + ":"
	}
	return id + ":"
}

// alarmed reports whether a metric an alarm watches counted an event
// reaching st, or, dead-lettered, its message is in a DLQ an alarm
// watches.
func (e *env) alarmed(s *stack, st event.Status, inDLQ int) bool {
	alarmed := false
	for _, m := range personMetrics[st] {
		for f, l := range s.logs {
			if e.alarms.metrics[f+"/"+m] && counted(l.lines(), m) > 0 {
				alarmed = true
			}
		}
	}
	if st == event.StatusDeadLettered && inDLQ > 0 && e.alarms.queues["DeadLetterQueue"] {
		alarmed = true
	}
	return alarmed
}

// judge decides what became of one event in world w from what the check
// observed of it: lost, doubled, silent, or disagreeing (DLQ and store),
// and else its outcome.
func judge(w World, o observed) Result {
	var res Result
	rec, found, acked := o.rec, o.found, o.acked
	// The reconciler repairs what it lists: GitHub's deliveries, Stripe's
	// snapshot events with a key; no thin event is listed.
	repaired := w.Retry.Redelivers || (w.APIKey && !w.Thin)

	// Doubled: an effect committed twice, or two keys for one effect.
	if o.commits > 1 {
		res.Doubled, res.Why = true, fmt.Sprintf("the ledger counts %d commits", o.commits)
	}
	seen := map[string]bool{}
	for _, k := range o.keys {
		handler := k[strings.LastIndexByte(k, ':')+1:]
		if seen[handler] {
			res.Doubled, res.Why = true, "two idempotency keys for one effect"
		}
		seen[handler] = true
	}

	// The DLQ and the store.
	dead := found && rec.Status == event.StatusDeadLettered && rec.DiscardedAt.IsZero()
	switch {
	case dead && o.inDLQ == 0:
		res.Disagree, res.Why = true, "dead_lettered, and its message is not in the DLQ"
	case o.inDLQ > 0 && !dead && !(found && final(rec.Status)):
		// A stale copy of a record that is final is harmless: a redrive of
		// it is a duplicate (or counted permanent again).
		res.Disagree, res.Why = true, fmt.Sprintf("its message is in the DLQ, its record %s", statusOf(rec, found))
	}

	payload := found && len(rec.Payload) > 0 || (found && rec.PayloadOmitted && w.APIKey && w.Provider == event.ProviderStripe)
	switch {
	case !found && (acked || repaired):
		res.Lost, res.Why = true, fmt.Sprintf("no record after %d attempts (acknowledged: %t)", o.attempts, acked)
	case !found:
		res.Outcome = OutcomeUnacked
	case rec.Status == event.StatusProcessed || rec.Status == event.StatusIgnored:
		res.Outcome = OutcomeProcessed
		if o.commits == 0 && rec.Status == event.StatusProcessed {
			res.Lost, res.Why = true, "processed, but its effects never committed"
		}
	case rec.Status == event.StatusFailedPermanent || rec.Status == event.StatusDeadLettered:
		res.Outcome = OutcomePerson + " (" + string(rec.Status) + ")"
		switch {
		case !payload:
			res.Lost, res.Why = true, string(rec.Status)+" without a payload to redrive"
		case !o.alarmed:
			res.Silent, res.Why = true, string(rec.Status)+", and no metric an alarm watches counted it"
		}
	default:
		why := fmt.Sprintf("left %s (attempts %d, last error %q)", rec.Status, rec.Attempts, rec.LastError)
		if acked || repaired {
			res.Lost, res.Why = true, why
		} else {
			res.Silent, res.Why = true, why
		}
	}
	if res.Outcome == "" && !res.Lost && !res.Silent {
		res.Outcome = statusOf(rec, found)
	}
	return res
}

// final reports whether a record in st needs nothing more from the
// pipeline.
func final(st event.Status) bool {
	return st == event.StatusProcessed || st == event.StatusIgnored || st == event.StatusFailedPermanent
}

func statusOf(r event.Record, found bool) string {
	if !found {
		return "missing"
	}
	return string(r.Status)
}

// dlqCount drains the DLQ and counts the messages pointing to each of
// ids.
func dlqCount(ctx context.Context, q *sqs.Client, url string, ids []string) (map[string]int, error) {
	n := map[string]int{}
	for range 20 {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			return nil, err
		}
		if len(out.Messages) == 0 {
			return n, nil
		}
		for _, m := range out.Messages {
			if p, err := queue.Decode(aws.ToString(m.Body)); err == nil && slices.Contains(ids, p.ID) {
				n[p.ID]++
			}
		}
	}
	return n, nil
}

// ledgerCommits reads how many times the event's effects were committed.
func ledgerCommits(ctx context.Context, db *dynamodb.Client, table, provider, id string) (int, error) {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: ledgerKey(provider, id)}}})
	if err != nil {
		return 0, err
	}
	v, ok := out.Item["commits"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	var n int
	fmt.Sscan(v.Value, &n)
	return n, nil
}

// checkMirror judges the object's mirror after a case with a second
// event of it (mirrorWhy). recs are the events' records (nil: none), as
// snds.
func (e *env) checkMirror(ctx context.Context, res *Result, s *stack, snds []*courier, recs []*event.Record) error {
	var heads []stripeHead
	var objs []json.RawMessage
	for _, snd := range snds {
		h, err := stripeHeadOf(snd.d.body)
		if err != nil {
			return err
		}
		heads = append(heads, h)
		obj := snd.d.object
		if len(obj) == 0 {
			obj = objectOf(snd.d.body)
		}
		objs = append(objs, obj)
	}
	obj := heads[0]
	reader := &mirror.Reader{DB: dynamodb.NewFromConfig(e.direct), Table: s.res.Tables["MirrorTable"]}
	snap, err := reader.Object(ctx, mirror.Key(obj.Account, obj.Object))
	if err != nil && !errors.Is(err, mirror.ErrNotFound) {
		return fmt.Errorf("read the mirror: %w", err)
	}
	if why := mirrorWhy(heads, objs, recs, snap, err == nil); why != "" {
		// A mirror in an older state than an event processed is a
		// change of state lost.
		res.Lost = true
		res.Why = strings.TrimPrefix(res.Why+"; "+why, "; ")
	}
	return nil
}

// mirrorWhy says what is wrong with the snapshot of an object (found:
// there is one) after its events heads, whose objects are objs and whose
// records are recs (nil: none): its state must be the newest (by created)
// of the events whose record ended processed, whatever order they were
// applied in: that event's own, or a state read from Stripe's API (an
// audit's repair, a tie's settling) no older than it and equal to it on
// what the mirror compares (mirror.Differences). With none processed, no
// event of the case's may have written it (the world's own state, an
// audit's repair or an event seeded before the case, may stand). "" when
// it is right.
func mirrorWhy(heads []stripeHead, objs []json.RawMessage, recs []*event.Record, snap mirror.Snapshot, found bool) string {
	want := -1
	for i := range heads {
		if r := recs[i]; r != nil && r.Status == event.StatusProcessed && (want < 0 || heads[i].Created > heads[want].Created) {
			want = i
		}
	}
	got := "none"
	if found {
		got = fmt.Sprintf("%s's state (created %d)", snap.LastEventID, snap.LastEventCreated)
	}
	ours := func(id string) bool {
		for _, h := range heads {
			if h.ID == id {
				return true
			}
		}
		return false
	}
	switch {
	case want < 0 && found && ours(snap.LastEventID):
		return fmt.Sprintf("the mirror holds %s, and no event of it ended processed", got)
	case want < 0:
		return ""
	case found && snap.LastEventID == heads[want].ID && snap.LastEventCreated == heads[want].Created:
		return ""
	case found && snap.SettledBy != "" && !ours(snap.LastEventID) && snap.LastEventCreated >= heads[want].Created && len(objs[want]) > 0:
		if diffs, err := mirror.Differences(snap, objs[want]); err == nil && len(diffs) == 0 {
			return ""
		}
	}
	return fmt.Sprintf("the mirror holds %s, want %s's (created %d), the newest processed", got, heads[want].ID, heads[want].Created)
}

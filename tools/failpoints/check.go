package failpoints

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/template"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/metrics"
	"github.com/webhook-inbox/webhook-inbox/shared/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
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
	event.StatusFailedPermanent: {"permanent"},
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

// check reads where the case left the event and judges it by the
// invariants:
//
//   - an event the sender was answered 2xx for (or that the world repairs
//     by itself: GitHub's redeliveries, Stripe's listing) ends processed,
//     or failed_permanent or dead_lettered with its payload still readable
//     and a metric that an alarm watches counting it;
//   - its effects are committed once (the ledger's count), and the team's
//     application gets one idempotency key per effect;
//   - the store and the DLQ agree: dead_lettered exactly when the DLQ
//     holds its message;
//   - nothing is left received, processing or failed when the case ends.
func (e *env) check(res *Result, s *stack, snd *sender, d delivery) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := dynamodb.NewFromConfig(e.direct)
	events := &store.Events{DB: db, Table: s.res.Tables["EventsTable"]}
	rec, err := events.Get(ctx, s.w.Provider, d.id)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		res.Err = fmt.Sprintf("read the record: %v", err)
		return
	}
	inDLQ, err := dlqCount(ctx, sqs.NewFromConfig(e.direct), s.res.Queues["DeadLetterQueue"].URL, d.id)
	if err != nil {
		res.Err = fmt.Sprintf("read the DLQ: %v", err)
		return
	}
	commits, err := ledgerCommits(ctx, db, s.res.Tables["MirrorTable"], s.w.Provider, d.id)
	if err != nil {
		res.Err = fmt.Sprintf("read the ledger: %v", err)
		return
	}
	if s.w.AuditEffects {
		// The audit's repair to the event's state runs the change's
		// effects under its own id; the event then runs none.
		n, err := auditCommits(ctx, db, s.res.Tables["MirrorTable"], d)
		if err != nil {
			res.Err = fmt.Sprintf("read the ledger: %v", err)
			return
		}
		commits += n
	}
	acked := snd.acked()
	// The reconciler repairs what it lists: GitHub's deliveries, Stripe's
	// snapshot events with a key; no thin event is listed.
	repaired := s.w.Sender.Redelivers || (s.w.APIKey && !s.w.Thin)

	// Doubled: an effect committed twice, or two keys for one effect.
	keyPrefix := d.id + ":"
	if s.w.Provider != event.ProviderStripe {
		keyPrefix = s.w.Provider + "#" + d.id + ":"
	}
	if commits > 1 {
		res.Doubled, res.Why = true, fmt.Sprintf("the ledger counts %d commits", commits)
	}
	seen := map[string]bool{}
	for _, k := range s.down.keys(keyPrefix) {
		handler := k[strings.LastIndexByte(k, ':')+1:]
		if seen[handler] {
			res.Doubled, res.Why = true, "two idempotency keys for one effect"
		}
		seen[handler] = true
	}

	// The DLQ and the store.
	dead := found && rec.Status == event.StatusDeadLettered && rec.DiscardedAt.IsZero()
	switch {
	case dead && inDLQ == 0:
		res.Disagree, res.Why = true, "dead_lettered, and its message is not in the DLQ"
	case inDLQ > 0 && !dead && !(found && final(rec.Status)):
		// A stale copy of a record that is final is harmless: a redrive of
		// it is a duplicate (or counted permanent again).
		res.Disagree, res.Why = true, fmt.Sprintf("its message is in the DLQ, its record %s", statusOf(rec, found))
	}

	payload := found && len(rec.Payload) > 0 || (found && rec.PayloadOmitted && s.w.APIKey && s.w.Provider == event.ProviderStripe)
	switch {
	case !found && (acked || repaired):
		res.Lost, res.Why = true, fmt.Sprintf("no record after %d attempts (acknowledged: %t)", snd.attempts(), acked)
	case !found:
		res.Outcome = OutcomeUnacked
	case rec.Status == event.StatusProcessed || rec.Status == event.StatusIgnored:
		res.Outcome = OutcomeProcessed
		if commits == 0 && rec.Status == event.StatusProcessed {
			res.Lost, res.Why = true, "processed, but its effects never committed"
		}
	case rec.Status == event.StatusFailedPermanent || rec.Status == event.StatusDeadLettered:
		res.Outcome = OutcomePerson + " (" + string(rec.Status) + ")"
		alarmed := false
		for _, m := range personMetrics[rec.Status] {
			for f, l := range s.logs {
				if e.alarms.metrics[f+"/"+m] && counted(l.lines(), m) > 0 {
					alarmed = true
				}
			}
		}
		if rec.Status == event.StatusDeadLettered && inDLQ > 0 && e.alarms.queues["DeadLetterQueue"] {
			alarmed = true
		}
		switch {
		case !payload:
			res.Lost, res.Why = true, string(rec.Status)+" without a payload to redrive"
		case !alarmed:
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

// dlqCount drains the DLQ and counts the messages pointing to id.
func dlqCount(ctx context.Context, q *sqs.Client, url, id string) (int, error) {
	n := 0
	for range 20 {
		out, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 60})
		if err != nil {
			return 0, err
		}
		if len(out.Messages) == 0 {
			return n, nil
		}
		for _, m := range out.Messages {
			if p, err := queue.Decode(aws.ToString(m.Body)); err == nil && p.ID == id {
				n++
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

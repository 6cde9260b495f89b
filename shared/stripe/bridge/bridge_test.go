package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
)

const (
	source  = "aws.partner/stripe.com/ed_test_61RM"
	account = "123456789012"
)

var now = time.Unix(1_800_000_000, 0)

// store is the events table in memory, safe for the handler's goroutines:
// fail, when set, answers Create for an event id.
type store struct {
	mu      sync.Mutex
	records map[string]event.Record
	fail    func(id string) error
}

func (s *store) Create(_ context.Context, r *event.Record) (*event.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		if err := s.fail(r.ID); err != nil {
			return nil, err
		}
	}
	if s.records == nil {
		s.records = map[string]event.Record{}
	}
	if old, ok := s.records[r.ID]; ok {
		return &old, nil
	}
	s.records[r.ID] = *r
	return nil, nil
}

func (s *store) StorePayload(context.Context, *event.Record) error { return nil }

func (s *store) get(id string) (event.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[id]
	return r, ok
}

// queue is the webhook queue in memory; fail, when set, answers Send.
type queue struct {
	mu   sync.Mutex
	sent []event.Pointer
	fail func(id string) error
}

func (q *queue) Send(_ context.Context, p event.Pointer) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail != nil {
		if err := q.fail(p.ID); err != nil {
			return err
		}
	}
	q.sent = append(q.sent, p)
	return nil
}

// dlq is the ingress dead-letter queue; err, when set, answers every send.
type dlq struct {
	mu   sync.Mutex
	sent []*sqs.SendMessageInput
	err  error
}

func (d *dlq) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	d.sent = append(d.sent, in)
	return &sqs.SendMessageOutput{MessageId: aws.String("dlq-1")}, nil
}

type fixture struct {
	h     *Handler
	store *store
	queue *queue
	dlq   *dlq
	logs  *bytes.Buffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{store: &store{}, queue: &queue{}, dlq: &dlq{}, logs: &bytes.Buffer{}}
	in := &ingest.Ingester{Store: f.store, Queue: f.queue, Provider: event.ProviderStripe,
		Handled: func(t string) bool { return t == "invoice.paid" || t == "customer.subscription.created" }, Now: func() time.Time { return now }}
	h, err := New(Config{Ingester: in, Source: source, Account: account, APIVersion: "2025-02-24.acacia",
		DeadLetters: f.dlq, DeadLetterURL: "https://sqs.example/dlq", Logger: slog.New(slog.NewJSONHandler(f.logs, nil)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	f.h = h
	return f
}

// snapshot is a Stripe snapshot event, compact as EventBridge carries it.
func snapshot(id, typ string, livemode bool) string {
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": now.Unix() - 5, "livemode": livemode,
		"api_version": "2025-02-24.acacia", "data": map[string]any{"object": map[string]any{"id": "in_" + id, "object": "invoice", "customer_email": "jenny@example.com"}},
	})
	return string(b)
}

// thin is a Stripe thin event.
func thin(id, typ string) string {
	return fmt.Sprintf(
		`{"id":%q,"object":"v2.core.event","type":%q,"livemode":false,"created":"2027-01-15T08:00:00.123Z","related_object":{"id":"in_%s","type":"invoice","url":"/v1/invoices/in_%s"}}`,
		id,
		typ,
		id,
		id,
	)
}

// envelope is the EventBridge event Stripe's partner source puts on the
// bus, as the rule's SQS target delivers it: the nine fields, detail the
// Stripe event.
func envelope(src, acct, detailType, detail string) string {
	return fmt.Sprintf(
		`{"version":"0","id":"6a7e8feb-b491-4cf7-a9f1-bf3703467718","detail-type":%q,"source":%q,"account":%q,"time":"2027-01-15T08:00:00Z","region":"us-east-1","resources":[],"detail":%s}`,
		detailType,
		src,
		acct,
		detail,
	)
}

func msg(id, body string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
}

func (f *fixture) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(f.logs.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func throttling() error {
	return &retry.MaxAttemptsError{Attempt: 3, Err: &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: "slow down"}}
}

func TestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     string
		storeErr error
		queueErr error
		want     outcome.Outcome
		retry    bool
		moved    bool
		stored   bool
		enqueued bool
	}{
		{name: "handled snapshot event", body: envelope(source, account, "invoice.paid", snapshot("evt_1", "invoice.paid", false)), want: outcome.Stored, stored: true, enqueued: true},
		{name: "type outside the allowlist", body: envelope(source, account, "charge.refunded", snapshot("evt_1", "charge.refunded", false)), want: outcome.Ignored, stored: true},
		{name: "thin event", body: envelope(source, account, "v1.invoice.paid", thin("evt_1", "v1.invoice.paid")), want: outcome.Ignored, stored: true},
		{name: "another partner source", body: envelope("aws.partner/stripe.com/ed_other", account, "invoice.paid", snapshot("evt_1", "invoice.paid", false)), want: outcome.RejectedWrongSource, moved: true},
		{name: "a custom source", body: envelope("my.app", account, "invoice.paid", snapshot("evt_1", "invoice.paid", false)), want: outcome.RejectedWrongSource, moved: true},
		{name: "another account", body: envelope(source, "210987654321", "invoice.paid", snapshot("evt_1", "invoice.paid", false)), want: outcome.RejectedWrongAccount, moved: true},
		{name: "not JSON", body: `Stripe says hello`, want: outcome.RejectedMalformed, moved: true},
		{name: "not an EventBridge event", body: `{"id":"evt_1","object":"event","type":"invoice.paid"}`, want: outcome.RejectedMalformed, moved: true},
		{name: "no detail", body: strings.Replace(envelope(source, account, "invoice.paid", `{}`), `,"detail":{}`, ``, 1), want: outcome.RejectedMalformed, moved: true},
		{name: "detail not a Stripe event", body: envelope(source, account, "invoice.paid", `{"id":"ch_1","object":"charge"}`), want: outcome.RejectedMalformed, moved: true},
		{name: "detail with a field of the wrong type", body: envelope(source, account, "invoice.paid", `{"id":"evt_1","object":"event","type":"invoice.paid","created":"yesterday"}`), want: outcome.RejectedMalformed, moved: true},
		{name: "thin event with a Unix created", body: envelope(source, account, "v1.invoice.paid", `{"id":"evt_1","object":"v2.core.event","type":"v1.invoice.paid","created":1800000000}`), want: outcome.RejectedMalformed, moved: true},
		{name: "detail without an id", body: envelope(source, account, "invoice.paid", `{"object":"event","type":"invoice.paid"}`), want: outcome.RejectedMissingID, moved: true},
		{name: "live event at a test deployment", body: envelope(source, account, "invoice.paid", snapshot("evt_1", "invoice.paid", true)), want: outcome.RejectedWrongMode, moved: true},
		{name: "store fails", body: envelope(source, account, "invoice.paid", snapshot("evt_1", "invoice.paid", false)), storeErr: errors.New("connection reset"), want: outcome.PersistFailed, retry: true},
		{name: "store throttled", body: envelope(source, account, "invoice.paid", snapshot("evt_1", "invoice.paid", false)), storeErr: throttling(), want: outcome.Throttled, retry: true},
		{name: "store times out", body: envelope(source, account, "invoice.paid", snapshot("evt_1", "invoice.paid", false)), storeErr: context.DeadlineExceeded, want: outcome.Timeout, retry: true},
		{name: "queue fails", body: envelope(source, account, "invoice.paid", snapshot("evt_1", "invoice.paid", false)), queueErr: errors.New("connection reset"), want: outcome.EnqueueFailed, retry: true, stored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.storeErr != nil {
				f.store.fail = func(string) error { return tc.storeErr }
			}
			if tc.queueErr != nil {
				f.queue.fail = func(string) error { return tc.queueErr }
			}
			resp, err := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", tc.body)}})
			if err != nil {
				t.Fatalf("Handle: %v (it never fails the invocation)", err)
			}
			if got := len(resp.BatchItemFailures) == 1; got != tc.retry {
				t.Errorf("retried: got %v (%+v), want %v", got, resp.BatchItemFailures, tc.retry)
			}
			lines := f.lines(t)
			if len(lines) != 1 {
				t.Fatalf("log lines: got %d, want 1\n%s", len(lines), f.logs)
			}
			l := lines[0]
			if l["msg"] != "eventbridge event" || l["outcome"] != string(tc.want) || l["events"] != 1.0 || l["function"] != "bridge" ||
				l["message_id"] != "m1" {
				t.Errorf("log line: got %v, want outcome %s, events 1, function bridge, message_id m1", l, tc.want)
			}
			if _, ok := l["_aws"]; !ok {
				t.Errorf("log line carries no EMF metrics: %v", l)
			}
			if strings.Contains(f.logs.String(), "jenny@example.com") {
				t.Errorf("the log shows the payload: %s", f.logs)
			}
			if got := len(f.dlq.sent) == 1; got != tc.moved {
				t.Errorf("moved to the dead-letter queue: got %v, want %v", got, tc.moved)
			}
			if tc.moved {
				in := f.dlq.sent[0]
				if aws.ToString(in.MessageBody) != tc.body || aws.ToString(in.QueueUrl) != "https://sqs.example/dlq" {
					t.Errorf("dead letter: got body %q to %s, want the message's body unchanged", aws.ToString(in.MessageBody), aws.ToString(in.QueueUrl))
				}
				if o := aws.ToString(in.MessageAttributes[AttrOutcome].StringValue); o != string(tc.want) {
					t.Errorf("dead letter's outcome attribute: got %q, want %s", o, tc.want)
				}
				if e := aws.ToString(in.MessageAttributes[AttrError].StringValue); e == "" || e != l["error"] {
					t.Errorf("dead letter's error attribute: got %q, want the logged error %q", e, l["error"])
				}
				if l["moved_to"] != "dead-letter queue" || l["level"] != "WARN" {
					t.Errorf("log line of a rejected message: got %v, want moved_to and level WARN", l)
				}
			}
			if tc.retry && (l["level"] != "ERROR" || l["error"] == nil) {
				t.Errorf("log line of a retried message: got %v, want level ERROR and the error", l)
			}
			rec, stored := f.store.get("evt_1")
			if stored != tc.stored {
				t.Fatalf("stored: got %v, want %v", stored, tc.stored)
			}
			if stored && (rec.Source != event.SourceEventBridge || rec.Created == 0 || rec.ObjectID != "in_evt_1") {
				t.Errorf(
					"record: got source %s, created %d, object %s; want eventbridge, the event's creation, in_evt_1",
					rec.Source,
					rec.Created,
					rec.ObjectID,
				)
			}
			if got := len(f.queue.sent) == 1; got != tc.enqueued {
				t.Errorf("enqueued: got %v, want %v", got, tc.enqueued)
			}
		})
	}
}

// TestThinEventIsStoredAsItCame: a thin event's record has its creation
// time from the RFC 3339 "created", its related object, and the detail as
// the payload, byte for byte.
func TestThinEventIsStoredAsItCame(t *testing.T) {
	f := newFixture(t)
	detail := thin("evt_thin", "v1.invoice.paid")
	if _, err := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", envelope(source, account, "v1.invoice.paid", detail))}}); err != nil {
		t.Fatal(err)
	}
	rec, ok := f.store.get("evt_thin")
	want := time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC).Unix()
	if !ok || rec.Created != want || rec.ObjectID != "in_evt_thin" || rec.ObjectType != "invoice" || string(rec.Payload) != detail ||
		rec.Status != event.StatusIgnored {
		t.Errorf("record: got %+v (%v); want created %d, object in_evt_thin (invoice), the detail as payload, ignored", rec, ok, want)
	}
}

// TestOneBadMessageNeverHoldsTheOthers: in one batch, a handled event, a
// malformed detail, an event whose write fails and another handled one:
// only the failed write comes back, the malformed one is in the
// dead-letter queue, the two others are in the pipeline.
func TestOneBadMessageNeverHoldsTheOthers(t *testing.T) {
	f := newFixture(t)
	f.store.fail = func(id string) error {
		if id == "evt_fails" {
			return errors.New("connection reset")
		}
		return nil
	}
	batch := events.SQSEvent{Records: []events.SQSMessage{
		msg("m1", envelope(source, account, "invoice.paid", snapshot("evt_a", "invoice.paid", false))),
		msg("m2", envelope(source, account, "invoice.paid", `{"id":"evt_bad","object":"event","type":"invoice.paid","data":[]}`)),
		msg("m3", envelope(source, account, "invoice.paid", snapshot("evt_fails", "invoice.paid", false))),
		msg("m4", envelope(source, account, "invoice.paid", snapshot("evt_b", "invoice.paid", false))),
	}}
	resp, err := f.h.Handle(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m3" {
		t.Errorf("batch item failures: got %+v, want m3 alone", resp.BatchItemFailures)
	}
	if len(f.dlq.sent) != 1 || !strings.Contains(aws.ToString(f.dlq.sent[0].MessageBody), "evt_bad") {
		t.Errorf("dead letters: got %d, want the malformed one", len(f.dlq.sent))
	}
	for _, id := range []string{"evt_a", "evt_b"} {
		if _, ok := f.store.get(id); !ok {
			t.Errorf("%s not stored", id)
		}
	}
	if len(f.queue.sent) != 2 {
		t.Errorf("pointers: got %d, want 2", len(f.queue.sent))
	}
	if n := len(f.lines(t)); n != 4 {
		t.Errorf("log lines: got %d, want one per message", n)
	}
}

// TestRejectedMessageIsRetriedWhenItCannotBeMoved: a rejected message the
// dead-letter queue refuses stays on the ingress queue (a batch item
// failure), logged and counted, never dropped.
func TestRejectedMessageIsRetriedWhenItCannotBeMoved(t *testing.T) {
	f := newFixture(t)
	f.dlq.err = errors.New("access denied")
	resp, err := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", `not json`)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 {
		t.Errorf("batch item failures: got %+v, want the message", resp.BatchItemFailures)
	}
	l := f.lines(t)[0]
	if l["outcome"] != string(outcome.RejectedMalformed) || l["dead_letter_failures"] != 1.0 || l["level"] != "ERROR" ||
		!strings.Contains(fmt.Sprint(l["dead_letter_error"]), "access denied") {
		t.Errorf("log line: got %v, want rejected_malformed, dead_letter_failures 1, level ERROR and the send's error", l)
	}
}

// TestSameEventBothWaysIsOneRecord: the webhook's copy and EventBridge's
// are byte-different (EventBridge re-serializes the detail), yet one event
// id: the second is a duplicate, with no payload conflict, and enqueues
// nothing more.
func TestSameEventBothWaysIsOneRecord(t *testing.T) {
	f := newFixture(t)
	webhook := []byte(strings.ReplaceAll(snapshot("evt_both", "invoice.paid", false), ",", ",\n  "))
	env, err := event.DecodeEnvelope(webhook)
	if err != nil {
		t.Fatal(err)
	}
	rec := event.NewRecord(event.ProviderStripe, env, webhook, ingest.Hash(webhook), event.SourceWebhook, event.StatusProcessed, now)
	f.store.records = map[string]event.Record{env.ID: rec}
	if _, err := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", envelope(source, account, "invoice.paid", snapshot("evt_both", "invoice.paid", false)))}}); err != nil {
		t.Fatal(err)
	}
	l := f.lines(t)[0]
	if l["outcome"] != string(outcome.Duplicate) || l["payload_hash_conflict"] != nil {
		t.Errorf("log line: got %v, want duplicate without a hash conflict", l)
	}
	if got, _ := f.store.get("evt_both"); got.Source != event.SourceWebhook || len(f.queue.sent) != 0 {
		t.Errorf("got source %s and %d pointers, want the webhook's record untouched and nothing enqueued", got.Source, len(f.queue.sent))
	}
}

func TestAPIVersionMismatchIsAcceptedAndCounted(t *testing.T) {
	f := newFixture(t)
	detail := strings.Replace(snapshot("evt_1", "invoice.paid", false), "2025-02-24.acacia", "2020-08-27", 1)
	resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", envelope(source, account, "invoice.paid", detail))}})
	l := f.lines(t)[0]
	if len(resp.BatchItemFailures) != 0 || l["outcome"] != string(outcome.Stored) || l["api_version_mismatch"] != 1.0 || l["api_version"] != "2020-08-27" {
		t.Errorf("got %+v and %v, want stored with api_version_mismatch 1", resp, l)
	}
}

// TestDeadlineLeavesRoomToAnswer: a write that never answers ends before
// the invocation's deadline, and the message is retried with outcome
// timeout, so the answer and the log line still happen.
func TestDeadlineLeavesRoomToAnswer(t *testing.T) {
	f := newFixture(t)
	f.h.cfg.Ingester.Store = hangingStore{}
	ctx, cancel := context.WithTimeout(context.Background(), answerReserve+200*time.Millisecond)
	defer cancel()
	resp, err := f.h.Handle(
		ctx,
		events.SQSEvent{Records: []events.SQSMessage{msg("m1", envelope(source, account, "invoice.paid", snapshot("evt_1", "invoice.paid", false)))}},
	)
	if err != nil || ctx.Err() != nil {
		t.Fatalf("got %v, context %v; want an answer before the deadline", err, ctx.Err())
	}
	if len(resp.BatchItemFailures) != 1 || f.lines(t)[0]["outcome"] != string(outcome.Timeout) {
		t.Errorf("got %+v, %v; want the message retried with outcome timeout", resp, f.lines(t))
	}
}

type hangingStore struct{}

func (hangingStore) Create(ctx context.Context, _ *event.Record) (*event.Record, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (hangingStore) StorePayload(ctx context.Context, _ *event.Record) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestNewNamesEveryMissingField(t *testing.T) {
	_, err := New(Config{})
	for _, want := range []string{"ingester", "partner event source", "account", "dead-letter queue"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to name %s", err, want)
		}
	}
}

type failingAccounts struct{}

func (failingAccounts) Record(context.Context, string, string) error {
	return errors.New("injected: account item unwritable")
}

// TestAnAccountNotRecordedFailsNoEvent: a connected account's event whose
// account cannot be recorded is stored, enqueued and deleted all the same,
// and its line says the account waits (account_record_failures).
func TestAnAccountNotRecordedFailsNoEvent(t *testing.T) {
	f := newFixture(t)
	f.h.cfg.Ingester.Accounts = &ingest.AccountRecorder{Store: failingAccounts{}}
	detail := strings.Replace(snapshot("evt_acct", "invoice.paid", false), `"id":"evt_acct"`, `"id":"evt_acct","account":"acct_1"`, 1)
	resp, _ := f.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("m1", envelope(source, account, "invoice.paid", detail))}})
	if len(resp.BatchItemFailures) != 0 || len(f.queue.sent) != 1 {
		t.Fatalf("got %d retried, %d enqueued; want the event enqueued and deleted", len(resp.BatchItemFailures), len(f.queue.sent))
	}
	lines := f.lines(t)
	if len(lines) != 1 || lines[0]["outcome"] != "stored" || lines[0]["account_record_failures"] != float64(1) || lines[0]["account_error"] == nil {
		t.Fatalf("got %v, want one stored line with the account's failure", lines)
	}
}

package processor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/poller"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// env is the processor's world on the emulator: the template's tables and
// queues, the ingest path that feeds them, and a counting effect.
type env struct {
	stack      *testenv.Stack
	events     *store.Events
	ingester   *ingest.Ingester
	reader     *mirror.Reader
	queue      string
	dlq        string
	maxReceive int
	effect     *countingEffect
	logs       *syncBuffer
}

func newEnv(t *testing.T, overrides map[string]string) *env {
	t.Helper()
	s := testenv.Provision(t, overrides)
	maxReceive := 5
	if v, ok := s.Template.Parameter("MaxReceiveCount"); ok {
		maxReceive, _ = strconv.Atoi(v)
	}
	e := &env{
		stack:      s,
		events:     &store.Events{DB: s.DynamoDB, Table: s.Table("EventsTable"), Retention: time.Hour},
		reader:     &mirror.Reader{DB: s.DynamoDB, Table: s.Table("MirrorTable")},
		queue:      s.Queue("WebhookQueue").URL,
		dlq:        s.Queue("DeadLetterQueue").URL,
		maxReceive: maxReceive,
		logs:       &syncBuffer{},
	}
	e.ingester = &ingest.Ingester{Store: e.events, Queue: &queue.Queue{Client: s.SQS, URL: e.queue}, Provider: event.ProviderStripe}
	e.effect = &countingEffect{table: s.Table("MirrorTable"), calls: map[string]int{}}
	return e
}

// processor returns a processor wired as boot wires it, with the counting
// effect registered for every type, a db of the caller's choice (nil: the
// stack's client) and retries made visible again at once.
func (e *env) processor(t *testing.T, db store.DynamoDB) *processor.Processor {
	t.Helper()
	return e.processorAt(t, db, nil)
}

// processorAt is processor with its own clock (nil: time.Now), and its
// configuration changed by opts.
func (e *env) processorAt(t *testing.T, db store.DynamoDB, now func() time.Time, opts ...func(*processor.Config)) *processor.Processor {
	t.Helper()
	if db == nil {
		db = e.stack.DynamoDB
	}
	db = strictDB{DynamoDB: db, t: t}
	var reg effect.Registry
	reg.On(effect.Func{HandlerName: "count", Fn: e.effect.handle}, "*")
	cfg := processor.Config{
		Store:           &store.Events{DB: db, Table: e.events.Table, Retention: e.events.Retention},
		Mirror:          &mirror.Mirror{Table: e.stack.Table("MirrorTable")},
		Effects:         &reg,
		Visibility:      e.stack.SQS,
		QueueURL:        e.queue,
		MaxReceiveCount: e.maxReceive,
		// Under a second: ChangeMessageVisibility(0), visible at once.
		BackoffBase: time.Millisecond,
		Logger:      slog.New(slog.NewJSONHandler(e.logs, nil)),
		Now:         now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := processor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// build returns a realistic event of eventType.
func build(t *testing.T, eventType string, o stripefixture.Options) []byte {
	t.Helper()
	body, err := stripefixture.Build(eventType, o)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// ingest puts body into the pipeline as the receiver does.
func (e *env) ingest(t *testing.T, body []byte) (event.Envelope, outcome.Outcome) {
	t.Helper()
	envl, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.ingester.Ingest(context.Background(), envl, body, event.SourceWebhook)
	if err != nil {
		t.Fatal(err)
	}
	return envl, res.Outcome
}

// store stores body's record without enqueueing it, for tests that deliver
// messages themselves.
func (e *env) store(t *testing.T, body []byte) event.Record {
	t.Helper()
	envl, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	r := event.NewRecord(event.ProviderStripe, envl, body, ingest.Hash(body), event.SourceWebhook, event.StatusReceived, time.Now())
	if _, err := e.events.Create(context.Background(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// message is the queue message of r as Lambda hands it over on its
// receives-th receive, without a receipt handle (not from a queue).
func message(r event.Record, receives int) events.SQSMessage {
	body, _ := json.Marshal(event.PointerTo(r))
	return events.SQSMessage{
		MessageId:  fmt.Sprintf("m-%s-%d", r.ID, receives),
		Body:       string(body),
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives)},
	}
}

func batch(msgs ...events.SQSMessage) events.SQSEvent { return events.SQSEvent{Records: msgs} }

// receive takes up to ten visible messages off queue, without waiting.
func (e *env) receive(t *testing.T, queue string) []sqstypes.Message {
	t.Helper()
	out, err := e.stack.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queue),
		MaxNumberOfMessages:         10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Messages
}

// lambdaEvent is the SQS event Lambda builds for msgs.
func (e *env) lambdaEvent(msgs []sqstypes.Message) events.SQSEvent {
	return (&poller.Poller{QueueARN: e.stack.Queue("WebhookQueue").ARN}).Event(msgs)
}

// settle deletes what Lambda's event source mapping deletes after resp.
func (e *env) settle(t *testing.T, msgs []sqstypes.Message, resp events.SQSEventResponse) {
	t.Helper()
	toDelete, ok := poller.Settle(msgs, resp, true)
	if !ok {
		t.Fatalf("malformed batchItemFailures: %+v", resp)
	}
	for _, m := range toDelete {
		if _, err := e.stack.SQS.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(e.queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
}

// drain runs the queue through p as Lambda's event source mapping would,
// until a receive finds nothing visible, and returns the number of
// invocations.
func (e *env) drain(t *testing.T, p *processor.Processor) int {
	t.Helper()
	invocations := 0
	for ; invocations < 50; invocations++ {
		msgs := e.receive(t, e.queue)
		if len(msgs) == 0 {
			return invocations
		}
		resp, err := p.Handle(context.Background(), e.lambdaEvent(msgs))
		if err != nil {
			t.Fatalf("Handle: %v", err)
		}
		e.settle(t, msgs, resp)
	}
	t.Fatal("the queue never drained")
	return invocations
}

// visible makes a received message visible again at once, as the end of
// its visibility timeout would.
func (e *env) visible(t *testing.T, m sqstypes.Message) {
	t.Helper()
	if _, err := e.stack.SQS.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(e.queue), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) record(t *testing.T, id string) event.Record {
	t.Helper()
	r, err := e.events.Get(context.Background(), event.ProviderStripe, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// countingEffect is a team's effect: it counts its calls per event, can be
// told to fail, and writes one item per event in the processor's
// transaction, whose counter shows how many times that write committed.
type countingEffect struct {
	table string
	mu    sync.Mutex
	calls map[string]int
	order map[string][]string // event ids by object, in call order
	keys  map[string][]string // idempotency keys by event, in call order
	// fail, when set, decides the error of the n-th call (from 1) for an event.
	fail func(r event.Record, n int) error
}

func (c *countingEffect) handle(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
	c.mu.Lock()
	c.calls[ev.Record.ID]++
	n := c.calls[ev.Record.ID]
	if c.order == nil {
		c.order, c.keys = map[string][]string{}, map[string][]string{}
	}
	c.keys[ev.Record.ID] = append(c.keys[ev.Record.ID], ev.IdempotencyKey)
	c.order[ev.Record.ObjectID] = append(c.order[ev.Record.ObjectID], ev.Record.ID)
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		if err := fail(ev.Record, n); err != nil {
			return nil, err
		}
	}
	return []types.TransactWriteItem{{Update: &types.Update{
		TableName:        aws.String(c.table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "effect#" + ev.Record.ID}},
		UpdateExpression: aws.String("ADD commits :one SET idempotency_key = :k"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":k":   &types.AttributeValueMemberS{Value: ev.IdempotencyKey},
		},
	}}}, nil
}

func (c *countingEffect) callsOf(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

// commits reads how many times the effect's write for event id committed.
func (e *env) commits(t *testing.T, id string) int {
	t.Helper()
	out, err := e.stack.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName:      aws.String(e.stack.Table("MirrorTable")),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "effect#" + id}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	v, ok := out.Item["commits"].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(v.Value)
	return n
}

// exactlyOnce checks that event id's effect ran once and committed once.
func (e *env) exactlyOnce(t *testing.T, id string) {
	t.Helper()
	if calls, commits := e.effect.callsOf(id), e.commits(t, id); calls != 1 || commits != 1 {
		t.Errorf("effect of %s: %d calls, %d commits; want exactly one of each", id, calls, commits)
	}
}

// syncBuffer collects log lines from concurrent goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the log lines whose fields equal match.
func (b *syncBuffer) lines(match map[string]string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(b.buf.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		ok := true
		for k, v := range match {
			if fmt.Sprint(m[k]) != v {
				ok = false
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// strictDB forwards to DynamoDB after checking each write request the way
// DynamoDB does and moto, inside transactions, does not: no empty
// ExpressionAttributeNames or ExpressionAttributeValues map, and no name or
// value that the expressions do not use. A violation fails the test.
type strictDB struct {
	store.DynamoDB
	t testing.TB
}

func (s strictDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.check("UpdateItem", in.ExpressionAttributeNames, in.ExpressionAttributeValues, aws.ToString(in.UpdateExpression), aws.ToString(in.ConditionExpression))
	return s.DynamoDB.UpdateItem(ctx, in, optFns...)
}

func (s strictDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.check("PutItem", in.ExpressionAttributeNames, in.ExpressionAttributeValues, aws.ToString(in.ConditionExpression))
	return s.DynamoDB.PutItem(ctx, in, optFns...)
}

func (s strictDB) TransactWriteItems(
	ctx context.Context,
	in *dynamodb.TransactWriteItemsInput,
	optFns ...func(*dynamodb.Options),
) (*dynamodb.TransactWriteItemsOutput, error) {
	for i, it := range in.TransactItems {
		op := fmt.Sprintf("TransactWriteItems[%d]", i)
		switch {
		case it.Put != nil:
			s.check(op+".Put", it.Put.ExpressionAttributeNames, it.Put.ExpressionAttributeValues, aws.ToString(it.Put.ConditionExpression))
		case it.Update != nil:
			s.check(
				op+".Update",
				it.Update.ExpressionAttributeNames,
				it.Update.ExpressionAttributeValues,
				aws.ToString(it.Update.UpdateExpression),
				aws.ToString(it.Update.ConditionExpression),
			)
		case it.ConditionCheck != nil:
			s.check(
				op+".ConditionCheck",
				it.ConditionCheck.ExpressionAttributeNames,
				it.ConditionCheck.ExpressionAttributeValues,
				aws.ToString(it.ConditionCheck.ConditionExpression),
			)
		case it.Delete != nil:
			s.check(op+".Delete", it.Delete.ExpressionAttributeNames, it.Delete.ExpressionAttributeValues, aws.ToString(it.Delete.ConditionExpression))
		}
	}
	return s.DynamoDB.TransactWriteItems(ctx, in, optFns...)
}

func (s strictDB) check(op string, names map[string]string, values map[string]types.AttributeValue, exprs ...string) {
	all := strings.Join(exprs, " ")
	if names != nil && len(names) == 0 {
		s.t.Errorf("%s: empty ExpressionAttributeNames (DynamoDB: must not be empty)", op)
	}
	if values != nil && len(values) == 0 {
		s.t.Errorf("%s: empty ExpressionAttributeValues (DynamoDB: must not be empty)", op)
	}
	used := func(placeholder string) bool {
		return regexp.MustCompile(regexp.QuoteMeta(placeholder) + `($|[^A-Za-z0-9_])`).MatchString(all)
	}
	for k := range names {
		if !used(k) {
			s.t.Errorf("%s: ExpressionAttributeNames %s unused in %q", op, k, all)
		}
	}
	for k := range values {
		if !used(k) {
			s.t.Errorf("%s: ExpressionAttributeValues %s unused in %q", op, k, all)
		}
	}
}

package cost

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
)

// Call is one AWS request a function made, as the recorder saw it.
type Call struct {
	// Label is the meter's label when the call was made (the scenario).
	Label     string
	Function  string
	Service   string // the SDK's service id: "DynamoDB", "SQS", ...
	Operation string
	// Input is the request's input, as the SDK took it.
	Input any
	// Err is the call's error, "" when it succeeded.
	Err string
	// Writes are the DynamoDB item writes of the call, priced.
	Writes []RecordedWrite
	// Reads are the DynamoDB reads of the call, priced.
	Reads []RecordedRead
	// Chunks counts the 64 KB chunks of the SQS messages the call sent,
	// the unit SQS bills a request by.
	Chunks int
	// Consumed is what the answer said the call consumed, by table and
	// index, when the recorder asked for it (AskConsumed) and the call
	// succeeded: an error (a failed condition, a cancelled transaction)
	// carries no ConsumedCapacity, though DynamoDB charges for it.
	Consumed []Capacity
}

// Capacity is what DynamoDB's answer to one call reported it consumed on
// one table or index (ReturnConsumedCapacity=INDEXES).
type Capacity struct {
	Target string // "EventsTable", "EventsTable/pending"
	Units  float64
}

// WriteUnits is the call's write units, tables and indexes.
func (c Call) WriteUnits() int {
	n := 0
	for _, w := range c.Writes {
		n += w.Charge.Units()
	}
	return n
}

// ReadUnits is the call's read units.
func (c Call) ReadUnits() float64 {
	var n float64
	for _, r := range c.Reads {
		n += r.Units
	}
	return n
}

// RecordedWrite is one item write of a call.
type RecordedWrite struct {
	Table string // logical id
	Write
	Charge Charge
}

// RecordedRead is one priced read: an item of a GetItem or BatchGetItem,
// or a whole Query or Scan.
type RecordedRead struct {
	Target string // "EventsTable", "EventsTable/pending"
	// Key is the partition value of the item read ("" for a Query or
	// Scan), so a read can be attributed to the event whose item it was.
	Key         string
	Size        int
	Consistency Consistency
	Units       float64
}

// Recorder records the AWS requests made through the configurations it
// instruments, and prices their DynamoDB writes and reads.
type Recorder struct {
	schema  *Schema
	db      *dynamodb.Client  // unrecorded: reads the images
	tables  map[string]*Table // by physical name
	names   map[string]string // logical id → physical name
	scratch map[string]string // logical id → scratch table
	// consumed: every recorded DynamoDB request asks for its
	// ConsumedCapacity (AskConsumed).
	consumed bool
	mu       sync.Mutex               // one recorded DynamoDB request at a time
	logMu    sync.Mutex               // guards the fields below
	calls    []Call                   //
	label    string                   //
	spent    map[string]time.Duration // per function: time in the recorder's own requests
}

// NewRecorder returns a recorder for the tables of schema, provisioned
// under the physical names tables (logical id → name). It creates a scratch
// table beside each (same key schema, no index) for the images of writes
// that did not apply. cfg must not be instrumented.
func NewRecorder(ctx context.Context, cfg aws.Config, schema *Schema, tables map[string]string) (*Recorder, error) {
	r := &Recorder{schema: schema, db: dynamodb.NewFromConfig(cfg), tables: map[string]*Table{},
		names: map[string]string{}, scratch: map[string]string{}, spent: map[string]time.Duration{}}
	for logical, name := range tables {
		t, ok := schema.Tables[logical]
		if !ok {
			continue
		}
		r.tables[name] = t
		r.names[logical] = name
		desc, err := r.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("cost: describe %s: %w", name, err)
		}
		in := &dynamodb.CreateTableInput{
			TableName:   aws.String(name + "-costscratch"),
			KeySchema:   desc.Table.KeySchema,
			BillingMode: types.BillingModePayPerRequest,
		}
		for _, d := range desc.Table.AttributeDefinitions {
			if a := aws.ToString(d.AttributeName); a == t.Hash || a == t.Range {
				in.AttributeDefinitions = append(in.AttributeDefinitions, d)
			}
		}
		_, err = r.db.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return nil, fmt.Errorf("cost: create scratch table for %s: %w", logical, err)
		}
		r.scratch[logical] = aws.ToString(in.TableName)
	}
	// DynamoDB creates a table asynchronously (an emulator at once).
	for _, name := range r.scratch {
		if err := dynamodb.NewTableExistsWaiter(r.db).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 2*time.Minute); err != nil {
			return nil, fmt.Errorf("cost: wait for scratch table %s: %w", name, err)
		}
	}
	return r, nil
}

// AskConsumed makes every DynamoDB request recorded from now on ask for
// the capacity it consumes, table and indexes (ReturnConsumedCapacity
// INDEXES, set on a copy of the request: the code's own input is left as
// it was), and records the answer in Call.Consumed beside the meter's own
// pricing. It changes what the requests return, never what they write.
func (r *Recorder) AskConsumed() { r.consumed = true }

// SetLabel labels the calls recorded from now on.
func (r *Recorder) SetLabel(label string) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	r.label = label
}

// Calls returns the calls recorded under label ("" for all).
func (r *Recorder) Calls(label string) []Call {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if label == "" || c.Label == label {
			out = append(out, c)
		}
	}
	return out
}

// Spent is the time the recorder's own requests took inside function's
// calls so far: the meter subtracts it from the functions' durations.
func (r *Recorder) Spent(function string) time.Duration {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.spent[function]
}

func (r *Recorder) add(c Call, spent time.Duration) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	c.Label = r.label
	r.calls = append(r.calls, c)
	r.spent[c.Function] += spent
}

// Instrument returns cfg with every request recorded as made by function.
func (r *Recorder) Instrument(cfg aws.Config, function string) aws.Config {
	cfg = cfg.Copy()
	cfg.APIOptions = append(cfg.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("costRecorder", func(ctx context.Context, in middleware.InitializeInput,
			next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			c := Call{Function: function, Service: awsmiddleware.GetServiceID(ctx), Operation: awsmiddleware.GetOperationName(ctx), Input: in.Parameters}
			if c.Service != "DynamoDB" {
				out, md, err := next.HandleInitialize(ctx, in)
				c.Chunks = sqsChunks(in.Parameters)
				if err != nil {
					c.Err = err.Error()
				}
				r.add(c, 0)
				return out, md, err
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			start := time.Now()
			var inner time.Duration
			call := func() (middleware.InitializeOutput, middleware.Metadata, error) {
				t := time.Now()
				defer func() { inner += time.Since(t) }()
				return next.HandleInitialize(ctx, in)
			}
			if r.consumed {
				in.Parameters = withConsumedCapacity(in.Parameters)
			}
			out, md, err := r.dynamo(ctx, &c, in.Parameters, call)
			if err != nil {
				c.Err = err.Error()
			} else if r.consumed {
				c.Consumed = r.consumedOf(out.Result)
			}
			r.add(c, time.Since(start)-inner)
			return out, md, err
		}), middleware.After)
	})
	return cfg
}

// reads prices a read request from its answer.
func (r *Recorder) reads(ctx context.Context, params, result any) []RecordedRead {
	consistency := func(b *bool) Consistency {
		if aws.ToBool(b) {
			return Strong
		}
		return Eventual
	}
	item := func(name string, key Item, c Consistency) RecordedRead {
		t := r.tables[name]
		full := r.get(ctx, name, key)
		size := ItemSize(full)
		return RecordedRead{Target: t.Target(""), Key: PartitionValue(t.Hash, key), Size: size, Consistency: c, Units: ReadUnits(size, c)}
	}
	var out []RecordedRead
	switch p := params.(type) {
	case *dynamodb.GetItemInput:
		if r.tables[aws.ToString(p.TableName)] != nil {
			out = append(out, item(aws.ToString(p.TableName), p.Key, consistency(p.ConsistentRead)))
		}
	case *dynamodb.BatchGetItemInput:
		res, _ := result.(*dynamodb.BatchGetItemOutput)
		for name, ka := range p.RequestItems {
			if r.tables[name] == nil {
				continue
			}
			t := r.tables[name]
			left := map[string]bool{}
			if res != nil {
				for _, k := range res.UnprocessedKeys[name].Keys {
					left[keyID(t, k)] = true
				}
			}
			for _, k := range ka.Keys {
				if !left[keyID(t, k)] {
					out = append(out, item(name, k, consistency(ka.ConsistentRead)))
				}
			}
		}
	case *dynamodb.TransactGetItemsInput:
		for _, g := range p.TransactItems {
			if g.Get != nil && r.tables[aws.ToString(g.Get.TableName)] != nil {
				out = append(out, item(aws.ToString(g.Get.TableName), g.Get.Key, Transactional))
			}
		}
	case *dynamodb.QueryInput:
		if t := r.tables[aws.ToString(p.TableName)]; t != nil {
			// The same query without its projection, filter or count: what
			// DynamoDB read, and charged for.
			q := *p
			q.ProjectionExpression, q.FilterExpression, q.Select, q.AttributesToGet = nil, nil, "", nil
			q.ExpressionAttributeNames, q.ExpressionAttributeValues = used(p.KeyConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues)
			size := 0
			if res, err := r.db.Query(ctx, &q); err == nil {
				for _, it := range res.Items {
					size += ItemSize(it)
				}
			}
			c := consistency(p.ConsistentRead)
			out = append(out, RecordedRead{Target: t.Target(aws.ToString(p.IndexName)), Size: size, Consistency: c, Units: ReadUnits(size, c)})
		}
	case *dynamodb.ScanInput:
		if t := r.tables[aws.ToString(p.TableName)]; t != nil {
			q := *p
			q.ProjectionExpression, q.FilterExpression, q.Select, q.AttributesToGet = nil, nil, "", nil
			q.ExpressionAttributeNames, q.ExpressionAttributeValues = nil, nil
			size := 0
			if res, err := r.db.Scan(ctx, &q); err == nil {
				for _, it := range res.Items {
					size += ItemSize(it)
				}
			}
			c := consistency(p.ConsistentRead)
			out = append(out, RecordedRead{Target: t.Target(aws.ToString(p.IndexName)), Size: size, Consistency: c, Units: ReadUnits(size, c)})
		}
	}
	return out
}

// used keeps the placeholders an expression uses.
func used(expr *string, names map[string]string, values map[string]types.AttributeValue) (map[string]string, map[string]types.AttributeValue) {
	e := aws.ToString(expr)
	var n map[string]string
	var v map[string]types.AttributeValue
	for _, p := range namePlaceholder.FindAllString(e, -1) {
		if x, ok := names[p]; ok {
			if n == nil {
				n = map[string]string{}
			}
			n[p] = x
		}
	}
	for _, p := range valuePlaceholder.FindAllString(e, -1) {
		if x, ok := values[p]; ok {
			if v == nil {
				v = map[string]types.AttributeValue{}
			}
			v[p] = x
		}
	}
	return n, v
}

// sqsChunks counts the 64 KB chunks of the messages an SQS request sends.
func sqsChunks(params any) int {
	chunks := func(body *string) int { return max(1, (len(aws.ToString(body))+65535)/65536) }
	switch p := params.(type) {
	case *sqs.SendMessageInput:
		return chunks(p.MessageBody)
	case *sqs.SendMessageBatchInput:
		n := 0
		for _, e := range p.Entries {
			n += len(aws.ToString(e.MessageBody))
		}
		return max(1, (n+65535)/65536)
	}
	return 1
}

// withConsumedCapacity returns a copy of a DynamoDB request that asks for
// the capacity it consumes on its table and each index; a request without
// the field is returned as it is.
func withConsumedCapacity(params any) any {
	v := reflect.ValueOf(params)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return params
	}
	f := v.Elem().FieldByName("ReturnConsumedCapacity")
	if !f.IsValid() || f.Type() != reflect.TypeOf(types.ReturnConsumedCapacityIndexes) {
		return params
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	cp.Elem().FieldByName("ReturnConsumedCapacity").Set(reflect.ValueOf(types.ReturnConsumedCapacityIndexes))
	return cp.Interface()
}

// consumedOf reads a DynamoDB answer's ConsumedCapacity (one, or one per
// table for a batch or a transaction), by target. A table reported without
// its parts (TOTAL) counts its whole on the table.
func (r *Recorder) consumedOf(result any) []Capacity {
	v := reflect.ValueOf(result)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("ConsumedCapacity")
	if !f.IsValid() {
		return nil
	}
	var ccs []types.ConsumedCapacity
	switch x := f.Interface().(type) {
	case *types.ConsumedCapacity:
		if x != nil {
			ccs = append(ccs, *x)
		}
	case []types.ConsumedCapacity:
		ccs = x
	}
	var out []Capacity
	for _, cc := range ccs {
		t := r.tables[aws.ToString(cc.TableName)]
		if t == nil {
			continue
		}
		if cc.Table == nil && len(cc.GlobalSecondaryIndexes) == 0 && len(cc.LocalSecondaryIndexes) == 0 {
			out = append(out, Capacity{Target: t.Target(""), Units: aws.ToFloat64(cc.CapacityUnits)})
			continue
		}
		if cc.Table != nil {
			out = append(out, Capacity{Target: t.Target(""), Units: aws.ToFloat64(cc.Table.CapacityUnits)})
		}
		for _, ixs := range []map[string]types.Capacity{cc.GlobalSecondaryIndexes, cc.LocalSecondaryIndexes} {
			for name, c := range ixs {
				out = append(out, Capacity{Target: t.Target(name), Units: aws.ToFloat64(c.CapacityUnits)})
			}
		}
	}
	return out
}

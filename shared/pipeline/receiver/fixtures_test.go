package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// Realistic events of the sizes the benchmarks measure, built from Stripe's
// own sample objects and pretty-printed as Stripe sends them.

// smallEvent is a payment_intent.succeeded of about 2.6 KB: the sample
// object with the metadata, description and receipt e-mail a shop sets.
func smallEvent(tb testing.TB) []byte {
	tb.Helper()
	b, err := stripefixture.Build("payment_intent.succeeded", stripefixture.Options{
		ID: "evt_3PgafyB7WZ01zgkW0lVz9Sfm", ObjectID: "pi_3PgafyB7WZ01zgkW0d8Mm1Xo", Created: now.Unix() - 5,
		Customer: "cus_QXg1o8vcGmoR32", Status: "succeeded",
		Set: map[string]any{
			"amount_received": 1099,
			"description":     "Order #10482: Pro plan, annual",
			"receipt_email":   "jenny.rosen@example.com",
			"latest_charge":   "ch_3PgafyB7WZ01zgkW0NgbXSqD",
			"payment_method":  "pm_1PgafxB7WZ01zgkWJl9hwlCF",
			"shipping": map[string]any{
				"name": "Jenny Rosen", "phone": nil, "carrier": nil, "tracking_number": nil,
				"address": map[string]any{
					"line1":       "510 Townsend St",
					"line2":       nil,
					"city":        "San Francisco",
					"state":       "CA",
					"postal_code": "94103",
					"country":     "US",
				},
			},
			"metadata": map[string]any{
				"order_id": "10482", "plan": "pro_annual", "seats": "12",
			},
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// largeEvent is an invoice.paid of about 16 KB: an invoice with six line
// items, the common reason an event is large.
func largeEvent(tb testing.TB) []byte { return invoiceEvent(tb, 6) }

// hugeEvent is an invoice.paid of about 64 KB (thirty-one line items).
func hugeEvent(tb testing.TB) []byte { return invoiceEvent(tb, 31) }

// invoiceEvent is an invoice.paid whose invoice has n line items.
func invoiceEvent(tb testing.TB, n int) []byte {
	tb.Helper()
	b, err := stripefixture.Build("invoice.paid", stripefixture.Options{
		ID: "evt_1PgcEyB7WZ01zgkWxKf0aRzN", ObjectID: "in_1Pgc6tB7WZ01zgkWu9fdqL6I", Created: now.Unix() - 5,
		Customer: "cus_QXg1o8vcGmoR32",
	})
	if err != nil {
		tb.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		tb.Fatal(err)
	}
	inv := ev["data"].(map[string]any)["object"].(map[string]any)
	lines := inv["lines"].(map[string]any)
	sample := lines["data"].([]any)[0].(map[string]any)
	var items []any
	for i := range n {
		item := map[string]any{}
		for k, v := range sample {
			item[k] = v
		}
		item["id"] = fmt.Sprintf("il_1Pgc6sB7WZ01zgkWFnxLr%03d", i)
		item["amount"] = 1000 + 250*i
		item["description"] = fmt.Sprintf("Seat add-on %d (prorated)", i+1)
		items = append(items, item)
	}
	lines["data"] = items
	lines["total_count"] = len(items)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// memDynamoDB is a DynamoDB table in memory with PutItem's conditional
// semantics: a put on an existing key fails the way DynamoDB's does under
// attribute_not_exists with ALL_OLD, returning the stored item. Methods the
// receiver must never call panic through the nil embedded interface.
type memDynamoDB struct {
	store.DynamoDB
	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue
	err   error
	puts  int
}

func (m *memDynamoDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.err != nil {
		return nil, m.err
	}
	pk := in.Item["pk"].(*types.AttributeValueMemberS).Value
	if old, ok := m.items[pk]; ok {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: old}
	}
	if m.items == nil {
		m.items = map[string]map[string]types.AttributeValue{}
	}
	m.items[pk] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

// memReader reads a memDynamoDB's items by key, for a test's own checks
// of what the receiver stored (the receiver itself never reads).
type memReader struct{ *memDynamoDB }

func (m memReader) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: m.items[in.Key["pk"].(*types.AttributeValueMemberS).Value]}, nil
}

// memSQS records the messages sent.
type memSQS struct {
	mu   sync.Mutex
	err  error
	sent []string
}

func (m *memSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	m.sent = append(m.sent, aws.ToString(in.MessageBody))
	return &sqs.SendMessageOutput{MessageId: aws.String("m")}, nil
}

// cannedDynamoDB and cannedSQS answer every call with the same canned
// output, as fast as a fake can: the benchmarks measure our compute (item and
// message marshaling included), not a fake's bookkeeping.
type cannedDynamoDB struct{ store.DynamoDB }

var cannedPut = &dynamodb.PutItemOutput{}

func (cannedDynamoDB) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return cannedPut, nil
}

type cannedSQS struct{}

var cannedSend = &sqs.SendMessageOutput{MessageId: aws.String("m")}

func (cannedSQS) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return cannedSend, nil
}

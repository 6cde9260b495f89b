package store_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// TestErasePayloadKeepsTheRecordForIdempotency erases the payload of a
// processed record and of a large (gzipped) one: the payload is gone from
// the item, the record stays with its status and hash, a duplicate
// delivery is still recognised as one, and erasing again says so. A
// record still pending keeps its payload.
func TestErasePayloadKeepsTheRecordForIdempotency(t *testing.T) {
	ev, s := newEvents(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	settle := func(r event.Record) {
		t.Helper()
		if _, err := ev.Claim(ctx, r.Provider, r.ID, "w1", now, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := ev.Complete(ctx, r, "w1", now, store.Completion{Outcome: outcome.Applied}); err != nil {
			t.Fatal(err)
		}
	}
	small := record("evt_erase_small", now)
	large := record("evt_erase_large", now)
	large.Payload = bytes.Repeat([]byte(`{"email":"jane@example.com"},`), 2000) // gzipped when stored
	pending := record("evt_erase_pending", now)
	for _, r := range []*event.Record{&small, &large, &pending} {
		if _, err := ev.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	settle(small)
	settle(large)

	for _, r := range []event.Record{small, large} {
		already, err := ev.ErasePayload(ctx, r.Provider, r.ID, now)
		if err != nil || already {
			t.Fatalf("%s: ErasePayload: %v, %v; want erased now", r.ID, already, err)
		}
		out, err := s.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(ev.Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: event.Key(r.Provider, r.ID)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"payload", "payload_gzip"} {
			if _, ok := out.Item[name]; ok {
				t.Errorf("%s: item keeps %s", r.ID, name)
			}
		}
		if _, ok := out.Item["payload_erased"]; !ok {
			t.Errorf("%s: item not marked payload_erased", r.ID)
		}
		got, err := ev.Get(ctx, r.Provider, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != event.StatusProcessed || got.PayloadHash != r.PayloadHash || len(got.Payload) != 0 || got.PayloadOmitted {
			t.Errorf("%s after erasure: status %s hash %q payload %d bytes omitted %v; want processed, the hash, no payload",
				r.ID, got.Status, got.PayloadHash, len(got.Payload), got.PayloadOmitted)
		}
		// The payload's own item is gone, not only flagged.
		if p, err := ev.Payload(ctx, got); !errors.Is(err, store.ErrNoPayload) {
			t.Errorf("%s after erasure: payload item read %d bytes, %v; want ErrNoPayload", r.ID, len(p), err)
		}
		// The same event delivered again is a duplicate of a processed
		// record: the receiver answers 2xx and nothing runs again.
		dup := record(r.ID, now.Add(time.Hour))
		existing, err := ev.Create(ctx, &dup)
		if err != nil || existing == nil || existing.Status != event.StatusProcessed {
			t.Errorf("%s redelivered: got %+v, %v; want the processed record", r.ID, existing, err)
		}
		if already, err := ev.ErasePayload(ctx, r.Provider, r.ID, now); err != nil || !already {
			t.Errorf("%s erased again: %v, %v; want already erased", r.ID, already, err)
		}
	}

	_, err := ev.ErasePayload(ctx, pending.Provider, pending.ID, now)
	var unsettled *store.UnsettledError
	if !errors.As(err, &unsettled) || unsettled.Current.Status != event.StatusReceived {
		t.Errorf("pending record: got %v, want an *UnsettledError with status received", err)
	}
	if got, _ := ev.Get(ctx, pending.Provider, pending.ID); string(got.Payload) != string(pending.Payload) {
		t.Errorf("pending record's payload: got %q, want it kept", got.Payload)
	}
	if _, err := ev.ErasePayload(ctx, event.ProviderStripe, "evt_never", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown record: got %v, want ErrNotFound", err)
	}
}

// TestMentioningFindsEveryPayloadThatNamesTheCustomer: plain and gzipped
// payloads that name the customer are found, those of another customer
// whose id merely starts the same are not, and payloads are not returned.
func TestMentioningFindsEveryPayloadThatNamesTheCustomer(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	put := func(id string, created int64, payload []byte) {
		t.Helper()
		r := record(id, now)
		r.Created, r.Payload = created, payload
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	put("evt_m_charge", 30, []byte(`{"data":{"object":{"object":"charge","customer":"cus_A","billing_details":{"email":"a@example.com"}}}}`))
	put("evt_m_big", 10, append([]byte(`{"data":{"object":{"customer":"cus_A","lines":[`), bytes.Repeat([]byte(`{"x":"line item"},`), 2000)...)) // gzipped
	put("evt_m_other", 20, []byte(`{"data":{"object":{"customer":"cus_AB"}}}`))
	put("evt_m_none", 40, []byte(`{"data":{"object":{"object":"price"}}}`))

	got, err := ev.Mentioning(ctx, []byte(`"cus_A"`))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
		if r.Payload != nil || r.Status != event.StatusReceived {
			t.Errorf("%s: payload %d bytes, status %s; want no payload and the record's status", r.ID, len(r.Payload), r.Status)
		}
	}
	if want := "evt_m_big evt_m_charge"; strings.Join(ids, " ") != want {
		t.Errorf("Mentioning(cus_A): got %v, want %s (oldest first)", ids, want)
	}
}

package store_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// bomb gzips n zero bytes (n a whole number of MB) into a few hundred
// bytes per MB that fit in an item: one gzip member of 1 MB of zeros,
// repeated, as gzip readers read concatenated members as one stream.
func bomb(t testing.TB, n int) []byte {
	t.Helper()
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	if _, err := zw.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(member.Bytes(), n>>20)
}

// payloadDB answers GetItem with the record item for the record's key and
// a payload item holding payload for any other key.
type payloadDB struct {
	store.DynamoDB
	payload []byte
}

func (db payloadDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if in.Key["pk"].(*types.AttributeValueMemberS).Value == "stripe#evt_dup" {
		return &dynamodb.GetItemOutput{Item: item(event.StatusReceived, nil)}, nil
	}
	return &dynamodb.GetItemOutput{Item: map[string]types.AttributeValue{
		"pk":      &types.AttributeValueMemberS{Value: "payload#stripe#evt_dup"},
		"payload": &types.AttributeValueMemberB{Value: db.payload},
	}}, nil
}

// get reads evt_dup and its stored payload, as Get does for every reader.
func get(payload []byte) (event.Record, error) {
	ev := &store.Events{DB: payloadDB{payload: payload}, Table: "events"}
	return ev.Get(context.Background(), event.ProviderStripe, "evt_dup")
}

func TestGetBoundsTheInflatedPayload(t *testing.T) {
	t.Run("a gzip bomb", func(t *testing.T) {
		const inflated = 256 << 20
		gz := bomb(t, inflated)
		if len(gz) > 380<<10 {
			t.Fatalf("the bomb is %d bytes, too large for an item", len(gz))
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := get(gz)
		runtime.ReadMemStats(&after)
		var pe *store.PayloadError
		if !errors.As(err, &pe) {
			t.Fatalf("got %v, want a *store.PayloadError", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "evt_dup") || !strings.Contains(msg, strconv.Itoa(store.MaxPayloadBytes)) {
			t.Errorf("error %q: want the event id and the limit", msg)
		}
		if pe.Record.ID != "evt_dup" || pe.Record.Status != event.StatusReceived || r.Status != event.StatusReceived || r.Payload != nil {
			t.Errorf("record: got %+v; want every field but the payload", pe.Record)
		}
		// Other tests allocate meanwhile: the bound is loose, and still a
		// quarter of what reading the whole bomb takes.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > inflated/4 {
			t.Errorf(
				"decoding allocated %d bytes, want far less than the %d bytes the bomb inflates to (the limit is %d)",
				alloc,
				inflated,
				store.MaxPayloadBytes,
			)
		}
	})
	t.Run("at the limit", func(t *testing.T) {
		r, err := get(bomb(t, store.MaxPayloadBytes))
		if err != nil || len(r.Payload) != store.MaxPayloadBytes {
			t.Errorf("got %d bytes, %v; want the %d bytes stored", len(r.Payload), err, store.MaxPayloadBytes)
		}
	})
	t.Run("damaged", func(t *testing.T) {
		r, err := get([]byte("not gzip"))
		var pe *store.PayloadError
		if !errors.As(err, &pe) || r.Status != event.StatusReceived {
			t.Errorf("got %v (status %q), want a *store.PayloadError and the record", err, r.Status)
		}
	})
}

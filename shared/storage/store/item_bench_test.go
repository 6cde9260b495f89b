package store

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// reflectedItem is a new record's item as attributevalue would marshal it:
// the same attributes, for BenchmarkNewItem.
type reflectedItem struct {
	PK          string `dynamodbav:"pk"`
	Provider    string `dynamodbav:"provider"`
	ID          string `dynamodbav:"id"`
	Type        string `dynamodbav:"type"`
	Created     int64  `dynamodbav:"created"`
	Livemode    bool   `dynamodbav:"livemode"`
	Status      string `dynamodbav:"status"`
	StatusAt    int64  `dynamodbav:"status_at"`
	DayKey      string `dynamodbav:"day_key"`
	Source      string `dynamodbav:"source"`
	PayloadHash string `dynamodbav:"payload_hash"`
	ReceivedAt  int64  `dynamodbav:"received_at"`
	Attempts    int    `dynamodbav:"attempts"`
	ExpiresAt   int64  `dynamodbav:"expires_at,omitempty"`
	Lane        string `dynamodbav:"lane,omitempty"`
	Outcome     string `dynamodbav:"outcome,omitempty"`
	APIVersion  string `dynamodbav:"api_version,omitempty"`
	Account     string `dynamodbav:"account,omitempty"`
	ObjectID    string `dynamodbav:"object_id,omitempty"`
	ObjectType  string `dynamodbav:"object_type,omitempty"`
}

// BenchmarkNewItem measures building a new record's item (everything but
// its payload, which has an item of its own) by hand, as every delivery
// does, beside attributevalue's reflection over a struct with the same
// attributes: the measured reason package ddbattr gives for building hot
// items by hand.
func BenchmarkNewItem(b *testing.B) {
	now := time.Now()
	payload := make([]byte, 2600)
	rec := event.Record{
		Provider: event.ProviderStripe, ID: "evt_1NG8Du2eZvKYlo2CUI79vXWy", Type: "customer.updated", Created: now.Unix(),
		APIVersion: "2023-10-16", ObjectID: "cus_NffrFeUfNV2Hib", ObjectType: "customer",
		Status: event.StatusReceived, StatusAt: now, Source: event.SourceWebhook, PayloadHash: "sha256:0123456789abcdef",
		ReceivedAt: now, Payload: payload,
	}
	e := &Events{Retention: 90 * 24 * time.Hour}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := rec
			_ = e.marshalRecord(&r)
		}
	})
	b.Run("attributevalue", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := rec
			it := reflectedItem{
				PK: event.Key(r.Provider, r.ID), Provider: r.Provider, ID: r.ID, Type: r.Type, Created: r.Created,
				Livemode: r.Livemode, Status: string(r.Status), StatusAt: r.StatusAt.UnixMilli(),
				DayKey: dayKey(r.Provider, r.ReceivedAt, shard(r.ID)), Source: string(r.Source), PayloadHash: r.PayloadHash,
				ReceivedAt: r.ReceivedAt.UnixMilli(), Attempts: r.Attempts, ExpiresAt: r.ReceivedAt.Add(e.Retention).Unix(),
				Lane: laneKey(r.Provider, LanePending, shard(r.ID)), APIVersion: r.APIVersion, ObjectID: r.ObjectID, ObjectType: r.ObjectType,
			}
			if _, err := attributevalue.MarshalMap(it); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// itemSize is an item's size as DynamoDB bills it: attribute names and
// values (strings and binary by their bytes, numbers about 1 byte per 2
// digits plus 1, booleans 1).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name)
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(x.Value)
		case *types.AttributeValueMemberB:
			n += len(x.Value)
		case *types.AttributeValueMemberN:
			n += (len(strings.Trim(x.Value, "-0"))+1)/2 + 1
		default:
			n++
		}
	}
	return n
}

// customerUpdated is a 2.6 KB customer.updated, the cost meter's event: the
// sample customer with the contact details a SaaS keeps.
func customerUpdated(t *testing.T, id string) event.Record {
	t.Helper()
	addr := map[string]any{"line1": "510 Townsend St", "line2": "Floor 3", "city": "San Francisco", "state": "CA", "postal_code": "94103", "country": "US"}
	body, err := stripefixture.Build("customer.updated", stripefixture.Options{ID: id, Customer: "cus_" + strings.TrimPrefix(id, "evt_"), Set: map[string]any{
		"name": "Jenny Rosen", "email": "jenny.rosen@example.com", "phone": "+14155550123", "description": "Pro plan, annual billing, 12 seats",
		"address": addr, "shipping": map[string]any{"name": "Jenny Rosen", "phone": "+14155550123", "address": addr},
		"preferred_locales": []any{"en-US"},
		"invoice_settings": map[string]any{
			"custom_fields":          []any{map[string]any{"name": "VAT", "value": "US123456789"}},
			"default_payment_method": "pm_1PgafxB7WZ01zgkWJl9hwlCF", "footer": "Thank you for your business.",
			"rendering_options": map[string]any{"amount_tax_display": nil, "template": nil},
		},
		"metadata": map[string]any{"account_id": "acct_7f3a9c", "plan": "pro_annual", "seats": "12", "crm_id": "0015g00000XyZ12AAB", "region": "us-west",
			"signup_source": "partner_referral", "cost_center": "eng-platform", "billing_contact": "finance@example.com", "tax_status": "exempt_pending"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	return event.NewRecord(event.ProviderStripe, env, body, ingest.Hash(body), event.SourceWebhook, event.StatusReceived, time.Now())
}

// TestEveryTransitionRewritesLessThanOneWriteUnit: a 2.6 KB event's record
// stays under the 1 KB a write unit covers through every transition
// (received, claimed, failed with a long error, claimed again, processed),
// the lease owner as long as the processor makes it (worker, message id,
// nonce),
// and its payload, in an item of its own written once, fits one too.
func TestEveryTransitionRewritesLessThanOneWriteUnit(t *testing.T) {
	ev, s := newEvents(t)
	ctx := context.Background()
	r := customerUpdated(t, "evt_small_record")
	if len(r.Payload) < 2500 {
		t.Fatalf("the event is %d bytes, want about 2.6 KB", len(r.Payload))
	}
	sizes := map[string]int{}
	items := func(step string) {
		t.Helper()
		out, err := s.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(ev.Table), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) != 2 {
			t.Fatalf("%s: %d items, want the record and its payload", step, len(out.Items))
		}
		for _, it := range out.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			if n := itemSize(it); n > 1024 {
				t.Errorf("%s: item %s is %d bytes, over the 1 KB of one write unit", step, pk, n)
			}
			sizes[pk] = itemSize(it)
		}
	}
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	items("created")
	now := time.Now()
	if _, err := ev.Claim(ctx, r.Provider, r.ID, "worker-0123456789ab:059f36b4-87a3-44ab-83d2-661975830a7d:0123456789ab", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	items("claimed")
	if err := ev.Fail(ctx, r, "worker-0123456789ab:059f36b4-87a3-44ab-83d2-661975830a7d:0123456789ab", event.StatusFailed, strings.Repeat("a downstream error, ", 100), now, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	items("failed")
	if _, err := ev.Claim(ctx, r.Provider, r.ID, "worker-0123456789ab:059f36b4-87a3-44ab-83d2-661975830a7d:ba9876543210", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := ev.Complete(ctx, r, "worker-0123456789ab:059f36b4-87a3-44ab-83d2-661975830a7d:ba9876543210", now, store.Completion{Outcome: outcome.Applied, MirrorKey: "cus_small_record"}); err != nil {
		t.Fatal(err)
	}
	items("processed")
	got, err := ev.Get(ctx, r.Provider, r.ID)
	if err != nil || string(got.Payload) != string(r.Payload) {
		t.Errorf("payload read back: %d bytes, %v; want the %d stored", len(got.Payload), err, len(r.Payload))
	}
}

// indexKeys reads the attributes that key the record's indexes.
func indexKeys(t *testing.T, ev *store.Events, db *dynamodb.Client, id string) string {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(ev.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: event.Key(event.ProviderStripe, id)}}})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, name := range []string{"lane", "day_key", "received_at", "object_id", "created", "type"} {
		v := "-"
		switch x := out.Item[name].(type) {
		case *types.AttributeValueMemberS:
			v = x.Value
		case *types.AttributeValueMemberN:
			v = x.Value
		}
		parts = append(parts, name+"="+v)
	}
	return strings.Join(parts, " ")
}

// TestTheClaimChangesNoIndexKey: the claim, a retryable failure and the
// next claim leave every index key of the record as the receiver wrote it
// (its lane stays pending); the commit only takes it out of the
// unprocessed index; a permanent failure, a dead letter and a reopen move
// it between lanes.
func TestTheClaimChangesNoIndexKey(t *testing.T) {
	ev, s := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	r := record("evt_keys", now)
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	received := indexKeys(t, ev, s.DynamoDB, r.ID)
	if !strings.Contains(received, "lane=stripe#pending#") || !strings.Contains(received, "day_key=stripe#"+now.UTC().Format(time.DateOnly)+"#") {
		t.Fatalf("received: %s; want the pending lane and the day it was received", received)
	}
	step := func(name string, f func() error, want func(string) bool) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := indexKeys(t, ev, s.DynamoDB, r.ID); !want(got) {
			t.Errorf("%s: index keys %s (received: %s)", name, got, received)
		}
	}
	same := func(got string) bool { return got == received }
	claim := func(owner string) func() error {
		return func() error { _, err := ev.Claim(ctx, r.Provider, r.ID, owner, now, now.Add(time.Minute)); return err }
	}
	lane := func(l string) func(string) bool {
		return func(got string) bool {
			return strings.Replace(got, "lane=stripe#"+l+"#", "lane=stripe#pending#", 1) == received
		}
	}
	step("claim", claim("w1"), same)
	step("retryable failure", func() error { return ev.Fail(ctx, r, "w1", event.StatusFailed, "boom", now, time.Time{}) }, same)
	step("claim again", claim("w2"), same)
	step("dead-lettered", func() error { return ev.Fail(ctx, r, "w2", event.StatusDeadLettered, "boom", now, time.Time{}) }, lane(store.LaneDeadLettered))
	step("claimed after a redrive", claim("w3"), same)
	step(
		"failed for good",
		func() error { return ev.Fail(ctx, r, "w3", event.StatusFailedPermanent, "boom", now, time.Time{}) },
		lane(store.LaneFailedPermanent),
	)
	step("reopened", func() error { _, err := ev.Reopen(ctx, r.Provider, r.ID, now); return err }, same)
	step("claimed after the reopen", claim("w4"), same)
	step("processed", func() error { return ev.Complete(ctx, r, "w4", now, store.Completion{Outcome: outcome.Applied}) },
		func(got string) bool {
			return strings.Replace(received, received[:strings.Index(received, " ")], "lane=-", 1) == got
		})
}

// failSecondPut lets the first PutItem through and fails the next ones: a
// receiver that dies, or loses DynamoDB, between the record and its
// payload.
type failSecondPut struct {
	store.DynamoDB
	puts int
}

func (f *failSecondPut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.puts++
	if f.puts > 1 {
		return nil, errors.New("connection reset by peer")
	}
	return f.DynamoDB.PutItem(ctx, in, opts...)
}

// TestARecordLeftWithoutItsPayloadGetsItFromTheRetry: when the payload's
// put fails after the record's, Create fails (the sender retries), the
// record stays received without a payload, and the retry's StorePayload
// stores it; a payload stored once is never replaced by another copy.
func TestARecordLeftWithoutItsPayloadGetsItFromTheRetry(t *testing.T) {
	ev, s := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	broken := &store.Events{DB: &failSecondPut{DynamoDB: s.DynamoDB}, Table: ev.Table}
	r := record("evt_half", now)
	if _, err := broken.Create(ctx, &r); err == nil {
		t.Fatal("Create with a failed payload put: got nil error, want the failure (the sender must retry)")
	}
	got, err := ev.Get(ctx, r.Provider, r.ID)
	if err != nil || got.Status != event.StatusReceived || got.Payload != nil || got.PayloadOmitted {
		t.Fatalf("after the failed payload put: %+v, %v; want received, no payload, not omitted", got, err)
	}
	if _, err := ev.Payload(ctx, got); !errors.Is(err, store.ErrNoPayload) {
		t.Errorf("Payload: got %v, want ErrNoPayload", err)
	}

	retry := record("evt_half", now.Add(time.Second))
	existing, err := ev.Create(ctx, &retry)
	if err != nil || existing == nil || !existing.Status.NeedsEnqueue() {
		t.Fatalf("the retry's Create: %+v, %v; want the received record", existing, err)
	}
	if err := ev.StorePayload(ctx, &retry); err != nil {
		t.Fatal(err)
	}
	other := record("evt_half", now.Add(2*time.Second))
	other.Payload = []byte(`{"id":"evt_half","from":"the provider's API"}`)
	if err := ev.StorePayload(ctx, &other); err != nil {
		t.Fatal(err)
	}
	if p, err := ev.Payload(ctx, got); err != nil || string(p) != string(retry.Payload) {
		t.Errorf("payload: %q, %v; want the first copy stored, %q", p, err, retry.Payload)
	}
}

// TestListReadsEveryShard: events spread over the shards of the by_day
// index and the lanes of the unprocessed index are listed newest first,
// whole, a page at a time, by status or all of them, with no record twice
// and none missing.
func TestListReadsEveryShard(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Date(2026, 5, 3, 10, 0, 0, 0, time.UTC)
	statuses := []event.Status{event.StatusProcessed, event.StatusProcessed, event.StatusProcessed, event.StatusFailed,
		event.StatusFailedPermanent, event.StatusDeadLettered, event.StatusIgnored, event.StatusReceived}
	byStatus := map[event.Status][]string{}
	var all []string // newest first
	for i := 39; i >= 0; i-- {
		id := fmt.Sprintf("evt_shard_%02d", i)
		st := statuses[i%len(statuses)]
		r := at(id, "invoice.paid", st, now.Add(-time.Duration(40-i)*time.Minute))
		if _, err := ev.Create(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	for i := 39; i >= 0; i-- {
		id := fmt.Sprintf("evt_shard_%02d", i)
		all = append(all, id)
		st := statuses[i%len(statuses)]
		byStatus[st] = append(byStatus[st], id)
	}
	list := func(st event.Status, limit int) []string {
		t.Helper()
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 50 {
				t.Fatal("more than 50 pages")
			}
			page, err := ev.List(ctx, store.Query{Status: st, Since: now.Add(-2 * time.Hour), Until: now, Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			if page.Next != "" && len(page.Records) != limit {
				t.Fatalf("status %q page %d: %d records with a next page, want %d", st, pages, len(page.Records), limit)
			}
			for _, r := range page.Records {
				if st != "" && r.Status != st || r.PayloadHash == "" {
					t.Errorf("status %q: got %s in %s, hash %q", st, r.ID, r.Status, r.PayloadHash)
				}
				got = append(got, r.ID)
			}
			if cursor = page.Next; cursor == "" {
				return got
			}
		}
	}
	for _, limit := range []int{1, 3, 50} {
		if got := list("", limit); !slices.Equal(got, all) {
			t.Errorf("every status, pages of %d: got %v, want %v", limit, got, all)
		}
		for st, want := range byStatus {
			if got := list(st, limit); !slices.Equal(got, want) {
				t.Errorf("%s, pages of %d: got %v, want %v", st, limit, got, want)
			}
		}
	}
}

// TestAListingWithoutAStartGoesBackTheRetention: a zero Since lists from
// the records' retention, not from 1970 (a partition per shard and day).
func TestAListingWithoutAStartGoesBackTheRetention(t *testing.T) {
	ev, _ := newEvents(t)
	ctx := context.Background()
	now := time.Now()
	r := at("evt_ten_days", "invoice.paid", event.StatusProcessed, now.Add(-10*24*time.Hour))
	if _, err := ev.Create(ctx, &r); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		retention time.Duration
		want      int
	}{{12 * 24 * time.Hour, 1}, {5 * 24 * time.Hour, 0}} {
		short := *ev
		short.Retention = tc.retention
		page, err := short.List(ctx, store.Query{Until: now})
		if err != nil || len(page.Records) != tc.want {
			t.Errorf("retention %v: got %d records (%v), want %d", tc.retention, len(page.Records), err, tc.want)
		}
	}
}

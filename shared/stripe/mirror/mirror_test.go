package mirror_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// fixture is a mirror table on the emulator with a Mirror and a Reader.
type fixture struct {
	db     *dynamodb.Client
	mirror *mirror.Mirror
	reader *mirror.Reader
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s := testenv.Provision(t, nil)
	table := s.Table("MirrorTable")
	return &fixture{db: s.DynamoDB, mirror: &mirror.Mirror{Table: table}, reader: &mirror.Reader{DB: s.DynamoDB, Table: table}}
}

// ev builds an event and its record.
func ev(t testing.TB, eventType, id string, created int64, o stripefixture.Options) (event.Record, []byte) {
	t.Helper()
	o.ID, o.Created = id, created
	body, err := stripefixture.Build(eventType, o)
	if err != nil {
		t.Fatal(err)
	}
	env, err := event.DecodeEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	return event.NewRecord(event.ProviderStripe, env, body, "", event.SourceWebhook, event.StatusReceived, time.Unix(env.Created, 0)), body
}

// write runs writes in one transaction, as the processor commits them, and
// reports whether a condition failed (and which item) or another error.
func (f *fixture) write(t *testing.T, writes ...types.TransactWriteItem) (conflict int) {
	t.Helper()
	for _, w := range writes {
		checkExpressions(t, w)
	}
	_, err := f.db.TransactWriteItems(context.Background(), &dynamodb.TransactWriteItemsInput{TransactItems: writes})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return i
			}
		}
	}
	if err != nil {
		t.Fatalf("transaction: %v", err)
	}
	return -1
}

func (f *fixture) plan(t *testing.T, r event.Record, body []byte) []types.TransactWriteItem {
	t.Helper()
	p, err := f.mirror.Plan(r, body)
	if err != nil {
		t.Fatalf("plan %s: %v", r.Type, err)
	}
	if p.Key == "" || len(p.Writes) == 0 {
		t.Fatalf("plan %s: got key %q and %d writes, want the object's", r.Type, p.Key, len(p.Writes))
	}
	return p.Writes
}

func TestEveryHandledTypeIsMirroredAndListedByCustomer(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	wantObject := func(eventType string) string {
		switch {
		case strings.HasPrefix(eventType, "customer.subscription."):
			return "subscription"
		case strings.HasPrefix(eventType, "checkout.session."):
			return "checkout.session"
		}
		return eventType[:strings.LastIndex(eventType, ".")]
	}
	const customer = "cus_listed"
	var wantListed []string
	for i, eventType := range mirror.Types {
		object := wantObject(eventType)
		objectID := fmt.Sprintf("%s_%02d", strings.ReplaceAll(object, ".", "_"), i)
		o := stripefixture.Options{ObjectID: objectID}
		switch object {
		case "customer":
			o.Customer = objectID
		case "subscription", "invoice", "checkout.session":
			o.Customer = customer
			wantListed = append(wantListed, objectID)
		}
		r, body := ev(t, eventType, fmt.Sprintf("evt_type_%02d", i), 1700000000+int64(i), o)
		if c := f.write(t, f.plan(t, r, body)...); c != -1 {
			t.Fatalf("%s: condition of item %d failed on a fresh object", eventType, c)
		}
		snap, err := f.reader.Object(ctx, objectID)
		if err != nil {
			t.Fatalf("%s: %v", eventType, err)
		}
		deleted := strings.HasSuffix(eventType, ".deleted")
		if snap.ID != objectID || snap.Object != object || snap.Deleted != deleted || snap.LastEventID != r.ID ||
			snap.LastEventCreated != r.Created || snap.LastEventType != eventType {
			t.Errorf("%s: got snapshot %s %s deleted=%v last %s@%d %s; want %s %s deleted=%v last %s@%d",
				eventType, snap.ID, snap.Object, snap.Deleted, snap.LastEventID, snap.LastEventCreated, snap.LastEventType,
				objectID, object, deleted, r.ID, r.Created)
		}
		var data struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		}
		switch err := json.Unmarshal(snap.Data, &data); {
		case deleted && string(snap.Data) != "null":
			t.Errorf("%s: a tombstone keeps data: %.80s", eventType, snap.Data)
		case !deleted && (err != nil || data.ID != objectID || data.Object != object):
			t.Errorf("%s: data is not the event's data.object: %s (%v)", eventType, snap.Data, err)
		}
		if o.Customer != "" && snap.Customer != o.Customer {
			t.Errorf("%s: customer: got %q, want %q", eventType, snap.Customer, o.Customer)
		}
	}

	listed, err := f.reader.CustomerObjects(ctx, customer, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range listed {
		got = append(got, s.ID)
	}
	sort.Strings(wantListed)
	if strings.Join(got, " ") != strings.Join(wantListed, " ") {
		t.Errorf("CustomerObjects(%s):\n got %v\nwant %v (no entitlement item, no other customer's objects)", customer, got, wantListed)
	}
	subs, err := f.reader.CustomerObjects(ctx, customer, "subscription")
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 6 {
		t.Errorf("CustomerObjects(%s, subscription): got %d objects, want one per subscription event type (6)", customer, len(subs))
	}
	for _, s := range subs {
		if s.Object != "subscription" {
			t.Errorf("CustomerObjects(subscription) listed a %s", s.Object)
		}
	}
	none, err := f.reader.CustomerObjects(ctx, "cus_unknown", "")
	if err != nil || len(none) != 0 {
		t.Errorf("CustomerObjects of an unknown customer: got %v, %v; want an empty list", none, err)
	}
	if _, err := f.reader.Object(ctx, "sub_unknown"); !errors.Is(err, mirror.ErrNotFound) {
		t.Errorf("Object of an unknown id: got %v, want ErrNotFound", err)
	}
}

func TestUnhandledTypesAndBadPayloads(t *testing.T) {
	m := &mirror.Mirror{Table: "t"}
	p, err := m.Plan(event.Record{ID: "evt_1", Type: "charge.succeeded"}, []byte(`{}`))
	if err != nil || p.Key != "" || len(p.Writes) != 0 {
		t.Errorf("unhandled type: got %+v, %v; want an empty plan", p, err)
	}
	for _, body := range []string{`not json`, `{"data":{"object":{}}}`, `{"data":{}}`} {
		if _, err := m.Plan(event.Record{ID: "evt_1", Type: "invoice.paid"}, []byte(body)); !fault.IsPermanent(err) {
			t.Errorf("payload %s: got %v, want a permanent error", body, err)
		}
	}
}

// TestGuardOnTheEmulator runs the ordering guard's condition expressions,
// the top-level one of the snapshot and the nested one of the subscription's
// sub_<id> attribute on the entitlement item, each on its own, against the
// emulator.
func TestGuardOnTheEmulator(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	steps := []struct {
		name      string
		eventType string
		id        string
		created   int64
		status    string
		applies   bool
	}{
		{"first event", "customer.subscription.updated", "evt_m", 200, "active", true},
		{"older event", "customer.subscription.updated", "evt_z", 100, "past_due", false},
		{"same time, smaller id", "customer.subscription.updated", "evt_a", 200, "past_due", false},
		{"same time, larger id", "customer.subscription.updated", "evt_n", 200, "trialing", true},
		{"the same event again", "customer.subscription.updated", "evt_n", 200, "trialing", false},
		{"newer event", "customer.subscription.updated", "evt_b", 300, "past_due", true},
		{"older deletion wins over live state", "customer.subscription.deleted", "evt_d", 150, "canceled", true},
		{"newer update never resurrects", "customer.subscription.updated", "evt_u", 500, "active", false},
		{"older deletion loses to a newer tombstone", "customer.subscription.deleted", "evt_c", 140, "canceled", false},
		{"newer deletion replaces the tombstone", "customer.subscription.deleted", "evt_e", 600, "canceled", true},
	}
	for _, part := range []struct {
		name  string
		index int // which write of the plan: 0 the snapshot, 1 the entitlement
	}{{"snapshot", 0}, {"entitlement", 1}} {
		t.Run(part.name, func(t *testing.T) {
			subID, customer := "sub_guard_"+part.name, "cus_guard_"+part.name
			last := ""
			for _, st := range steps {
				r, body := ev(t, st.eventType, st.id, st.created, stripefixture.Options{ObjectID: subID, Customer: customer, Status: st.status})
				writes := f.plan(t, r, body)
				if len(writes) != 2 {
					t.Fatalf("%s: got %d writes, want the snapshot and the entitlement", st.name, len(writes))
				}
				applied := f.write(t, writes[part.index]) == -1
				if applied != st.applies {
					t.Fatalf("%s (%s@%d after %s): applied %v, want %v", st.name, st.id, st.created, last, applied, st.applies)
				}
				if applied {
					last = st.id
				}
			}
			if part.index == 0 {
				snap, err := f.reader.Object(ctx, subID)
				if err != nil {
					t.Fatal(err)
				}
				if !snap.Deleted || snap.LastEventID != "evt_e" {
					t.Errorf("final snapshot: deleted=%v last %s; want the newest tombstone, evt_e", snap.Deleted, snap.LastEventID)
				}
				return
			}
			ent, err := f.reader.Entitlement(ctx, customer)
			if err != nil {
				t.Fatal(err)
			}
			if ent.Active || ent.Reason != "canceled" || len(ent.Subscriptions) != 1 || ent.Subscriptions[0].EventID != "evt_e" {
				t.Errorf("final entitlement: %+v; want inactive, canceled, from evt_e", ent)
			}
		})
	}
}

func TestEntitlementAcrossSubscriptions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const customer = "cus_two_subs"
	apply := func(eventType, id, subID, status string, created int64, set map[string]any) {
		t.Helper()
		r, body := ev(t, eventType, id, created, stripefixture.Options{ObjectID: subID, Customer: customer, Status: status, Set: set})
		if c := f.write(t, f.plan(t, r, body)...); c != -1 {
			t.Fatalf("%s: condition of item %d failed", id, c)
		}
	}
	ent, err := f.reader.Entitlement(ctx, customer)
	if err != nil || ent.Active || ent.Reason != "no_subscription" {
		t.Fatalf("before any event: got %+v, %v; want inactive, no_subscription", ent, err)
	}
	apply("customer.subscription.created", "evt_1", "sub_basic", "active", 100, map[string]any{"current_period_end": 1000})
	apply("customer.subscription.created", "evt_2", "sub_pro", "trialing", 200, map[string]any{"trial_end": 2000, "current_period_end": 3000})
	ent, err = f.reader.Entitlement(ctx, customer)
	if err != nil {
		t.Fatal(err)
	}
	if !ent.Active || ent.Until != 2000 || len(ent.Subscriptions) != 2 || ent.Price == "" {
		t.Errorf("two granting subscriptions: got %+v; want active until the later end (trial end 2000) with a price", ent)
	}
	apply("customer.subscription.updated", "evt_3", "sub_pro", "past_due", 300, nil)
	apply("customer.subscription.deleted", "evt_4", "sub_basic", "canceled", 400, nil)
	ent, err = f.reader.Entitlement(ctx, customer)
	if err != nil {
		t.Fatal(err)
	}
	if ent.Active || ent.Reason != "canceled" {
		t.Errorf("after past_due and a cancellation: got active=%v reason %q; want inactive, canceled (the most recent)", ent.Active, ent.Reason)
	}
}

// checkExpressions fails the test when a write would be rejected by DynamoDB
// but not by moto, which does not validate these inside transactions: an
// empty ExpressionAttributeNames or ExpressionAttributeValues map, or a
// name or value the expressions do not use.
func checkExpressions(t *testing.T, w types.TransactWriteItem) {
	t.Helper()
	var names map[string]string
	var values map[string]types.AttributeValue
	var exprs string
	switch {
	case w.Put != nil:
		names, values, exprs = w.Put.ExpressionAttributeNames, w.Put.ExpressionAttributeValues, aws.ToString(w.Put.ConditionExpression)
	case w.Update != nil:
		names, values = w.Update.ExpressionAttributeNames, w.Update.ExpressionAttributeValues
		exprs = aws.ToString(w.Update.UpdateExpression) + " " + aws.ToString(w.Update.ConditionExpression)
	default:
		t.Fatalf("unexpected write %+v", w)
	}
	if names != nil && len(names) == 0 {
		t.Errorf("empty ExpressionAttributeNames in %q", exprs)
	}
	if values != nil && len(values) == 0 {
		t.Errorf("empty ExpressionAttributeValues in %q", exprs)
	}
	var placeholders []string
	for k := range names {
		placeholders = append(placeholders, k)
	}
	for k := range values {
		placeholders = append(placeholders, k)
	}
	for _, k := range placeholders {
		if !regexp.MustCompile(regexp.QuoteMeta(k) + `($|[^A-Za-z0-9_])`).MatchString(exprs) {
			t.Errorf("%s unused in %q", k, exprs)
		}
	}
}

// bigEvent is a customer.updated event whose data.object carries filler of
// n bytes in its metadata: repetitive (compresses well) or random (does not).
func bigEvent(t *testing.T, id string, created int64, n int, random bool) (event.Record, []byte) {
	t.Helper()
	r, body := ev(t, "customer.updated", id, created, stripefixture.Options{ObjectID: "cus_big", Customer: "cus_big"})
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("paid ", n/5)
	if random {
		b := make([]byte, n*3/4)
		_, _ = rand.Read(b)
		filler = base64.StdEncoding.EncodeToString(b)
	}
	doc["data"].(map[string]any)["object"].(map[string]any)["metadata"] = map[string]any{"filler": filler}
	body, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return r, body
}

func TestLargeObjectsAreGzippedOrLeftOutNeverFailed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// The filler is in metadata, which the default allowlist drops: keep
	// the customer's whole object, as a team may choose to.
	fields, err := mirror.ParseFields("customer:*")
	if err != nil {
		t.Fatal(err)
	}
	f.mirror.Fields = fields

	// 600 KB that gzip shrinks: stored gzipped, read back byte for byte.
	r, body := bigEvent(t, "evt_big_1", 1700000000, 600_000, false)
	if c := f.write(t, f.plan(t, r, body)...); c != -1 {
		t.Fatalf("600 KB compressible object: condition of item %d failed", c)
	}
	snap, err := f.reader.Object(ctx, "cus_big")
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &want)
	var compact bytes.Buffer
	_ = json.Compact(&compact, want.Data.Object)
	if !bytes.Equal(snap.Data, compact.Bytes()) || snap.DataOmitted {
		t.Errorf("gzipped snapshot: got %d bytes (omitted %v), want the %d bytes of data.object", len(snap.Data), snap.DataOmitted, compact.Len())
	}

	// 600 KB of noise: too large even gzipped. The snapshot keeps its
	// ordering fields and flags the data as left out; the write succeeds.
	r, body = bigEvent(t, "evt_big_2", 1700000001, 600_000, true)
	if c := f.write(t, f.plan(t, r, body)...); c != -1 {
		t.Fatalf("600 KB incompressible object: condition of item %d failed", c)
	}
	snap, err = f.reader.Object(ctx, "cus_big")
	if err != nil {
		t.Fatal(err)
	}
	if !snap.DataOmitted || string(snap.Data) != "null" || snap.LastEventID != "evt_big_2" || snap.Customer != "cus_big" {
		t.Errorf(
			"snapshot of an object too large to mirror: got omitted=%v data %.20s last %s customer %s",
			snap.DataOmitted,
			snap.Data,
			snap.LastEventID,
			snap.Customer,
		)
	}

	// A later small update stores its data again, as JSON text.
	r, body = ev(t, "customer.updated", "evt_big_3", 1700000002, stripefixture.Options{ObjectID: "cus_big", Customer: "cus_big"})
	if c := f.write(t, f.plan(t, r, body)...); c != -1 {
		t.Fatalf("small update: condition of item %d failed", c)
	}
	if snap, _ = f.reader.Object(ctx, "cus_big"); snap.DataOmitted || !json.Valid(snap.Data) || string(snap.Data) == "null" {
		t.Errorf("after a small update: omitted=%v data %.40s", snap.DataOmitted, snap.Data)
	}
}

// TestSnapshotDataKeepsTheStoresLimit: snapshot data is stored by the same
// rule as an event's payload (package ddbattr): gzipped, it is kept up to
// ddbattr.MaxStored. The mirror used to leave out data gzipped to over
// 350 KB, which the store would have kept.
func TestSnapshotDataKeepsTheStoresLimit(t *testing.T) {
	fields, err := mirror.ParseFields("customer:*")
	if err != nil {
		t.Fatal(err)
	}
	m := &mirror.Mirror{Table: "mirror", Fields: fields}
	// Base64 of noise gzips to about three quarters: some 365 KB.
	r, body := bigEvent(t, "evt_big_limit", 1700000000, 498_000, true)
	p, err := m.Plan(r, body)
	if err != nil {
		t.Fatal(err)
	}
	item := p.Writes[0].Put.Item
	gz, ok := item["data_gz"].(*types.AttributeValueMemberB)
	if !ok {
		t.Fatalf("data gzipped to about 365 KB: got attributes %v, want data_gz (at most %d bytes are kept)", keys(item), ddbattr.MaxStored)
	}
	if n := len(gz.Value); n <= 350<<10 || n > ddbattr.MaxStored {
		t.Fatalf("the test's data gzips to %d bytes, want between 350 KB and ddbattr.MaxStored", n)
	}
	if _, omitted := item["data_omitted"]; omitted {
		t.Error("data both stored and flagged as left out")
	}
}

func keys(item map[string]types.AttributeValue) []string {
	var out []string
	for k := range item {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestConnectedAccountsNeverShareState: the same customer and
// subscription ids under two connected accounts and the platform are
// three objects, three ordering guards and three entitlements; a
// platform event keeps today's keys.
func TestConnectedAccountsNeverShareState(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const customer, sub = "cus_shared_id", "sub_shared_id"
	apply := func(account, id, status string, created int64) int {
		t.Helper()
		r, body := ev(
			t,
			"customer.subscription.updated",
			id,
			created,
			stripefixture.Options{Account: account, ObjectID: sub, Customer: customer, Status: status},
		)
		if r.Account != account {
			t.Fatalf("record's account: got %q, want %q", r.Account, account)
		}
		p, err := f.mirror.Plan(r, body)
		if err != nil {
			t.Fatal(err)
		}
		if want := mirror.Key(account, sub); p.Key != want {
			t.Fatalf("plan key: got %q, want %q", p.Key, want)
		}
		return f.write(t, p.Writes...)
	}
	// acct_a's event is the newest; acct_b's and the platform's are older
	// and must not lose to it, nor it to them.
	if c := apply("acct_a", "evt_a", "active", 300); c != -1 {
		t.Fatalf("acct_a: condition of item %d failed", c)
	}
	if c := apply("acct_b", "evt_b", "past_due", 200); c != -1 {
		t.Fatalf("acct_b, older than acct_a's event: condition of item %d failed, want applied (another account's guard)", c)
	}
	if c := apply("", "evt_p", "canceled", 100); c != -1 {
		t.Fatalf("platform, older than both: condition of item %d failed, want applied", c)
	}
	// A late event of acct_a still loses to acct_a's own guard.
	if c := apply("acct_a", "evt_a_old", "unpaid", 50); c == -1 {
		t.Fatal("acct_a's older event: applied, want it to lose acct_a's guard")
	}
	for _, tc := range []struct {
		account, status, event string
		active                 bool
	}{
		{"acct_a", "active", "evt_a", true},
		{"acct_b", "past_due", "evt_b", false},
		{"", "canceled", "evt_p", false},
	} {
		snap, err := f.reader.Object(ctx, mirror.Key(tc.account, sub))
		if err != nil || snap.ID != sub || snap.Account != tc.account || snap.Customer != customer || snap.LastEventID != tc.event {
			t.Errorf("%q's snapshot: got %+v, %v; want %s of %s from %s", tc.account, snap, err, sub, customer, tc.event)
		}
		ent, err := f.reader.Entitlement(ctx, mirror.Key(tc.account, customer))
		if err != nil || ent.Customer != customer || ent.Account != tc.account || ent.Active != tc.active || len(ent.Subscriptions) != 1 ||
			ent.Subscriptions[0].Status != tc.status {
			t.Errorf("%q's entitlement: got %+v, %v; want %s's only, %s", tc.account, ent, err, customer, tc.status)
		}
		objs, err := f.reader.CustomerObjects(ctx, mirror.Key(tc.account, customer), "")
		if err != nil || len(objs) != 1 || objs[0].Key() != mirror.Key(tc.account, sub) {
			t.Errorf("%q's customer objects: got %+v, %v; want its subscription only", tc.account, objs, err)
		}
	}
	if got := mirror.Key("", sub); got != sub {
		t.Errorf("a platform object's key: got %q, want its id %q (today's keys)", got, sub)
	}
	if a, id := mirror.SplitKey(mirror.Key("acct_a", sub)); a != "acct_a" || id != sub {
		t.Errorf("SplitKey: got %q, %q", a, id)
	}
}

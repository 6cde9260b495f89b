package mirror_test

import (
	"context"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// TestEraseLeavesTombstonesThatHoldTheGuard erases a customer's snapshot
// and entitlement: no data is left, the ids and the guard are, a late
// update (a retried delivery) cannot write the data back, and a later
// deletion replaces the tombstone without data.
func TestEraseLeavesTombstonesThatHoldTheGuard(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	eraser := &mirror.Eraser{DB: f.db, Table: f.mirror.Table}
	const customer, sub = "cus_erase", "sub_erase"
	o := stripefixture.Options{ObjectID: sub, Customer: customer, Status: "active", Set: personal("subscription")}
	r, body := ev(t, "customer.subscription.updated", "evt_erase_1", 1700000100, o)
	f.write(t, f.plan(t, r, body)...)

	if ok, err := eraser.EraseObject(ctx, sub); err != nil || !ok {
		t.Fatalf("EraseObject: %v, %v; want true", ok, err)
	}
	if ok, err := eraser.EraseEntitlement(ctx, customer); err != nil || !ok {
		t.Fatalf("EraseEntitlement: %v, %v; want true", ok, err)
	}
	item, text := f.rawItem(t, sub)
	for _, name := range []string{"data", "data_gz", "data_omitted"} {
		if _, ok := item[name]; ok {
			t.Errorf("erased snapshot keeps %s", name)
		}
	}
	if strings.Contains(text, pii) {
		t.Errorf("erased snapshot keeps personal data:\n%s", text)
	}
	snap, err := f.reader.Object(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Erased || !snap.Deleted || snap.Customer != customer || snap.LastEventID != "evt_erase_1" || snap.LastEventCreated != 1700000100 ||
		string(snap.Data) != "null" {
		t.Errorf("erased snapshot: %+v; want erased, deleted, customer, guard of evt_erase_1, no data", snap)
	}
	if ent, err := f.reader.Entitlement(ctx, customer); err != nil || ent.Reason != "no_subscription" {
		t.Errorf("entitlement after erasure: %+v, %v; want none", ent, err)
	}
	listed, err := f.reader.CustomerObjects(ctx, customer, "")
	if err != nil || len(listed) != 1 || !listed[0].Erased {
		t.Errorf("CustomerObjects after erasure: %+v, %v; want the erased tombstone, so erasing again finds it", listed, err)
	}

	// Late and newer updates both lose: the data does not come back, and
	// the entitlement, in the same transaction, is not written either.
	for _, id := range []string{"evt_erase_0", "evt_erase_2"} {
		created := int64(1700000000)
		if id == "evt_erase_2" {
			created = 1700000200
		}
		r, body := ev(t, "customer.subscription.updated", id, created, o)
		if c := f.write(t, f.plan(t, r, body)...); c != 0 {
			t.Errorf("%s after the erasure: got conflict %d, want the snapshot's (0)", id, c)
		}
	}
	if _, text := f.rawItem(t, sub); strings.Contains(text, pii) {
		t.Errorf("an update after the erasure wrote personal data back")
	}
	// A deletion still replaces it, with a tombstone of its own, no data.
	r, body = ev(t, "customer.subscription.deleted", "evt_erase_3", 1700000300, o)
	if c := f.write(t, f.plan(t, r, body)...); c != -1 {
		t.Fatalf("a later deletion: conflict %d, want it applied", c)
	}
	if _, text := f.rawItem(t, sub); strings.Contains(text, pii) {
		t.Errorf("the deletion after the erasure wrote personal data back")
	}

	if ok, err := eraser.EraseObject(ctx, "sub_never"); err != nil || ok {
		t.Errorf("EraseObject of an unknown id: %v, %v; want false and no item created", ok, err)
	}
	if _, err := f.reader.Object(ctx, "sub_never"); err == nil {
		t.Error("EraseObject created an item")
	}
	if ok, err := eraser.EraseEntitlement(ctx, "cus_never"); err != nil || ok {
		t.Errorf("EraseEntitlement of an unknown customer: %v, %v; want false", ok, err)
	}
}

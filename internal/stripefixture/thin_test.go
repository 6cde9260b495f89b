package stripefixture_test

import (
	"encoding/json"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// TestThinDecodesAsTheInboxReadsIt: a built thin event is what the
// receiver and the processor decode, naming the object built beside it.
func TestThinDecodesAsTheInboxReadsIt(t *testing.T) {
	body, obj, err := stripefixture.Thin("customer.subscription.updated",
		stripefixture.Options{ID: "evt_thin_fx", Created: 1700000000, ObjectID: "sub_fx", Customer: "cus_fx", Account: "acct_fx"},
		stripefixture.ThinOptions{SnapshotEvent: "evt_snap_fx"})
	if err != nil {
		t.Fatal(err)
	}
	if !event.IsThin(body) {
		t.Fatalf("not a thin event: %s", body)
	}
	env, err := event.DecodeAnyEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	if env.ID != "evt_thin_fx" || env.Type != "v1.customer.subscription.updated" || env.Created != 1700000000 ||
		env.Account != "acct_fx" || env.ObjectID != "sub_fx" || env.ObjectType != "subscription" {
		t.Errorf("envelope: %+v", env)
	}
	th, err := event.DecodeThin(body)
	if err != nil {
		t.Fatal(err)
	}
	if th.SnapshotEvent != "evt_snap_fx" || th.Related.URL != "/v1/subscriptions/sub_fx" || th.Context != "acct_fx" {
		t.Errorf("thin: %+v", th)
	}
	var o struct{ ID, Object, Customer string }
	if err := json.Unmarshal(obj, &o); err != nil || o.ID != "sub_fx" || o.Object != "subscription" || o.Customer != "cus_fx" {
		t.Errorf("object: %+v, %v (%s)", o, err, obj)
	}
}

package stripefixture

import (
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

func TestBuildMakesEventsThePipelineReads(t *testing.T) {
	tests := []struct {
		typ, object string
	}{
		{"customer.subscription.created", "subscription"},
		{"customer.created", "customer"},
		{"invoice.paid", "invoice"},
		{"checkout.session.completed", "checkout.session"},
		{"price.updated", "price"},
		{"charge.refunded", "charge"},
	}
	for _, tc := range tests {
		t.Run(tc.typ, func(t *testing.T) {
			b, err := Build(tc.typ, Options{ID: "evt_x", Customer: "cus_1", Created: 42, ObjectID: "obj_1"})
			if err != nil {
				t.Fatal(err)
			}
			env, err := event.DecodeEnvelope(b)
			if err != nil {
				t.Fatal(err)
			}
			wantObj := "obj_1"
			if tc.object == "customer" {
				wantObj = "cus_1"
			}
			if env.ID != "evt_x" || env.Type != tc.typ || env.Created != 42 || env.ObjectType != tc.object || env.ObjectID != wantObj ||
				env.APIVersion != APIVersion {
				t.Errorf("envelope: got %+v", env)
			}
		})
	}
	if _, err := Build("nonsense", Options{}); err == nil {
		t.Error("got nil error for an unknown event type")
	}
}

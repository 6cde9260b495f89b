package provider

import (
	"testing"
	"time"
)

// TestSignIsVerified: what Sign produces, each provider's verifier
// accepts, and reads back the id and type it was given; every row of the
// table has a case.
func TestSignIsVerified(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	covered := map[string]bool{}
	for _, tc := range []struct {
		name, secret, typ, body string
	}{
		{Stripe, "whsec_sign", "invoice.paid", `{"id":"id-1","object":"event","type":"invoice.paid","livemode":false}`},
		{GitHub, "gh", "issues.opened", `{"action":"opened","issue":{"id":1}}`},
		{GitHub, "gh", "push", `{"ref":"refs/heads/main"}`},
		{Shopify, "shp", "orders/create", `{"id":450789469}`},
		{Standard, standardSecret, "invoice.paid", `{"type":"invoice.paid","timestamp":"2027-01-15T08:00:00Z","data":{}}`},
		{Razorpay, razorpaySecret, "payment.captured", `{"entity":"event","event":"payment.captured","contains":["payment"],"payload":{"payment":{"entity":{"id":"pay_1"}}},"created_at":1800000000}`},
		{LemonSqueezy, lemonSqueezySecret, "order_created", `{"meta":{"event_name":"order_created"},"data":{"type":"orders","id":"1"}}`},
		{Square, squareKey, "payment.updated", `{"merchant_id":"M1","type":"payment.updated","event_id":"e-1","created_at":"2027-01-15T08:00:00Z","data":{"type":"payment","id":"p-1"}}`},
		{LiveKit, liveKitKey + ":" + liveKitSecret, "room_started", `{"event":"room_started","room":{"sid":"RM_1"},"id":"EV_1","createdAt":"1800000000"}`},
		{Twilio, "twilio token", "message.delivered", "MessageSid=SM1&MessageStatus=delivered&AccountSid=AC1"},
		{Paddle, paddleSecret, "transaction.completed", `{"event_id":"id-1","event_type":"transaction.completed","occurred_at":"2027-01-15T08:00:00Z","data":{"id":"txn_1"}}`},
	} {
		covered[tc.name] = true
		t.Run(tc.name+" "+tc.typ, func(t *testing.T) {
			// Stamp makes the body event id-1's where the id is the body's.
			body, wantID, err := Stamp(tc.name, []byte(tc.body), "id-1")
			if err != nil {
				t.Fatal(err)
			}
			h, err := Sign(tc.name, tc.secret, Delivery{ID: "id-1", Type: tc.typ, Shop: "s.myshopify.com", URL: squareURL, Body: body, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			v, err := New(tc.name, []string{tc.secret}, testOptions(tc.name, Options{Now: func() time.Time { return now }}))
			if err != nil {
				t.Fatal(err)
			}
			env, err := verify(v, body, h)
			if err != nil {
				t.Fatal(err)
			}
			if env.ID != wantID || env.Type != tc.typ {
				t.Errorf("got id %q type %q, want %s %q", env.ID, env.Type, wantID, tc.typ)
			}
		})
	}
	for _, name := range Names {
		if !covered[name] {
			t.Errorf("%s: no case: add a delivery its Sign makes", name)
		}
	}
	if _, err := Sign(Standard, "not whsec", Delivery{}); err == nil {
		t.Error("standard with a secret that is not whsec_: got no error")
	}
}

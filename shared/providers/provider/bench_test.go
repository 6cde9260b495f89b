package provider

import (
	"os"
	"testing"
	"time"
)

// BenchmarkVerify: each provider's verification of a realistic delivery
// (a sample inboxctl send posts; Stripe's, a subscription's event), with two secrets configured as during a
// rotation; compare the rows with each other, within one run.
func BenchmarkVerify(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	const samples = "../../../internal/cli/samples/"
	for _, tc := range []struct{ name, secret, typ, sample string }{
		{Stripe, "whsec_current", "customer.subscription.updated", "../../pipeline/event/testdata/subscription_updated.json"},
		{GitHub, "gh secret", "issues.opened", samples + "github/issues.opened.json"},
		{Shopify, "shp secret", "orders/create", samples + "shopify/orders/create.json"},
		{Standard, standardSecret, "invoice.paid", samples + "standard/invoice.paid.json"},
		{Razorpay, razorpaySecret, "payment.captured", samples + "razorpay/payment.captured.json"},
		{LemonSqueezy, lemonSqueezySecret, "order_created", samples + "lemonsqueezy/order_created.json"},
		{Square, squareKey, "payment.updated", samples + "square/payment.updated.json"},
		{LiveKit, liveKitKey + ":" + liveKitSecret, "room_started", samples + "livekit/room_started.json"},
		{Twilio, "twilio token", "message.delivered", samples + "twilio/message.delivered.json"},
		{Paddle, paddleSecret, "transaction.completed", samples + "paddle/transaction.completed.json"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body, err := os.ReadFile(tc.sample)
			if err != nil {
				b.Fatal(err)
			}
			h, err := Sign(tc.name, tc.secret, Delivery{ID: "id-1", Type: tc.typ, Shop: "s.myshopify.com", URL: squareURL, Body: body, Now: now})
			if err != nil {
				b.Fatal(err)
			}
			previous := "previous secret"
			switch tc.name {
			case Standard:
				previous = "whsec_cHJldmlvdXM="
			case LiveKit:
				previous = "APIprevious:previous secret"
			}
			v, err := New(tc.name, []string{previous, tc.secret}, testOptions(tc.name, Options{Now: func() time.Time { return now }}))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := verify(v, body, h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

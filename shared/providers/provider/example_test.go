package provider_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// Verifying a Stripe delivery as the receiver does: a Keyring reads the
// signing secrets on first use (here a secret in hand; in Lambda an SSM
// SecureString parameter, secrets.FromParameter), and Verify checks the
// Stripe-Signature header over the raw body, then reads the envelope.
func Example() {
	const secret = "whsec_example"
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false}`)
	// What Stripe sends with body: "t=<unix>,v1=<hex HMAC-SHA256>".
	header := provider.SignStripe(body, secret, time.Now())

	keys, err := provider.NewKeyring(provider.Stripe, secrets.Fixed("STRIPE_WEBHOOK_SECRET", secret), provider.Options{})
	if err != nil {
		panic(err)
	}
	v, err := keys.Verify(context.Background(), provider.Request{
		Body:    body, // byte for byte as received
		Headers: map[string]string{"stripe-signature": header},
	})
	if err != nil {
		fmt.Println("refused:", provider.Outcome(err))
		return
	}
	fmt.Println(v.Envelope.ID, v.Envelope.Type)
	// Output: evt_1 invoice.paid
}

// A GitHub delivery: its signature covers the body only, so Verify says
// which body it was (ReplayKey), and the receiver accepts it under one
// delivery id only.
func ExampleNew() {
	const secret = "github webhook secret"
	body := []byte(`{"action":"opened","issue":{"number":1}}`)
	headers, err := provider.Sign(provider.GitHub, secret, provider.Delivery{ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958", Type: "issues.opened", Body: body})
	if err != nil {
		panic(err)
	}

	v, err := provider.New(provider.GitHub, []string{secret}, provider.Options{})
	if err != nil {
		panic(err)
	}
	out, err := v.Verify(context.Background(), provider.Request{Body: body, Headers: headers})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Envelope.ID, out.Envelope.Type, out.ReplayKey != "")

	// The same headers over a changed body do not verify.
	_, err = v.Verify(context.Background(), provider.Request{Body: append(body, ' '), Headers: headers})
	fmt.Println(errors.Is(err, provider.ErrNoMatch), provider.Outcome(err))
	// Output:
	// 72d3162e-cc78-11e3-81ab-4c9367dc0958 issues.opened true
	// true rejected_signature
}

// Why a captured Stripe delivery does not verify: here a framework added a
// trailing newline to the body before it was checked.
func ExampleDiagnoseStripe() {
	const secret = "whsec_example"
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid"}`)
	header := provider.SignStripe(body, secret, time.Now())

	d := provider.DiagnoseStripe(append(body, '\n'), header, []string{secret}, provider.Options{})
	fmt.Println(d.Valid, d.Problem, d.Alteration)
	// Output: false body_altered a trailing newline was added
}

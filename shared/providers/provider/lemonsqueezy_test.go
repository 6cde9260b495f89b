package provider

import (
	"errors"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Lemon Squeezy's vector: computed, not accepted by any SDK (Lemon
// Squeezy's JavaScript SDK has no verification code): hex
// HMAC-SHA256(secret, body), as its docs and Laravel package compute it
// (../shared/FACTS.md).
const (
	lemonSqueezySecret       = "ls_signing_secret_42"
	lemonSqueezyBody         = `{"meta":{"event_name":"order_created","custom_data":{"customer_id":25}},"data":{"type":"orders","id":"1","attributes":{"store_id":1,"identifier":"104e18a2-d755-4d4b-80c4-a6c1dcbe1c10","order_number":1}}}`
	lemonSqueezyVectorHeader = "d25609ddc0d5d369bf88e5763d59cd89f207dcc06bc24af6e353920233994fed"
)

func TestLemonSqueezyVector(t *testing.T) {
	if got := hexMAC(lemonSqueezySecret, lemonSqueezyBody); got != lemonSqueezyVectorHeader {
		t.Fatalf("independent HMAC: got %s, want the vector's", got)
	}
	v, err := New(LemonSqueezy, []string{lemonSqueezySecret}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// X-Event-Name is unsigned: the type is the body's, whatever it says.
	out, err := v.Verify(
		t.Context(),
		Request{
			Body:    []byte(lemonSqueezyBody),
			Headers: map[string]string{"X-Signature": lemonSqueezyVectorHeader, "X-Event-Name": "subscription_payment_success"},
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := event.Envelope{ID: "body-" + replayKey([]byte(lemonSqueezyBody))[:32], Type: "order_created", ObjectID: "1", ObjectType: "orders"}
	if out.Envelope != want || out.ReplayKey != replayKey([]byte(lemonSqueezyBody)) {
		t.Errorf("got %+v (replay key %q), want %+v and the body's hash (no time is signed: the claim outlives the record)", out.Envelope, out.ReplayKey, want)
	}
	for _, tc := range []struct {
		name    string
		secrets []string
		sig     string
		body    string
		want    error
	}{
		{"rotation: the vector's secret second", []string{"new secret", lemonSqueezySecret}, lemonSqueezyVectorHeader, lemonSqueezyBody, nil},
		{"wrong secret", []string{"other"}, lemonSqueezyVectorHeader, lemonSqueezyBody, ErrNoMatch},
		{"body changed", []string{lemonSqueezySecret}, lemonSqueezyVectorHeader, lemonSqueezyBody + " ", ErrNoMatch},
		{"no signature", []string{lemonSqueezySecret}, "", lemonSqueezyBody, ErrMissingSignature},
		{"sha256= prefix", []string{lemonSqueezySecret}, "sha256=" + lemonSqueezyVectorHeader, lemonSqueezyBody, ErrMalformedSignature},
		{"not JSON", []string{lemonSqueezySecret}, hexMAC(lemonSqueezySecret, "oops"), "oops", event.ErrMalformed},
		{"no event name", []string{lemonSqueezySecret}, hexMAC(lemonSqueezySecret, `{"meta":{},"data":{}}`), `{"meta":{},"data":{}}`, event.ErrMissingID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(LemonSqueezy, tc.secrets, Options{})
			if err != nil {
				t.Fatal(err)
			}
			h := map[string]string{"x-event-name": "order_created"}
			if tc.sig != "" {
				h["x-signature"] = tc.sig
			}
			_, err = verify(v, []byte(tc.body), h)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	// A stamped sample is a fresh event, recorded under the id Stamp says.
	b, id, err := Stamp(LemonSqueezy, []byte(lemonSqueezyBody), "sample-1")
	if err != nil {
		t.Fatal(err)
	}
	env, err := verify(v, b, map[string]string{"x-signature": hexMAC(lemonSqueezySecret, string(b))})
	if err != nil || env.ID != id || id == want.ID || env.Type != "order_created" {
		t.Errorf("stamped: got %+v, %v; want id %s (not the vector's), order_created", env, err, id)
	}
}

package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Razorpay's vector, as the razorpay npm package 2.9.8's
// validateWebhookSignature accepted it (../shared/FACTS.md).
const (
	razorpaySecret       = "rzp_webhook_secret_123"
	razorpayBody         = `{"entity":"event","account_id":"acc_BFQ7uQEaa7j2z7","event":"payment.captured","contains":["payment"],"payload":{"payment":{"entity":{"id":"pay_DESlfW9H8K9uqM","amount":100}}},"created_at":1567674606}`
	razorpayVectorHeader = "7809a81b4d58e2fdaa70d1a7ed831b075f2b133a9812af8c1081bc1d761d0fc9"
)

// hexMAC computes a hex HMAC-SHA256 of body independently of the package.
func hexMAC(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func TestRazorpayVector(t *testing.T) {
	if got := hexMAC(razorpaySecret, razorpayBody); got != razorpayVectorHeader {
		t.Fatalf("independent HMAC: got %s, want the vector's", got)
	}
	v, err := New(Razorpay, []string{razorpaySecret}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]string{"X-Razorpay-Signature": razorpayVectorHeader, "X-Razorpay-Event-Id": "GhR5zMHc2LbQ8k"}
	out, err := v.Verify(t.Context(), Request{Body: []byte(razorpayBody), Headers: h})
	if err != nil {
		t.Fatal(err)
	}
	want := event.Envelope{ID: "GhR5zMHc2LbQ8k", Type: "payment.captured", Created: 1567674606, Account: "acc_BFQ7uQEaa7j2z7",
		ObjectID: "pay_DESlfW9H8K9uqM", ObjectType: "payment"}
	if out.Envelope != want {
		t.Errorf("got %+v, want %+v", out.Envelope, want)
	}
	if out.ReplayKey != replayKey([]byte(razorpayBody)) {
		t.Errorf("replay key: got %q, want the body's hash (the event id is unsigned)", out.ReplayKey)
	}
	// Without the event id header: an id made from the body, the same
	// for every retry of it.
	noID, err := v.Verify(t.Context(), Request{Body: []byte(razorpayBody), Headers: map[string]string{"x-razorpay-signature": razorpayVectorHeader}})
	if err != nil || noID.Envelope.ID != "body-"+out.ReplayKey[:32] {
		t.Errorf("no X-Razorpay-Event-Id: got id %q, %v; want body- and the body's hash", noID.Envelope.ID, err)
	}

	for _, tc := range []struct {
		name    string
		secrets []string
		sig     string
		body    string
		want    error
	}{
		{"rotation: the vector's secret second", []string{"new secret", razorpaySecret}, razorpayVectorHeader, razorpayBody, nil},
		{"uppercase hex", []string{razorpaySecret}, "7809A81B4D58E2FDAA70D1A7ED831B075F2B133A9812AF8C1081BC1D761D0FC9", razorpayBody, nil},
		{"wrong secret", []string{"rzp_other"}, razorpayVectorHeader, razorpayBody, ErrNoMatch},
		{"body changed", []string{razorpaySecret}, razorpayVectorHeader, razorpayBody + " ", ErrNoMatch},
		{"no signature", []string{razorpaySecret}, "", razorpayBody, ErrMissingSignature},
		{"short hex", []string{razorpaySecret}, "7809a81b", razorpayBody, ErrMalformedSignature},
		{"base64, not hex", []string{razorpaySecret}, "eAmoG01Y4v2qcNGn7YMbB1/7Kzqe", razorpayBody, ErrMalformedSignature},
		{"not JSON", []string{razorpaySecret}, hexMAC(razorpaySecret, "oops"), "oops", event.ErrMalformed},
		{"no event", []string{razorpaySecret}, hexMAC(razorpaySecret, `{"entity":"event"}`), `{"entity":"event"}`, event.ErrMissingID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(Razorpay, tc.secrets, Options{})
			if err != nil {
				t.Fatal(err)
			}
			h := map[string]string{"x-razorpay-event-id": "GhR5zMHc2LbQ8k"}
			if tc.sig != "" {
				h["x-razorpay-signature"] = tc.sig
			}
			_, err = verify(v, []byte(tc.body), h)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

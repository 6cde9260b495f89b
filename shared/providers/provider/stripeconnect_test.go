package provider

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStripeEndpoints: a connected account's event verifies with a
// Connect secret only, a platform event with a platform secret only;
// either signed with the other kind's secret is ErrWrongEndpoint, one
// signed with neither ErrNoMatch; thin events' context counts as their
// account; the mode check still holds for connected accounts.
func TestStripeEndpoints(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	opts := Options{Now: func() time.Time { return now }}
	platform, err := New(Stripe, []string{"whsec_platform", "whsec_platform_old"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	connect, err := New(Stripe, []string{"whsec_connect", "whsec_connect_old"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	both := StripeEndpoints{Platform: platform, Connect: connect}
	platformOnly := StripeEndpoints{Platform: platform}
	own := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid","livemode":false}`)
	connected := []byte(`{"id":"evt_2","object":"event","type":"invoice.paid","livemode":false,"account":"acct_1"}`)
	connectedLive := []byte(`{"id":"evt_3","object":"event","type":"invoice.paid","livemode":true,"account":"acct_1"}`)
	thinConnected := []byte(
		`{"id":"evt_4","object":"v2.core.event","type":"v1.invoice.paid","created":"2026-12-01T10:00:00.123Z","livemode":false,"context":"acct_1","related_object":{"id":"in_1","type":"invoice","url":"/v1/invoices/in_1"}}`,
	)
	for _, tc := range []struct {
		name        string
		v           StripeEndpoints
		body        []byte
		secret      string
		want        error
		wantAccount string
	}{
		{"platform event, platform secret", both, own, "whsec_platform", nil, ""},
		{"platform event, platform's previous secret", both, own, "whsec_platform_old", nil, ""},
		{"connected event, connect secret", both, connected, "whsec_connect", nil, "acct_1"},
		{"connected event, connect's previous secret", both, connected, "whsec_connect_old", nil, "acct_1"},
		{"connected event, platform secret", both, connected, "whsec_platform", ErrWrongEndpoint, ""},
		{"platform event, connect secret", both, own, "whsec_connect", ErrWrongEndpoint, ""},
		{"connected event, no connect secret configured", platformOnly, connected, "whsec_platform", ErrWrongEndpoint, ""},
		{"platform event, forged", both, own, "whsec_forged", ErrNoMatch, ""},
		{"connected event, forged", both, connected, "whsec_forged", ErrNoMatch, ""},
		{"connected live event at a test deployment", both, connectedLive, "whsec_connect", ErrWrongMode, ""},
		{"thin connected event, connect secret", both, thinConnected, "whsec_connect", nil, "acct_1"},
		{"thin connected event, platform secret", both, thinConnected, "whsec_platform", ErrWrongEndpoint, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.v.Verify(
				context.Background(),
				Request{Body: tc.body, Headers: map[string]string{"stripe-signature": SignStripe(tc.body, tc.secret, now)}},
			)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err == nil && out.Envelope.Account != tc.wantAccount {
				t.Errorf("account: got %q, want %q", out.Envelope.Account, tc.wantAccount)
			}
		})
	}
}

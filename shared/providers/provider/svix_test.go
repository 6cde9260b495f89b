package provider

import (
	"errors"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// TestSvixHeaderNames: the Standard Webhooks vector (Svix's too) verifies
// under Svix's header names exactly as under the specification's, and
// when both are present svix-* wins, header by header, as Svix's
// Webhook.verify reads them.
func TestSvixHeaderNames(t *testing.T) {
	at := Options{Now: func() time.Time { return time.Unix(standardTimestamp, 0) }}
	v, err := New(Standard, []string{standardSecret}, at)
	if err != nil {
		t.Fatal(err)
	}
	svix := map[string]string{"svix-id": standardID, "svix-timestamp": "1614265330", "svix-signature": standardSignature}
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    error
	}{
		// The vector's payload has no "type": verified, then refused for
		// want of one (TestStandardPublishedVector).
		{"svix-* names", svix, event.ErrMissingID},
		{"Svix-* in any case", map[string]string{"Svix-Id": standardID, "Svix-Timestamp": "1614265330", "Svix-Signature": standardSignature}, event.ErrMissingID},
		{"both, svix-* right", map[string]string{"svix-id": standardID, "svix-timestamp": "1614265330", "svix-signature": standardSignature,
			"webhook-id": "msg_other", "webhook-timestamp": "1", "webhook-signature": "v1,bm90IGl0"}, event.ErrMissingID},
		{"both, only webhook-* right: svix-* wins", map[string]string{"svix-id": "msg_other", "svix-timestamp": "1614265330", "svix-signature": standardSignature,
			"webhook-id": standardID, "webhook-timestamp": "1614265330", "webhook-signature": standardSignature}, ErrNoMatch},
		{"a mix: svix-id with webhook-timestamp and webhook-signature", map[string]string{"svix-id": standardID, "webhook-timestamp": "1614265330", "webhook-signature": standardSignature}, event.ErrMissingID},
		{"svix-* without a signature", map[string]string{"svix-id": standardID, "svix-timestamp": "1614265330"}, ErrMissingSignature},
		{"svix-* without an id", map[string]string{"svix-timestamp": "1614265330", "svix-signature": standardSignature}, event.ErrMissingID},
		{"svix-timestamp not seconds", map[string]string{"svix-id": standardID, "svix-timestamp": "soon", "svix-signature": standardSignature}, ErrMalformedSignature},
		{"svix-* stale", svix, ErrTooOld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := v
			if tc.want == ErrTooOld {
				if v, err = New(Standard, []string{standardSecret}, Options{Now: func() time.Time { return time.Unix(standardTimestamp+301, 0) }}); err != nil {
					t.Fatal(err)
				}
			}
			// Check reads the same names: what it refuses, Verify refuses
			// alike.
			if err := checkStandard(Request{Headers: tc.headers}); err != nil && !errors.Is(err, tc.want) {
				t.Errorf("Check: got %v, want nil or %v", err, tc.want)
			}
			if _, err := verify(v, []byte(standardBody), tc.headers); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	// A Svix sender's event: its id and type read as any Standard
	// Webhooks sender's.
	body := []byte(`{"type":"user.created","data":{"id":"user_29w83sxmDNGwOuEthce5gg56FcC"}}`)
	h, err := Sign(Standard, standardSecret, Delivery{ID: "msg_2", Body: body, Now: time.Unix(standardTimestamp, 0)})
	if err != nil {
		t.Fatal(err)
	}
	renamed := map[string]string{"svix-id": h["webhook-id"], "svix-timestamp": h["webhook-timestamp"], "svix-signature": h["webhook-signature"]}
	env, err := verify(v, body, renamed)
	if want := (event.Envelope{ID: "msg_2", Type: "user.created", Created: standardTimestamp}); err != nil || env != want {
		t.Errorf("a Svix sender's event: got %+v, %v; want %+v", env, err, want)
	}
}

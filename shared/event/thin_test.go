package event_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
)

// thinSample is a thin event as Stripe's event destinations send it (the
// shape of Stripe's v2 Event: an RFC 3339 created, related_object, and
// context for a connected account).
const thinSample = `{"id":"evt_test_65R9Ijk8d0bt5ICnZh1QJAPgCCt","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","livemode":false,"created":"2024-09-17T06:20:52.246Z","context":"acct_1Q","reason":{"type":"request","request":{"id":"req_1","idempotency_key":"k"}},"related_object":{"id":"mtr_test_61R9","type":"billing.meter","url":"/v1/billing/meters/mtr_test_61R9"}}`

func TestDecodeThinEnvelope(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		want    event.Envelope
		wantErr error
	}{
		{
			name:    "Stripe's thin event",
			payload: thinSample,
			want: event.Envelope{ID: "evt_test_65R9Ijk8d0bt5ICnZh1QJAPgCCt", Type: "v1.billing.meter.error_report_triggered",
				Created: 1726554052, Account: "acct_1Q", ObjectID: "mtr_test_61R9", ObjectType: "billing.meter"},
		},
		{
			name:    "live, no context, an offset time",
			payload: `{"id":"evt_2","object":"v2.core.event","type":"v1.customer.created","livemode":true,"created":"2026-09-30T12:00:00+02:00","related_object":{"id":"cus_1","type":"customer"}}`,
			want:    event.Envelope{ID: "evt_2", Type: "v1.customer.created", Created: 1790762400, Livemode: true, ObjectID: "cus_1", ObjectType: "customer"},
		},
		{name: "snapshot event", payload: `{"id":"evt_1","object":"event","type":"invoice.paid","created":5}`, wantErr: event.ErrMalformed},
		{name: "created as Unix seconds", payload: `{"id":"evt_1","object":"v2.core.event","type":"v1.customer.created","created":1726554052}`, wantErr: event.ErrMalformed},
		{name: "created not RFC 3339", payload: `{"id":"evt_1","object":"v2.core.event","type":"v1.customer.created","created":"17 Sep 2024"}`, wantErr: event.ErrMalformed},
		{name: "no created", payload: `{"id":"evt_1","object":"v2.core.event","type":"v1.customer.created"}`, wantErr: event.ErrMalformed},
		{name: "no id", payload: `{"object":"v2.core.event","type":"v1.customer.created","created":"2024-09-17T06:20:52Z"}`, wantErr: event.ErrMissingID},
		{name: "no type", payload: `{"id":"evt_1","object":"v2.core.event","created":"2024-09-17T06:20:52Z"}`, wantErr: event.ErrMissingID},
		{name: "related_object not an object", payload: `{"id":"evt_1","object":"v2.core.event","type":"t","created":"2024-09-17T06:20:52Z","related_object":"cus_1"}`, wantErr: event.ErrMalformed},
		{name: "null", payload: `null`, wantErr: event.ErrMalformed},
		{name: "not JSON", payload: `evt_1`, wantErr: event.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := event.DecodeThinEnvelope([]byte(tc.payload))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %+v, %v; want %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestDecodeAnyEnvelopeReadsBothKinds: a thin event by its object, and
// everything else exactly as DecodeEnvelope reads it, errors included.
func TestDecodeAnyEnvelopeReadsBothKinds(t *testing.T) {
	for _, payload := range []string{
		thinSample,
		`{"id":"evt_1","object":"event","type":"invoice.paid","created":5,"livemode":true,"api_version":"2025-02-24.acacia","data":{"object":{"id":"in_1","object":"invoice"}}}`,
		`{"id":"evt_1","type":"invoice.paid","created":5}`,
		`{"id":"evt_1","object":"charge","type":"invoice.paid"}`,
		`{"id":"evt_1","object":5,"type":"invoice.paid"}`,
		`{"object":"event","type":"invoice.paid"}`,
		`[]`,
		``,
	} {
		got, err := event.DecodeAnyEnvelope([]byte(payload))
		decode := event.DecodeEnvelope
		if strings.Contains(payload, event.ObjectThinEvent) {
			decode = event.DecodeThinEnvelope
		}
		want, wantErr := decode([]byte(payload))
		if got != want || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", payload, got, err, want, wantErr)
		}
	}
}

package event_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
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

func TestSnapshotType(t *testing.T) {
	for _, tc := range []struct {
		thin, want string
		ok         bool
	}{
		{"v1.customer.subscription.updated", "customer.subscription.updated", true},
		{"v1.invoice.paid", "invoice.paid", true},
		{event.TypeEventGenerationFailureResolved, "", false},
		{"v1.", "", false},
		{"invoice.paid", "", false},
		{"", "", false},
	} {
		t.Run(tc.thin, func(t *testing.T) {
			got, ok := event.SnapshotType(tc.thin)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("SnapshotType(%q): got %q, %v; want %q, %v", tc.thin, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestIsThin(t *testing.T) {
	for _, tc := range []struct {
		name, payload string
		want          bool
	}{
		{"thin event", thinSample, true},
		{"snapshot event", `{"id":"evt_1","object":"event","type":"invoice.paid","created":5}`, false},
		{"no object", `{"id":"evt_1"}`, false},
		{"object not a string", `{"object":7}`, false},
		{"not JSON", `v2.core.event`, false},
		{"null", `null`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := event.IsThin([]byte(tc.payload)); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDecodeThin(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		want    event.Thin
		wantErr error
	}{
		{
			name:    "Stripe's thin event of a connected account",
			payload: thinSample,
			want: event.Thin{ID: "evt_test_65R9Ijk8d0bt5ICnZh1QJAPgCCt", Type: "v1.billing.meter.error_report_triggered",
				Created: time.Date(2024, 9, 17, 6, 20, 52, 246e6, time.UTC), Context: "acct_1Q",
				Related: event.RelatedObject{ID: "mtr_test_61R9", Type: "billing.meter", URL: "/v1/billing/meters/mtr_test_61R9"}},
		},
		{
			name: "naming its snapshot twin",
			payload: `{"id":"evt_t","object":"v2.core.event","type":"v1.invoice.paid","livemode":true,"created":"2026-12-01T12:00:00.5Z",` +
				`"snapshot_event":"evt_s","related_object":{"id":"in_1","type":"invoice","url":"/v1/invoices/in_1"}}`,
			want: event.Thin{ID: "evt_t", Type: "v1.invoice.paid", Created: time.Date(2026, 12, 1, 12, 0, 0, 5e8, time.UTC), Livemode: true,
				Related: event.RelatedObject{ID: "in_1", Type: "invoice", URL: "/v1/invoices/in_1"}, SnapshotEvent: "evt_s"},
		},
		{name: "snapshot event", payload: `{"id":"evt_1","object":"event","type":"invoice.paid","created":5}`, wantErr: event.ErrMalformed},
		{name: "snapshot_event not a string", payload: `{"id":"evt_1","object":"v2.core.event","type":"v1.invoice.paid","created":"2024-09-17T06:20:52Z","snapshot_event":1}`, wantErr: event.ErrMalformed},
		{name: "url not a string", payload: `{"id":"evt_1","object":"v2.core.event","type":"v1.invoice.paid","created":"2024-09-17T06:20:52Z","related_object":{"url":1}}`, wantErr: event.ErrMalformed},
		{name: "no id", payload: `{"object":"v2.core.event","type":"v1.invoice.paid","created":"2024-09-17T06:20:52Z"}`, wantErr: event.ErrMissingID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := event.DecodeThin([]byte(tc.payload))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("got %+v, %v; want %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !got.Created.Equal(tc.want.Created) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
			got.Created = tc.want.Created
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCreatedSecond(t *testing.T) {
	for _, tc := range []struct {
		in   time.Time
		want int64
	}{
		{time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), 1796126400},
		{time.Date(2026, 12, 1, 12, 0, 0, 500e6, time.UTC), 1796126400},
		{time.Date(2026, 12, 1, 12, 0, 0, 999999999, time.UTC), 1796126400},
		{time.Date(2026, 12, 1, 13, 0, 1, 0, time.FixedZone("+01:00", 3600)), 1796126401},
	} {
		t.Run(tc.in.Format(time.RFC3339Nano), func(t *testing.T) {
			if got := event.CreatedSecond(tc.in); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// TestThinSnapshot: the snapshot form of a thin event reads as its
// snapshot twin would, through DecodeEnvelope.
func TestThinSnapshot(t *testing.T) {
	obj := json.RawMessage(`{"id":"sub_1","object":"subscription","customer":"cus_1","status":"active"}`)
	thin := event.Thin{ID: "evt_t", Type: "v1.customer.subscription.updated", Created: time.Date(2026, 12, 1, 12, 0, 0, 500e6, time.UTC),
		Related: event.RelatedObject{ID: "sub_1", Type: "subscription", URL: "/v1/subscriptions/sub_1"}}
	for _, tc := range []struct {
		name    string
		id      string
		context string
		want    event.Envelope
	}{
		{name: "its own id", id: "evt_t",
			want: event.Envelope{ID: "evt_t", Type: "customer.subscription.updated", Created: 1796126400, ObjectID: "sub_1", ObjectType: "subscription", Customer: "cus_1"}},
		{name: "its twin's id, of a connected account", id: "evt_s", context: "acct_1",
			want: event.Envelope{ID: "evt_s", Type: "customer.subscription.updated", Created: 1796126400, Account: "acct_1", ObjectID: "sub_1", ObjectType: "subscription", Customer: "cus_1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := thin
			th.Context = tc.context
			b, err := th.Snapshot(tc.id, obj)
			if err != nil {
				t.Fatal(err)
			}
			env, err := event.DecodeEnvelope(b)
			if err != nil {
				t.Fatalf("decode %s: %v", b, err)
			}
			if env.ID != tc.want.ID || env.Type != tc.want.Type || env.Created != tc.want.Created || env.Account != tc.want.Account ||
				env.ObjectID != tc.want.ObjectID || env.ObjectType != tc.want.ObjectType || env.Customer != tc.want.Customer {
				t.Errorf("got %+v, want %+v", env, tc.want)
			}
			var data struct {
				Data struct {
					Object json.RawMessage `json:"object"`
				} `json:"data"`
			}
			if err := json.Unmarshal(b, &data); err != nil || string(data.Data.Object) != string(obj) {
				t.Errorf("data.object: got %s, %v; want %s", data.Data.Object, err, obj)
			}
		})
	}
	t.Run("an API v2 event's own type", func(t *testing.T) {
		th := thin
		th.Type = event.TypeEventGenerationFailureResolved
		if b, err := th.Snapshot("evt_t", obj); err == nil {
			t.Errorf("got %s, want an error", b)
		}
	})
}

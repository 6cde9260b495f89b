package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

type Envelope = event.Envelope

func TestDecodeEnvelope(t *testing.T) {
	sample, err := os.ReadFile("testdata/subscription_updated.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		payload string
		want    Envelope
		wantErr error
	}{
		{
			name:    "sample subscription event",
			payload: string(sample),
			want: Envelope{ID: "evt_1", Type: "customer.subscription.updated", Created: 1700000000,
				APIVersion: "2025-02-24.acacia", ObjectID: "sub_1Pgc6rB7WZ01zgkWNy0Cn5nw", ObjectType: "subscription", Customer: "cus_QXg1o8vcGmoR32"},
		},
		{
			name:    "a customer's event: the customer is the object",
			payload: `{"id":"evt_c","type":"customer.updated","data":{"object":{"id":"cus_1","object":"customer"}}}`,
			want:    Envelope{ID: "evt_c", Type: "customer.updated", ObjectID: "cus_1", ObjectType: "customer", Customer: "cus_1"},
		},
		{
			name:    "an expanded customer",
			payload: `{"id":"evt_x","type":"invoice.paid","data":{"object":{"id":"in_1","object":"invoice","customer":{"id":"cus_2","object":"customer"}}}}`,
			want:    Envelope{ID: "evt_x", Type: "invoice.paid", ObjectID: "in_1", ObjectType: "invoice", Customer: "cus_2"},
		},
		{
			name:    "a customer of another shape names none",
			payload: `{"id":"evt_n","type":"invoice.paid","data":{"object":{"id":"in_1","object":"invoice","customer":7}}}`,
			want:    Envelope{ID: "evt_n", Type: "invoice.paid", ObjectID: "in_1", ObjectType: "invoice"},
		},
		{
			name:    "a null customer",
			payload: `{"id":"evt_0","type":"invoice.paid","data":{"object":{"id":"in_1","object":"invoice","customer":null}}}`,
			want:    Envelope{ID: "evt_0", Type: "invoice.paid", ObjectID: "in_1", ObjectType: "invoice"},
		},
		{
			name:    "other API version and connect account",
			payload: `{"id":"evt_2","object":"event","type":"invoice.paid","created":5,"livemode":true,"api_version":"2020-08-27","account":"acct_9","data":{"object":{"object":"invoice","id":"in_1","lines":{"data":[1,2,{"x":null}]}}}}`,
			want: Envelope{
				ID:         "evt_2",
				Type:       "invoice.paid",
				Created:    5,
				Livemode:   true,
				APIVersion: "2020-08-27",
				Account:    "acct_9",
				ObjectID:   "in_1",
				ObjectType: "invoice",
			},
		},
		{
			name:    "escaped strings and nulls",
			payload: ` {"id":"evt_\u0033","type":"a\/b","api_version":null,"account":null,"data":{"object":null}} `,
			want:    Envelope{ID: "evt_3", Type: "a/b"},
		},
		{
			name:    "invalid UTF-8 reads as U+FFFD, as every encoding/json reader reads it",
			payload: "{\"id\":\"evt_\xff\",\"type\":\"t\"}",
			want:    Envelope{ID: "evt_\uFFFD", Type: "t"},
		},
		{name: "not JSON", payload: `id=evt_1`, wantErr: event.ErrMalformed},
		{name: "empty", payload: ``, wantErr: event.ErrMalformed},
		{name: "top-level null", payload: `null`, wantErr: event.ErrMalformed},
		{name: "truncated", payload: string(sample[:len(sample)-3]), wantErr: event.ErrMalformed},
		{name: "array", payload: `[{"id":"evt_1"}]`, wantErr: event.ErrMalformed},
		{name: "trailing data", payload: `{"id":"evt_1","type":"x"} {}`, wantErr: event.ErrMalformed},
		{name: "created as string", payload: `{"id":"evt_1","type":"x","created":"5"}`, wantErr: event.ErrMalformed},
		{name: "created as float", payload: `{"id":"evt_1","type":"x","created":5.5}`, wantErr: event.ErrMalformed},
		{name: "livemode as string", payload: `{"id":"evt_1","type":"x","livemode":"true"}`, wantErr: event.ErrMalformed},
		{name: "data not an object", payload: `{"id":"evt_1","type":"x","data":[]}`, wantErr: event.ErrMalformed},
		{name: "data.object not an object", payload: `{"id":"evt_1","type":"x","data":{"object":"sub_1"}}`, wantErr: event.ErrMalformed},
		{name: "data.object.id not a string", payload: `{"id":"evt_1","type":"x","data":{"object":{"id":5}}}`, wantErr: event.ErrMalformed},
		{name: "not an event", payload: `{"id":"cus_1","object":"customer","type":"x"}`, wantErr: event.ErrMalformed},
		{name: "raw control character", payload: "{\"id\":\"evt\n1\",\"type\":\"x\"}", wantErr: event.ErrMalformed},
		{name: "missing id", payload: `{"type":"invoice.paid","created":1}`, wantErr: event.ErrMissingID},
		{name: "missing type", payload: `{"id":"evt_1"}`, wantErr: event.ErrMissingID},
		{name: "empty object", payload: `{}`, wantErr: event.ErrMissingID},

		// Repeated keys: encoding/json's rule, the one every reader of the
		// payload applies (see the package doc).
		{name: "repeated id: the last wins", payload: `{"id":"evt_1","type":"t","id":"evt_2"}`, want: Envelope{ID: "evt_2", Type: "t"}},
		{
			name:    "repeated type: the last wins",
			payload: `{"id":"evt_1","type":"invoice.paid","type":"invoice.voided"}`,
			want:    Envelope{ID: "evt_1", Type: "invoice.voided"},
		},
		{name: "repeated id, the first not a string", payload: `{"id":10,"id":"evt_1","type":"t"}`, wantErr: event.ErrMalformed},
		{name: "id spelled with an escape", payload: `{"id":"evt_1","type":"t","\u0069d":"evt_2"}`, want: Envelope{ID: "evt_2", Type: "t"}},
		{name: "id in another case", payload: `{"ID":"evt_1","Type":"t"}`, want: Envelope{ID: "evt_1", Type: "t"}},
		{name: "exact and folded keys: the last wins", payload: `{"id":"evt_1","ID":"evt_2","type":"t"}`, want: Envelope{ID: "evt_2", Type: "t"}},
		{
			name:    "repeated data: the last whole data.object wins, as the mirror reads it",
			payload: `{"id":"evt_1","type":"t","data":{"object":{"id":"o","object":"subscription"}},"data":{"object":{"id":"p"}}}`,
			want:    Envelope{ID: "evt_1", Type: "t", ObjectID: "p"},
		},
		{
			name:    "repeated data.object: the last wins",
			payload: `{"id":"evt_1","type":"t","data":{"object":{"id":"o"},"object":null}}`,
			want:    Envelope{ID: "evt_1", Type: "t"},
		},
		{
			name:    "repeated data.object.id: the last wins",
			payload: `{"id":"evt_1","type":"t","data":{"object":{"id":"o","id":"p"}}}`,
			want:    Envelope{ID: "evt_1", Type: "t", ObjectID: "p"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := event.DecodeEnvelope([]byte(tc.payload))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error: got %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestMalformedErrorsQuoteNoPayload: the receiver logs the error, and a
// payload must never reach a log.
func TestMalformedErrorsQuoteNoPayload(t *testing.T) {
	secret := "sk_live_" + string(bytes.Repeat([]byte("x"), 40))
	for _, payload := range []string{
		`{"id":"evt_1","type":"t","object":"` + secret + `"}`,
		`{"id":"evt_1","type":"t","created":"` + secret + `"}`,
		`{"id":"evt_1","type":"t","data":{"object":"` + secret + `"}}`,
		`{"id":"evt_1","type":"t",` + secret + `}`,
	} {
		_, err := event.DecodeEnvelope([]byte(payload))
		if !errors.Is(err, event.ErrMalformed) {
			t.Fatalf("%s: got %v, want ErrMalformed", payload, err)
		}
		if bytes.Contains([]byte(err.Error()), []byte(secret)) {
			t.Errorf("error quotes the payload: %v", err)
		}
	}
}

// stripeReading is how a team's effect reads the payload with stripe-go: a
// stripe.Event, and data.object decoded from Data.Raw into a struct (as
// into a stripe.Subscription). ok is false when stripe-go cannot decode it.
// hasData is false when stripe-go finds no data (a null or absent "data").
func stripeReading(payload []byte) (env Envelope, object string, hasData, ok bool) {
	var e stripe.Event
	if json.Unmarshal(payload, &e) != nil {
		return Envelope{}, "", false, false
	}
	env = Envelope{ID: e.ID, Type: string(e.Type), Created: e.Created, Livemode: e.Livemode, APIVersion: e.APIVersion, Account: e.Account}
	if e.Data == nil {
		return env, e.Object, false, true
	}
	var o struct {
		ID, Object string
		Customer   json.RawMessage
	}
	if len(e.Data.Raw) > 0 && json.Unmarshal(e.Data.Raw, &o) != nil {
		return Envelope{}, "", false, false
	}
	env.ObjectID, env.ObjectType = o.ID, o.Object
	env.Customer = event.CustomerOf(o.Object, o.ID, o.Customer)
	return env, e.Object, true, true
}

// FuzzDecodeEnvelope is a crash and forgery check: DecodeEnvelope never
// panics, accepts only valid JSON with an id and a type, and reads every
// payload as the pipeline's later readers do: the same id, type, object and
// the rest as stripe-go (what a team's effect decodes), and the same object
// as the mirror (what the processor writes, keyed by that object). A payload
// that read as one event to the receiver and as another to the processor
// could order, route or apply an event under the wrong object.
func FuzzDecodeEnvelope(f *testing.F) {
	sample, err := os.ReadFile("testdata/subscription_updated.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)
	f.Add([]byte(`{"id":"evt_\u0031","type":"t","created":-0,"livemode":null,"data":{"object":{"id":"x","object":"y"}}}`))
	f.Add([]byte(`{"id":"evt_1","type":"t","created":1e3}`))
	f.Add([]byte(`{"id":"evt_1","type":"t","data":[]}`))
	f.Add([]byte(`{"a":[1,-2.5e+3,"\ud83d\ude00",{"b":{}}],"id":"e","type":"t"}`))
	f.Add([]byte(`{"id":"e","id":"f","type":"t"}`))
	f.Add([]byte(`{"ID":"e","iD":"f","Type":"t","data":{"Object":{"Id":"o"}}}`))
	f.Add([]byte(`{"id":"e","type":"t","data":{"object":{"id":"o","object":"s"}},"data":{"object":{"id":"p"}}}`))
	f.Add([]byte(`{"id":"e","type":"t","data":{"object":{"id":"o"}},"data":null}`))
	f.Add([]byte(`{"id":"e","type":"t","data":{"object":{"id":"o"},"object":{"id":"p","id":"q"}}}`))
	f.Add([]byte(`null`))
	m := &mirror.Mirror{Table: "mirror", Now: func() time.Time { return time.Unix(1700000000, 0) }}
	f.Fuzz(func(t *testing.T, payload []byte) {
		got, err := event.DecodeEnvelope(payload)
		switch {
		case err == nil:
			if !json.Valid(payload) {
				t.Fatalf("%q is not valid JSON, DecodeEnvelope accepts it as %+v", payload, got)
			}
			if got.ID == "" || got.Type == "" {
				t.Fatalf("%q: accepted without an id or type: %+v", payload, got)
			}
		case errors.Is(err, event.ErrMalformed), errors.Is(err, event.ErrMissingID):
			if got != (Envelope{}) {
				t.Fatalf("%q: error %v with a non-empty envelope %+v", payload, err, got)
			}
		default:
			t.Fatalf("%q: error %v is neither ErrMalformed nor ErrMissingID", payload, err)
		}

		ref, object, hasData, ok := stripeReading(payload)
		if ok {
			switch {
			case errors.Is(err, event.ErrMalformed) && (object == "" || object == "event") && hasData:
				t.Fatalf("%q: stripe-go reads it as %+v, DecodeEnvelope rejects it: %v", payload, ref, err)
			case errors.Is(err, event.ErrMissingID) && ref.ID != "" && ref.Type != "":
				t.Fatalf("%q: stripe-go reads id %q and type %q, DecodeEnvelope finds none", payload, ref.ID, ref.Type)
			case err == nil:
				read := got
				if !hasData {
					// stripe-go keeps no data for {"data":{...},"data":null},
					// the mirror the first (checked below): compare the rest.
					read.ObjectID, read.ObjectType, read.Customer = "", "", ""
				}
				if read != ref {
					t.Fatalf("%q: DecodeEnvelope reads %+v, stripe-go %+v", payload, read, ref)
				}
			}
		}

		if err != nil {
			return
		}
		rec := event.NewRecord(event.ProviderStripe, got, payload, "", event.SourceWebhook, event.StatusProcessing, time.Unix(1700000000, 0))
		rec.Type = "customer.updated" // a type the mirror handles
		plan, err := m.Plan(rec, payload)
		// A payload the mirror cannot read fails permanently in the
		// processor and writes nothing; one it reads must name the same
		// object.
		if err == nil && plan.Key != got.ObjectID {
			t.Fatalf("%q: DecodeEnvelope reads object %q, the mirror writes %q", payload, got.ObjectID, plan.Key)
		}
	})
}

// BenchmarkDecodeEnvelope measures the receiver's JSON decoding of a
// realistic event, compact and pretty-printed as Stripe sends it, beside a
// one-pass encoding/json decode into a nested struct: the price of reading
// data.object in the mirror's two steps.
func BenchmarkDecodeEnvelope(b *testing.B) {
	sample, err := os.ReadFile("testdata/subscription_updated.json")
	if err != nil {
		b.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, sample, "", "  "); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		payload []byte
	}{{"compact", sample}, {"indented", indented.Bytes()}} {
		b.Run(tc.name+"/DecodeEnvelope", func(b *testing.B) {
			b.SetBytes(int64(len(tc.payload)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := event.DecodeEnvelope(tc.payload); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/one_pass_struct", func(b *testing.B) {
			b.SetBytes(int64(len(tc.payload)))
			b.ReportAllocs()
			for b.Loop() {
				var e struct {
					ID, Type, Object string
					APIVersion       string `json:"api_version"`
					Account          string
					Created          int64
					Livemode         bool
					Data             struct {
						Object struct{ ID, Object string }
					}
				}
				if err := json.Unmarshal(tc.payload, &e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

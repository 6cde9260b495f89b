package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

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
				APIVersion: "2025-02-24.acacia", ObjectID: "sub_1Pgc6rB7WZ01zgkWNy0Cn5nw", ObjectType: "subscription"},
		},
		{
			name:    "other API version and connect account",
			payload: `{"id":"evt_2","object":"event","type":"invoice.paid","created":5,"livemode":true,"api_version":"2020-08-27","account":"acct_9","data":{"object":{"object":"invoice","id":"in_1","lines":{"data":[1,2,{"x":null}]}}}}`,
			want:    Envelope{ID: "evt_2", Type: "invoice.paid", Created: 5, Livemode: true, APIVersion: "2020-08-27", Account: "acct_9", ObjectID: "in_1", ObjectType: "invoice"},
		},
		{
			name:    "escaped strings and nulls",
			payload: ` {"id":"evt_\u0033","type":"a\/b","api_version":null,"account":null,"data":{"object":null}} `,
			want:    Envelope{ID: "evt_3", Type: "a/b"},
		},
		{name: "not JSON", payload: `id=evt_1`, wantErr: ErrMalformed},
		{name: "truncated", payload: string(sample[:len(sample)-3]), wantErr: ErrMalformed},
		{name: "array", payload: `[{"id":"evt_1"}]`, wantErr: ErrMalformed},
		{name: "trailing data", payload: `{"id":"evt_1","type":"x"} {}`, wantErr: ErrMalformed},
		{name: "created as string", payload: `{"id":"evt_1","type":"x","created":"5"}`, wantErr: ErrMalformed},
		{name: "created as float", payload: `{"id":"evt_1","type":"x","created":5.5}`, wantErr: ErrMalformed},
		{name: "livemode as string", payload: `{"id":"evt_1","type":"x","livemode":"true"}`, wantErr: ErrMalformed},
		{name: "not an event", payload: `{"id":"cus_1","object":"customer","type":"x"}`, wantErr: ErrMalformed},
		{name: "raw control character", payload: "{\"id\":\"evt\n1\",\"type\":\"x\"}", wantErr: ErrMalformed},
		{name: "duplicated id", payload: `{"id":"evt_1","type":"t","id":"evt_2"}`, wantErr: ErrMalformed},
		{name: "duplicated id, the first not a string", payload: `{"id":10,"id":"","type":"t"}`, wantErr: ErrMalformed},
		{name: "duplicated id, spelled with an escape", payload: `{"id":"evt_1","type":"t","\u0069d":"evt_2"}`, wantErr: ErrMalformed},
		{name: "duplicated type", payload: `{"id":"evt_1","type":"invoice.paid","type":"invoice.voided"}`, wantErr: ErrMalformed},
		{name: "duplicated data", payload: `{"id":"evt_1","type":"t","data":null,"data":{"object":{"id":"o"}}}`, wantErr: ErrMalformed},
		{name: "duplicated data.object", payload: `{"id":"evt_1","type":"t","data":{"object":null,"object":{"id":"o"}}}`, wantErr: ErrMalformed},
		{name: "duplicated data.object.id", payload: `{"id":"evt_1","type":"t","data":{"object":{"id":"o","id":"p"}}}`, wantErr: ErrMalformed},
		{
			name:    "other keys may repeat",
			payload: `{"id":"evt_1","type":"t","x":1,"x":2,"data":{"y":1,"y":2,"object":{"id":"o","z":1,"z":2}}}`,
			want:    Envelope{ID: "evt_1", Type: "t", ObjectID: "o"},
		},
		{name: "missing id", payload: `{"type":"invoice.paid","created":1}`, wantErr: ErrMissingID},
		{name: "missing type", payload: `{"id":"evt_1"}`, wantErr: ErrMissingID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeEnvelope([]byte(tc.payload))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error: got %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// oracleEnvelope decodes with encoding/json and exact key matching: the
// semantics DecodeEnvelope must have. ok is false when the document is not
// valid JSON or an envelope field has the wrong type.
func oracleEnvelope(payload []byte) (e Envelope, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return Envelope{}, false
	}
	if dec.More() || dec.InputOffset() != int64(len(bytes.TrimRight(payload, " \t\r\n"))) {
		return Envelope{}, false
	}
	if !json.Valid(payload) {
		return Envelope{}, false
	}
	m, isObj := top.(map[string]any)
	if !isObj {
		return Envelope{}, false
	}
	if duplicatedEnvelopeKey(payload, 0) {
		return Envelope{}, false
	}
	str := func(v any, present bool) (string, bool) {
		if !present || v == nil {
			return "", true
		}
		s, isStr := v.(string)
		return s, isStr
	}
	var object string
	fields := []struct {
		key string
		dst *string
	}{{"id", &e.ID}, {"object", &object}, {"type", &e.Type}, {"api_version", &e.APIVersion}, {"account", &e.Account}}
	for _, f := range fields {
		v, present := m[f.key]
		s, good := str(v, present)
		if !good {
			return Envelope{}, false
		}
		*f.dst = s
	}
	if v, present := m["created"]; present && v != nil {
		n, isNum := v.(json.Number)
		if !isNum {
			return Envelope{}, false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return Envelope{}, false
		}
		e.Created = i
	}
	if v, present := m["livemode"]; present && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			return Envelope{}, false
		}
		e.Livemode = b
	}
	if v, present := m["data"]; present && v != nil {
		d, isObj := v.(map[string]any)
		if !isObj {
			return Envelope{}, false
		}
		if ov, present := d["object"]; present && ov != nil {
			o, isObj := ov.(map[string]any)
			if !isObj {
				return Envelope{}, false
			}
			for _, f := range []struct {
				key string
				dst *string
			}{{"id", &e.ObjectID}, {"object", &e.ObjectType}} {
				v, present := o[f.key]
				s, good := str(v, present)
				if !good {
					return Envelope{}, false
				}
				*f.dst = s
			}
		}
	}
	if object != "" && object != "event" {
		return Envelope{}, false
	}
	return e, true
}

// envelopeKeys are the keys the envelope reads, at the top level (0), in
// data (1) and in data.object (2).
var envelopeKeys = []map[string]bool{
	{"id": true, "object": true, "type": true, "api_version": true, "account": true, "created": true, "livemode": true, "data": true},
	{"object": true},
	{"id": true, "object": true},
}

// duplicatedEnvelopeKey reports whether the object in raw (at level) or the
// data or data.object inside it has one of the envelope's keys twice, the
// keys compared unescaped, as encoding/json reads them.
func duplicatedEnvelopeKey(raw []byte, level int) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if envelopeKeys[level][key] {
			if seen[key] {
				return true
			}
			seen[key] = true
		}
		if (level == 0 && key == "data") || (level == 1 && key == "object") {
			if duplicatedEnvelopeKey(v, level+1) {
				return true
			}
		}
	}
	return false
}

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
	f.Fuzz(func(t *testing.T, payload []byte) {
		got, err := DecodeEnvelope(payload)
		want, ok := oracleEnvelope(payload)
		if !ok {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("oracle rejects %q, DecodeEnvelope: %+v, %v", payload, got, err)
			}
			return
		}
		if errors.Is(err, ErrMalformed) {
			t.Fatalf("oracle accepts %q as %+v, DecodeEnvelope: %v", payload, want, err)
		}
		if want.ID == "" || want.Type == "" {
			if !errors.Is(err, ErrMissingID) {
				t.Fatalf("%q has no id or type, DecodeEnvelope: %+v, %v", payload, got, err)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("%q: got %+v, %v; want %+v", payload, got, err, want)
		}
	})
}

func TestDecodeEnvelopeInvalidUTF8(t *testing.T) {
	payload := []byte("{\"id\":\"evt_\xff\",\"type\":\"t\"}")
	got, err := DecodeEnvelope(payload)
	want, _ := oracleEnvelope(payload)
	if err != nil || got != want {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
}

// BenchmarkDecodeEnvelope measures the receiver's one JSON pass over a
// realistic, pretty-printed event, beside encoding/json decoding only the
// same envelope fields (which must still tokenize all of data.object).
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
				if _, err := DecodeEnvelope(tc.payload); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/json.Unmarshal", func(b *testing.B) {
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

// TestDecodeEnvelopeStringBoundaries puts every byte that ends a string or
// needs a closer look at every offset of the eight-byte fast path, in a
// skipped value, a key and an envelope field, and holds the result to the
// oracle.
func TestDecodeEnvelopeStringBoundaries(t *testing.T) {
	specials := []string{`"`, `\\`, `\"`, `\u0041`, "\x00", "\x1f", "\n", " ", "\x7f", "\x80", "\xff", "é", "\\x"}
	for pos := range 18 {
		for _, sp := range specials {
			str := strings.Repeat("a", pos) + sp + strings.Repeat("b", 17-pos)
			for _, doc := range []string{
				`{"id":"evt_1","type":"t","data":{"object":{"id":"o","x":"` + str + `"}}}`,
				`{"id":"evt_1","type":"t","data":{"object":{"id":"o","` + str + `":1}}}`,
				`{"id":"evt_` + str + `","type":"t"}`,
				`{"id":"evt_1","type":"t",` + strings.Repeat(" ", pos) + `"x":` + strings.Repeat(" ", 17-pos) + `1}`,
			} {
				got, err := DecodeEnvelope([]byte(doc))
				want, ok := oracleEnvelope([]byte(doc))
				if ok != (err == nil) || got != want {
					t.Errorf("%q: got %+v, %v; oracle %+v, valid=%v", doc, got, err, want, ok)
				}
			}
		}
	}
}

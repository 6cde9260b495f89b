package ddbattr_test

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

func TestPack(t *testing.T) {
	json := func(n int) []byte { return []byte(`"` + strings.Repeat("a", n-2) + `"`) }
	noise := make([]byte, ddbattr.MaxStored+(64<<10))
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		in       []byte
		wantNone bool
	}{
		{name: "nothing: gzipped all the same", in: nil},
		{name: "small: gzipped", in: json(100)},
		{name: "8 KB: gzipped", in: json(8 << 10)},
		{name: "a megabyte that compresses: gzipped", in: json(1 << 20)},
		{name: "too large even gzipped: not stored", in: noise, wantNone: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stored, err := ddbattr.Pack(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if (stored == nil) != tc.wantNone {
				t.Fatalf("got %d bytes; want none %v", len(stored), tc.wantNone)
			}
			if tc.wantNone {
				return
			}
			if len(stored) > ddbattr.MaxStored {
				t.Errorf("stored %d bytes, over MaxStored", len(stored))
			}
			got, err := ddbattr.Unpack(stored)
			if err != nil {
				t.Fatalf("stored value is not gzip: %v", err)
			}
			if !bytes.Equal(got, tc.in) {
				t.Errorf("read back %d bytes, want the %d written", len(got), len(tc.in))
			}
		})
	}
}

// gzipOf gzips n zero bytes.
func gzipOf(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUnpackIsBounded(t *testing.T) {
	if got, err := ddbattr.Unpack(gzipOf(t, ddbattr.MaxInflated)); err != nil || len(got) != ddbattr.MaxInflated {
		t.Errorf("at the bound: got %d bytes, %v; want all %d", len(got), err, ddbattr.MaxInflated)
	}
	bomb := gzipOf(t, 64<<20)
	if len(bomb) > ddbattr.MaxStored {
		t.Fatalf("the bomb is %d bytes, more than an item stores", len(bomb))
	}
	if _, err := ddbattr.Unpack(bomb); err == nil || !strings.Contains(err.Error(), strconv.Itoa(ddbattr.MaxInflated)) {
		t.Errorf("a gzip bomb: got %v, want an error naming the limit", err)
	}
	if _, err := ddbattr.Unpack([]byte("not gzip")); err == nil {
		t.Error("damaged: got nil error")
	}
}

// TestPackWithADictionary: a value packed against a dictionary reads back
// given it, and is smaller than gzipped when it shares the dictionary's
// vocabulary; without the dictionary it does not read at all.
func TestPackWithADictionary(t *testing.T) {
	dict := ddbattr.NewDict([]byte(strings.Repeat(`{"object": "customer", "address": {"city": "", "country": ""}, "livemode": false}`+"\n", 20)))
	v := []byte(`{"object": "customer", "address": {"city": "Paris", "country": "FR"}, "livemode": false, "id": "cus_1"}`)
	packed, err := ddbattr.PackWith(v, dict)
	if err != nil {
		t.Fatal(err)
	}
	gz, _ := ddbattr.Pack(v)
	if len(packed) >= len(gz) {
		t.Errorf("packed with the dictionary: %d bytes, gzipped %d; want fewer", len(packed), len(gz))
	}
	other := ddbattr.NewDict([]byte("another vocabulary"))
	got, err := ddbattr.Unpack(packed, other, dict)
	if err != nil || !bytes.Equal(got, v) {
		t.Errorf("read back: %q, %v; want the value", got, err)
	}
	if _, err := ddbattr.Unpack(packed, other); err == nil || !strings.Contains(err.Error(), "dictionary") {
		t.Errorf("read without its dictionary: got %v, want an error naming the dictionary", err)
	}
	// A value gzipped (Pack) reads whatever dictionaries are given.
	if got, err := ddbattr.Unpack(gz, dict); err != nil || !bytes.Equal(got, v) {
		t.Errorf("gzipped value: %q, %v", got, err)
	}
}

func TestUnpackBoundsAValuePackedWithADictionary(t *testing.T) {
	dict := ddbattr.NewDict([]byte(`{"a": ""}`))
	bomb, err := ddbattr.PackWith(make([]byte, ddbattr.MaxInflated+1), dict)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ddbattr.Unpack(bomb, dict); err == nil || !strings.Contains(err.Error(), strconv.Itoa(ddbattr.MaxInflated)) {
		t.Errorf("a bomb: got %v, want an error naming the limit", err)
	}
}

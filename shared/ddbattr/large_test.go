package ddbattr_test

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
)

func TestPack(t *testing.T) {
	json := func(n int) []byte { return []byte(`"` + strings.Repeat("a", n-2) + `"`) }
	noise := make([]byte, ddbattr.MaxStored+(64<<10))
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name               string
		in                 []byte
		wantGzip, wantNone bool
	}{
		{name: "nothing", in: nil, wantNone: true},
		{name: "small: as it is", in: json(100)},
		{name: "at the threshold: as it is", in: json(ddbattr.CompressAbove)},
		{name: "above it: gzipped", in: json(ddbattr.CompressAbove + 1), wantGzip: true},
		{name: "a megabyte that compresses: gzipped", in: json(1 << 20), wantGzip: true},
		{name: "too large even gzipped: not stored", in: noise, wantNone: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stored, gz, err := ddbattr.Pack(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if gz != tc.wantGzip || (stored == nil) != tc.wantNone {
				t.Fatalf("got %d bytes, gzipped %v; want gzipped %v, none %v", len(stored), gz, tc.wantGzip, tc.wantNone)
			}
			if len(stored) > ddbattr.MaxStored {
				t.Errorf("stored %d bytes, over MaxStored", len(stored))
			}
			got := stored
			if gz {
				if got, err = ddbattr.Unpack(stored); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.wantNone && !bytes.Equal(got, tc.in) {
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

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestReadTakesMedians(t *testing.T) {
	in := `goos: linux
BenchmarkReceiver/2.6KB/interleaved-2   	     100	     66466 ns/op	 9.3 x_hmac
BenchmarkReceiver/2.6KB/interleaved-2   	     100	     70000 ns/op	 9.1 x_hmac
BenchmarkReceiver/2.6KB/interleaved-2   	     100	     60000 ns/op	 9.9 x_hmac
BenchmarkColdStart-2  10  194801879 ns/op  22.17 hello-ms  2.313 receiver-init-x-hello
PASS
`
	var out bytes.Buffer
	r, err := read(strings.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != in {
		t.Error("input not copied through unchanged")
	}
	if v, ok := r.get("BenchmarkReceiver/2.6KB/interleaved", "x_hmac"); !ok || v != 9.3 {
		t.Errorf("median x_hmac: got %v %v, want 9.3", v, ok)
	}
	if v, ok := r.get("BenchmarkColdStart", "receiver-init-x-hello"); !ok || v != 2.313 {
		t.Errorf("cold start ratio: got %v %v", v, ok)
	}
	if _, ok := r.get("BenchmarkNope", "ns/op"); ok {
		t.Error("missing benchmark reported as read")
	}
}

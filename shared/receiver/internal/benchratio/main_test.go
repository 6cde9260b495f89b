package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRatioTable(t *testing.T) {
	in := `goos: linux
BenchmarkReceiver/2.6KB/hmac-2         	  593427	      2000 ns/op	1300.00 MB/s	     512 B/op	       6 allocs/op
BenchmarkReceiver/2.6KB/hmac-2         	  593427	      3000 ns/op	 866.67 MB/s	     512 B/op	       6 allocs/op
BenchmarkReceiver/2.6KB/hmac-2         	  593427	      2200 ns/op	1181.82 MB/s	     512 B/op	       6 allocs/op
BenchmarkReceiver/2.6KB/receiver-2     	   64588	     22000 ns/op	 118.18 MB/s	    9000 B/op	     100 allocs/op
BenchmarkReceiver/2.6KB/receiver-2     	   64588	     20000 ns/op	 130.00 MB/s	    9000 B/op	     100 allocs/op
BenchmarkReceiver/2.6KB/receiver-2     	   64588	     30000 ns/op	  86.67 MB/s	    9000 B/op	     100 allocs/op
BenchmarkReceiver/16KB/hmac-2          	  105214	     10000 ns/op	1600.00 MB/s	     512 B/op	       6 allocs/op
BenchmarkReceiver/2.6KB/interleaved-2  	   30000	     40000 ns/op	         9.000 x_hmac	   12000 B/op	     140 allocs/op
BenchmarkReceiver/2.6KB/interleaved-2  	   30000	     40000 ns/op	         9.500 x_hmac	   12000 B/op	     140 allocs/op
BenchmarkReceiver/2.6KB/interleaved-2  	   30000	     40000 ns/op	         9.100 x_hmac	   12000 B/op	     140 allocs/op
BenchmarkReceiver/16KB/receiver-2      	    1654	    130000 ns/op	 123.08 MB/s	   30000 B/op	     100 allocs/op
BenchmarkDecodeEnvelope/compact/DecodeEnvelope-2   100  7000 ns/op
PASS
`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, in) {
		t.Error("input is not copied through unchanged")
	}
	table := strings.Join(strings.Fields(strings.TrimPrefix(got, in)), " ")
	// Medians: at 2.6 KB hmac 2200 and receiver 22000 ns, 2600 bytes (from
	// MB/s), and the interleaved ratio 9.1x; at 16 KB only the sequential
	// ratio, 13.0x, which is 1.43 times 9.1x.
	for _, want := range []string{
		"2.6KB 2600 2200 22000 100 9000 9.1x (interleaved, target <= 12x) -",
		"16KB 16000 10000 130000 100 30000 13.0x (sequential) -",
		"Linearity: receiver/hmac at 16KB is 1.43 times that at 2.6KB",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "DecodeEnvelope") {
		t.Error("other benchmarks must not enter the table")
	}
}

func TestNoReceiverBenchmarksNoTable(t *testing.T) {
	var out bytes.Buffer
	if err := run(strings.NewReader("PASS\n"), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "PASS\n" {
		t.Errorf("got %q, want the input only", out.String())
	}
}

func TestRatioOverTargetIsMarked(t *testing.T) {
	in := "BenchmarkReceiver/2.6KB/hmac-8 1 1000 ns/op\nBenchmarkReceiver/2.6KB/receiver-8 1 13000 ns/op\n"
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "13.0x (sequential, OVER the 12x target)") {
		t.Errorf("over-target ratio not marked:\n%s", out.String())
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	in := `goos: linux
BenchmarkReceiver/2.6KB/receiver-2     	   64588	     52000 ns/op	  50.00 MB/s	    9000 B/op	     100 allocs/op
BenchmarkReceiver/2.6KB/receiver-2     	   64588	     50000 ns/op	  52.00 MB/s	    9000 B/op	     100 allocs/op
BenchmarkReceiver/2.6KB/receiver-2     	   64588	     60000 ns/op	  43.33 MB/s	    9000 B/op	     100 allocs/op
BenchmarkReceiver/2.6KB/stripe_event_decode-2  	   16779	     70000 ns/op	  37.14 MB/s	   14712 B/op	     240 allocs/op
BenchmarkReceiver/16KB/receiver-2      	    1654	    240000 ns/op	  66.666 MB/s	   30000 B/op	     110 allocs/op
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
	// Medians: at 2.6 KB 52000 ns and 2600 bytes (from MB/s), 20 ns/byte,
	// stripe-go's decode 70000 ns (1.3x); at 16 KB 240000 ns over 16000
	// bytes, 15 ns/byte: 0.75 times 20.
	for _, want := range []string{
		"target <= 1.00 ms per 2.6KB event",
		"2.6KB 2600 52.0 µs (target <= 1.00 ms) 100 9000 20.0 1.3x",
		"16KB 16000 240.0 µs 110 30000 15.0 -",
		"Linearity: receiver ns/byte at 16KB is 0.75 times that at 2.6KB",
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

func TestOverTargetIsMarked(t *testing.T) {
	in := "BenchmarkReceiver/2.6KB/receiver-8 1 1300000 ns/op 2.00 MB/s\nBenchmarkReceiver/16KB/receiver-8 1 900000 ns/op\n"
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1.30 ms (OVER the 1.00 ms target)") {
		t.Errorf("over-target time not marked:\n%s", out.String())
	}
	// The target is per 2.6 KB event: other sizes are not held to it.
	if strings.Count(out.String(), "OVER") != 1 {
		t.Errorf("only the 2.6 KB row may be marked:\n%s", out.String())
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTableShowsTheReceiverAgainstItsTarget(t *testing.T) {
	in := `BenchmarkReceiver/2.6KB/receiver-2   	   20000	     65395 ns/op	  40.20 MB/s	   11390 B/op	     108 allocs/op
BenchmarkReceiver/2.6KB/stripe_event_decode-2	   15000	     78474 ns/op
BenchmarkReceiver/16KB/receiver-2    	    4000	    283379 ns/op	  56.21 MB/s	   50889 B/op	     113 allocs/op
`
	r, err := read(strings.NewReader(in), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	table(&out, r, pipeline{Raw: 1})
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"receiver compute per event, 2.6 KB 65.4 µs AWS clients faked; target <= 1 ms on this machine's CPU",
		"receiver compute per event, 16 KB 283.4 µs",
		"receiver allocations per event, 2.6 KB 108",
		"json.Unmarshal into stripe.Event / receiver, 2.6 KB 1.2x",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

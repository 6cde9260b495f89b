package emulator

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortIsBelowTheEphemeralRangeAndBindable(t *testing.T) {
	lo, hi := belowEphemeral()
	// A machine whose ephemeral range starts at 10000 or lower leaves
	// nothing to choose from: FreePort falls back to the kernel's choice,
	// which must still be bindable.
	below := hi > lo
	seen := map[int]bool{}
	for i := 0; i < 20; i++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if below && (port < lo || port >= hi) {
			t.Fatalf("port %d outside [%d, %d): the kernel would hand it out as a source port", port, lo, hi)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d was returned free but cannot be bound: %v", port, err)
		}
		l.Close()
		seen[port] = true
	}
	if len(seen) < 10 {
		t.Fatalf("20 calls gave %d distinct ports: two processes would choose the same one", len(seen))
	}
}

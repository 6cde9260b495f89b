package emulator

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a TCP port free on 127.0.0.1 a moment ago, for a server
// a test or the local stack starts.
//
// The port is taken below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), not from it: a port the kernel hands out
// for "127.0.0.1:0" is handed out again as the source port of the next
// outgoing connection, so between the moment it is returned and the moment
// a child process binds it, a busy machine (LocalStack, moto and a dozen
// test binaries talking to them) takes it often enough to fail CI. Below the
// range only another listener can take it, and a random choice among
// twenty thousand makes that rare.
func FreePort() (int, error) {
	lo, hi := belowEphemeral()
	for attempt := 0; attempt < 64 && hi > lo; attempt++ {
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	// No range to choose from, or all tried taken: let the kernel choose.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("emulator: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// belowEphemeral returns the ports [lo, hi) FreePort chooses from: from
// 10000 up to the start of the ephemeral range (Linux's default starts at
// 32768), clear of the well-known and usual development ports.
func belowEphemeral() (lo, hi int) {
	lo, hi = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	if start, err := strconv.Atoi(f[0]); err == nil {
		hi = start
	}
	return lo, hi
}

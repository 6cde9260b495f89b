// Command benchratio turns `go test -bench` output into the receiver's
// table: its compute per event, per payload size, from
// BenchmarkReceiver/<size>/<what> lines, against the target of at most 1 ms
// per 2.6 KB event on the machine that runs it, with two ratios of the same
// run: how the cost per byte grows with the payload (linearity) and what
// decoding the whole event with stripe-go would cost beside it. It copies its
// input through unchanged and prints the table after it, so it sits at the
// end of a pipe:
//
//	go test -run '^$' -bench . -benchmem -count 3 ./shared/... | go run ./tools/cmd/benchratio
//
// With -count above 1 each figure is the median of the runs, which damps a
// noisy, shared machine. The table reports; it does not fail: a threshold on
// timings would be a timed assertion.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Target is the receiver's compute budget per 2.6 KB event, in
// nanoseconds: 1 ms, a small share of the 10-30 ms the request waits on
// its two AWS calls, on the CPU the benchmark runs on.
const Target = 1e6

// targetSize is the benchmark size the target applies to.
const targetSize = "2.6KB"

// line matches BenchmarkReceiver/<size>/<what>-<procs> and its measurements.
var line = regexp.MustCompile(`^BenchmarkReceiver/([^/\s]+)/([^\s]+?)(?:-\d+)?\s+\d+\s+(.*)$`)

type samples struct {
	nsPerOp, mbPerS, bPerOp, allocsPerOp []float64
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	results, sizes, err := read(in, out)
	if err != nil {
		return err
	}
	if len(sizes) == 0 {
		return nil // no receiver benchmarks in this run
	}
	return summarize(out, results, sizes)
}

// read copies the benchmark output in to out and collects the receiver
// benchmarks' samples by size (in the order first seen) and by what each
// measured.
func read(in io.Reader, out io.Writer) (results map[string]map[string]*samples, sizes []string, err error) {
	results = map[string]map[string]*samples{} // size -> what -> samples
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		fmt.Fprintln(out, text)
		m := line.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		size, what := m[1], m[2]
		if results[size] == nil {
			results[size] = map[string]*samples{}
			sizes = append(sizes, size)
		}
		s := results[size][what]
		if s == nil {
			s = &samples{}
			results[size][what] = s
		}
		s.add(strings.Fields(m[3]))
	}
	return results, sizes, sc.Err()
}

// add adds the values of a benchmark line's fields ("123 ns/op ...").
func (s *samples) add(fields []string) {
	for i := 0; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			continue
		}
		switch fields[i+1] {
		case "ns/op":
			s.nsPerOp = append(s.nsPerOp, v)
		case "MB/s":
			s.mbPerS = append(s.mbPerS, v)
		case "B/op":
			s.bPerOp = append(s.bPerOp, v)
		case "allocs/op":
			s.allocsPerOp = append(s.allocsPerOp, v)
		}
	}
}

// point is a size's receiver cost per byte.
type point struct {
	size    string
	perByte float64
}

// summarize prints the receiver's cost per event, size by size, and how
// its cost per byte grows with the payload.
func summarize(out io.Writer, results map[string]map[string]*samples, sizes []string) error {
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Receiver compute per event, AWS clients faked (medians of the runs; target <= %s per %s event on this CPU):\n", us(Target), targetSize)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "event\tbytes\treceiver\tallocs/op\tB/op\tns/byte\tstripe.Event decode/receiver\t")
	var points []point
	for _, size := range sizes {
		recv := results[size]["receiver"]
		if recv == nil || len(recv.nsPerOp) == 0 {
			continue
		}
		if p, ok := row(w, size, recv, results[size]["stripe_event_decode"]); ok {
			points = append(points, p)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(points) >= 2 {
		// A cost per byte that stays put as the payload grows means a
		// receiver linear in the payload; below 1, a fixed cost per event
		// is spread over more bytes.
		first := points[0]
		for _, p := range points[1:] {
			fmt.Fprintf(out, "Linearity: receiver ns/byte at %s is %.2f times that at %s (1.00: grows exactly with the payload)\n",
				p.size, p.perByte/first.perByte, first.size)
		}
	}
	return nil
}

// row prints one size's row; ok when its bytes are known, with its cost
// per byte.
func row(w io.Writer, size string, recv, d *samples) (p point, ok bool) {
	r := median(recv.nsPerOp)
	bytes := 0.0
	if len(recv.mbPerS) > 0 {
		bytes = median(recv.mbPerS) * r / 1000 // MB/s = bytes / ns * 1000
	}
	mark := ""
	if size == targetSize {
		mark = fmt.Sprintf(" (target <= %s)", us(Target))
		if r > Target {
			mark = fmt.Sprintf(" (OVER the %s target)", us(Target))
		}
	}
	perByte := "-"
	if bytes > 0 {
		p, ok = point{size, r / bytes}, true
		perByte = fmt.Sprintf("%.1f", r/bytes)
	}
	decode := "-"
	if d != nil && len(d.nsPerOp) > 0 {
		decode = fmt.Sprintf("%.1fx", median(d.nsPerOp)/r)
	}
	fmt.Fprintf(w, "%s\t%.0f\t%s%s\t%.0f\t%.0f\t%s\t%s\t\n",
		size, bytes, us(r), mark, median(recv.allocsPerOp), median(recv.bPerOp), perByte, decode)
	return p, ok
}

// us formats nanoseconds as microseconds, or milliseconds from 1 ms.
func us(ns float64) string {
	if ns >= 1e6 {
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.1f µs", ns/1000)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

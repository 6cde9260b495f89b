// Command benchratio turns `go test -bench` output into the receiver's ratio
// table: receiver compute per event against a bare HMAC-SHA256 of the same
// payload, per payload size, from BenchmarkReceiver/<size>/<what> lines of
// one run. It copies its input through unchanged and prints the table after
// it, so it sits at the end of a pipe:
//
//	go test -run '^$' -bench . -benchmem -count 3 ./shared/... | go run ./shared/receiver/internal/benchratio
//
// With -count above 1 each figure is the median of the runs, which damps a
// noisy, shared machine; the ratios compare figures of the same run.
// The table reports; it does not fail: a threshold on timings would be a
// timed assertion.
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

// maxRatio is the receiver's target at 2.6 KB: its compute per event at most
// this many times a bare HMAC-SHA256 of the payload.
const maxRatio = 12

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
	results := map[string]map[string]*samples{} // size -> what -> samples
	var sizes []string
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
		fields := strings.Fields(m[3])
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
	if err := sc.Err(); err != nil {
		return err
	}
	if len(sizes) == 0 {
		return nil // no receiver benchmarks in this run
	}

	fmt.Fprintln(out)
	fmt.Fprintln(out, "Receiver compute per event vs a bare HMAC-SHA256 of the same payload (medians, same run):")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "event\tbytes\thmac ns/op\treceiver ns/op\tratio\treceiver ns/KB\tallocs/op\tB/op\tstripe.Event decode\t")
	var perKB []float64
	for _, size := range sizes {
		hmac, recv := results[size]["hmac"], results[size]["receiver"]
		if hmac == nil || recv == nil || len(hmac.nsPerOp) == 0 || len(recv.nsPerOp) == 0 {
			continue
		}
		h, r := median(hmac.nsPerOp), median(recv.nsPerOp)
		bytes := 0.0
		if len(recv.mbPerS) > 0 {
			// MB/s = bytes / ns * 1000
			bytes = median(recv.mbPerS) * r / 1000
		}
		ratio := r / h
		mark := ""
		if size == "2.6KB" {
			mark = fmt.Sprintf(" (target <= %dx)", maxRatio)
			if ratio > maxRatio {
				mark = fmt.Sprintf(" (OVER the %dx target)", maxRatio)
			}
		}
		kb := "-"
		if bytes > 0 {
			v := r / (bytes / 1024)
			perKB = append(perKB, v)
			kb = fmt.Sprintf("%.0f", v)
		}
		decode := "-"
		if d := results[size]["stripe_event_decode"]; d != nil && len(d.nsPerOp) > 0 {
			decode = fmt.Sprintf("%.1fx hmac", median(d.nsPerOp)/h)
		}
		fmt.Fprintf(w, "%s\t%.0f\t%.0f\t%.0f\t%.1fx%s\t%s\t%.0f\t%.0f\t%s\t\n",
			size, bytes, h, r, ratio, mark, kb, median(recv.allocsPerOp), median(recv.bPerOp), decode)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(perKB) >= 2 {
		fmt.Fprintf(out, "Linearity: receiver ns per KB, largest event / smallest: %.2f (1.00 is linear; compression starts above 8 KB)\n",
			perKB[len(perKB)-1]/perKB[0])
	}
	return nil
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

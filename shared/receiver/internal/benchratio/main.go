// Command benchratio turns `go test -bench` output into the receiver's ratio
// table: receiver compute per event against a bare HMAC-SHA256 of the same
// payload, per payload size, from BenchmarkReceiver/<size>/<what> lines of
// one run. The ratio is the x_hmac metric of <size>/interleaved, which
// alternates both within each iteration; without it, the ratio of the hmac
// and receiver medians, measured seconds apart. It copies its input through
// unchanged and prints the table after it, so it sits at the end of a pipe:
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
	nsPerOp, mbPerS, bPerOp, allocsPerOp, xHMAC []float64
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
			case "x_hmac":
				s.xHMAC = append(s.xHMAC, v)
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
	fmt.Fprintln(out, "Receiver compute per event vs a bare HMAC-SHA256 of the same payload (medians of the runs):")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "event\tbytes\thmac ns/op\treceiver ns/op\tallocs/op\tB/op\treceiver/hmac\tstripe.Event decode/hmac\t")
	type point struct {
		size  string
		ratio float64
	}
	var ratios []point
	for _, size := range sizes {
		hmac, recv := results[size]["hmac"], results[size]["receiver"]
		if hmac == nil || recv == nil || len(hmac.nsPerOp) == 0 || len(recv.nsPerOp) == 0 {
			continue
		}
		h, r := median(hmac.nsPerOp), median(recv.nsPerOp)
		bytes := 0.0
		if len(recv.mbPerS) > 0 {
			bytes = median(recv.mbPerS) * r / 1000 // MB/s = bytes / ns * 1000
		}
		ratio, how := r/h, "sequential"
		if il := results[size]["interleaved"]; il != nil && len(il.xHMAC) > 0 {
			ratio, how = median(il.xHMAC), "interleaved"
		}
		ratios = append(ratios, point{size, ratio})
		mark := ""
		if size == "2.6KB" {
			mark = fmt.Sprintf(", target <= %dx", maxRatio)
			if ratio > maxRatio {
				mark = fmt.Sprintf(", OVER the %dx target", maxRatio)
			}
		}
		decode := "-"
		if d := results[size]["stripe_event_decode"]; d != nil && len(d.nsPerOp) > 0 {
			decode = fmt.Sprintf("%.1fx", median(d.nsPerOp)/h)
		}
		fmt.Fprintf(w, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1fx (%s%s)\t%s\t\n",
			size, bytes, h, r, median(recv.allocsPerOp), median(recv.bPerOp), ratio, how, mark, decode)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(ratios) >= 2 {
		// The HMAC is linear in the payload, so a receiver/hmac ratio that
		// stays put as the payload grows means a receiver that is too.
		first := ratios[0]
		for _, p := range ratios[1:] {
			fmt.Fprintf(out, "Linearity: receiver/hmac at %s is %.2f times that at %s (1.00: grows exactly like the HMAC)\n",
				p.size, p.ratio/first.ratio, first.size)
		}
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

package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// benchLine matches a `go test -bench` result line.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// results holds every metric of every benchmark read, by name and unit.
type results map[string]map[string][]float64

// read copies in to out and collects the benchmark lines.
func read(in io.Reader, out io.Writer) (results, error) {
	res := results{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		text := sc.Text()
		fmt.Fprintln(out, text)
		m := benchLine.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			if res[m[1]] == nil {
				res[m[1]] = map[string][]float64{}
			}
			res[m[1]][fields[i+1]] = append(res[m[1]][fields[i+1]], v)
		}
	}
	return res, sc.Err()
}

// get returns the median of a benchmark's metric, and whether it was read.
func (r results) get(bench, unit string) (float64, bool) {
	v := r[bench][unit]
	if len(v) == 0 {
		return 0, false
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

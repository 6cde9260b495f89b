package lambda

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	clockOnce sync.Once
	clockPath string
	clockErr  error
)

// initClockBinary builds testdata/initclock, once per test binary: the
// process between the runtime emulator and a bootstrap that notes its start
// and points its runtime API at a runtimeProxy.
func initClockBinary(tb testing.TB) string {
	tb.Helper()
	clockOnce.Do(func() {
		dir, err := os.MkdirTemp("", "initclock")
		if err != nil {
			clockErr = err
			return
		}
		clockPath = filepath.Join(dir, "initclock")
		cmd := exec.Command("go", "build", "-trimpath", "-o", clockPath, "./testdata/initclock")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			clockErr = fmt.Errorf("build initclock: %v\n%s", err, out)
		}
	})
	if clockErr != nil {
		tb.Fatal(clockErr)
	}
	return clockPath
}

// runtimeProxy stands in front of one runtime emulator's runtime API and
// notes when the first GET .../runtime/invocation/next arrives: the moment
// the function's init is over and its runtime asks for work.
//
// At that moment it also reads how much CPU time the bootstrap's threads
// have had (/proc/<pid>/task/*/schedstat, in nanoseconds): unlike the wall
// time, that does not grow when other processes hold the CPU, so it shows
// the init's own cost on a shared machine.
type runtimeProxy struct {
	addr      string // host:port, for AWS_LAMBDA_RUNTIME_API
	clockFile string // initclock's start time and pid
	srv       *http.Server
	mu        sync.Mutex
	first     time.Time
	cpu       time.Duration
	cpuErr    error
}

func startRuntimeProxy(tb testing.TB, runtimePort int, clockFile string) *runtimeProxy {
	tb.Helper()
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", runtimePort))
	rp := httputil.NewSingleHostReverseProxy(target)
	// The runtime's next /next after the last answer meets a stopped
	// emulator: nothing to report.
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	p := &runtimeProxy{clockFile: clockFile}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/runtime/invocation/next") {
			now := time.Now()
			p.mu.Lock()
			if p.first.IsZero() {
				p.first = now
				p.cpu, p.cpuErr = p.cpuTime()
			}
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p
}

func (p *runtimeProxy) firstNext() (time.Time, time.Duration, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first, p.cpu, p.cpuErr
}

// cpuTime sums the CPU time of the bootstrap's threads so far.
func (p *runtimeProxy) cpuTime() (time.Duration, error) {
	_, pid, err := readClock(p.clockFile)
	if err != nil {
		return 0, err
	}
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("no threads of process %d: %v", pid, err)
	}
	var total time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// readClock reads what initclock wrote: the start time and the pid.
func readClock(file string) (time.Time, int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("initclock's start time: %w", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return time.Time{}, 0, fmt.Errorf("initclock's file %q: want the time and the pid", b)
	}
	ns, err1 := strconv.ParseInt(fields[0], 10, 64)
	pid, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return time.Time{}, 0, fmt.Errorf("initclock's file %q: want the time and the pid", b)
	}
	return time.Unix(0, ns), pid, nil
}

func (p *runtimeProxy) close() { _ = p.srv.Close() }

// initTime is the time from the bootstrap's process start, as initclock
// noted it, to the first /next the proxy saw, and the CPU time the
// bootstrap had used by then.
func initTime(tb testing.TB, p *runtimeProxy) (wall, cpu time.Duration) {
	tb.Helper()
	start, _, err := readClock(p.clockFile)
	if err != nil {
		tb.Fatal(err)
	}
	next, cpu, err := p.firstNext()
	if next.IsZero() {
		tb.Fatal("the runtime never asked for its first invocation through the proxy")
	}
	if err != nil {
		tb.Fatalf("CPU time at the first /next: %v", err)
	}
	return next.Sub(start), cpu
}

// initLine is one line of GODEBUG=inittrace=1: a package's initialization.
var initLine = regexp.MustCompile(`^init \S+ @[0-9.]+ ms, [0-9.]+ ms clock, (\d+) bytes, (\d+) allocs$`)

// packageInit runs bootstrap with GODEBUG=inittrace=1 and nothing else in
// its environment, and sums what its packages' initialization allocated.
// Package initialization runs before main, so the function's failure to
// find its configuration afterwards does not matter.
func packageInit(tb testing.TB, bootstrap string) (size, allocs int64) {
	tb.Helper()
	cmd := exec.Command(bootstrap)
	cmd.Env = []string{"GODEBUG=inittrace=1"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run() // exits with an error: no Lambda environment
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	for sc.Scan() {
		m := initLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		b, _ := strconv.ParseInt(m[1], 10, 64)
		a, _ := strconv.ParseInt(m[2], 10, 64)
		size, allocs, n = size+b, allocs+a, n+1
	}
	if n == 0 {
		tb.Fatalf("%s: no inittrace lines in its output:\n%s", bootstrap, out.String())
	}
	return size, allocs
}

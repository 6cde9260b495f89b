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
type runtimeProxy struct {
	addr  string // host:port, for AWS_LAMBDA_RUNTIME_API
	srv   *http.Server
	mu    sync.Mutex
	first time.Time
}

func startRuntimeProxy(tb testing.TB, runtimePort int) *runtimeProxy {
	tb.Helper()
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", runtimePort))
	rp := httputil.NewSingleHostReverseProxy(target)
	// The runtime's next /next after the last answer meets a stopped
	// emulator: nothing to report.
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	p := &runtimeProxy{}
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
			}
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	return p
}

func (p *runtimeProxy) firstNext() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.first
}

func (p *runtimeProxy) close() { _ = p.srv.Close() }

// initTime is the time from the bootstrap's process start, as initclock
// wrote it to file, to the first /next the proxy saw.
func initTime(tb testing.TB, file string, p *runtimeProxy) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		tb.Fatalf("initclock's start time: %v", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		tb.Fatalf("initclock's start time %q: %v", b, err)
	}
	next := p.firstNext()
	if next.IsZero() {
		tb.Fatal("the runtime never asked for its first invocation through the proxy")
	}
	return next.Sub(time.Unix(0, ns))
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

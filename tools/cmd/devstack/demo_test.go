package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/needs"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// lines collects a process's output, line by line, as it comes.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.all = append(l.all, sc.Text())
		l.mu.Unlock()
	}
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// TestMakeDemoShowsEveryStatus runs make demo (on its own ports and
// prefix, against the emulator of the test run) and reads the console it
// starts: the demo day's events processed, dead-lettered, failed for
// good, found by the reconciler, superseded out of order, and its
// duplicate delivery recognised (the receiver's outcome) and listed once.
func TestMakeDemoShowsEveryStatus(t *testing.T) {
	needs.Emulator(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	prefix := testenv.Prefix(t)
	cmd := exec.Command("make", "--no-print-directory", "demo",
		"DEV_FLAGS=-addr 127.0.0.1:0 -console-addr 127.0.0.1:0 -prefix "+prefix)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "LOG_LEVEL=INFO")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	var out, errs lines
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go out.read(stdout)
	go errs.read(stderr)
	t.Cleanup(func() {
		// make execs devstack: its group, which this test started, stops
		// on the signal Ctrl-C sends.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("make demo's stderr:\n%s\nits stdout (the functions' logs):\n%s", errs.text(), out.text())
		}
	})

	sent := regexp.MustCompile(`the duplicate delivery's answer: `)
	testenv.Eventually(t, 90*time.Second, "make demo to start the stack and send the day", func() bool {
		if cmd.ProcessState != nil {
			t.Fatalf("make demo exited: %s", errs.text())
		}
		return sent.MatchString(errs.text())
	})
	banner := errs.text()
	conURL := regexp.MustCompile(`(?m)^\s+console\s+(http://\S+)$`).FindStringSubmatch(banner)
	if conURL == nil {
		t.Fatalf("no console URL in the banner:\n%s", banner)
	}
	ids := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  (evt_demo_[a-z0-9]+_([a-z_]+))\s`).FindAllStringSubmatch(banner, -1) {
		ids[m[2]] = m[1]
	}
	for _, name := range []string{"ada_paid", "dee_paid", "fay_finalized", "gus_sub", "ben_upgrade", "ben_update_late", "cy_payment_failed"} {
		if ids[name] == "" {
			t.Fatalf("the demo's summary names no %s event:\n%s", name, banner)
		}
	}

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err := client.Get(conURL[1]) // the token, once: the cookie then
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	base := conURL[1][:strings.Index(conURL[1], "/?token=")]
	// get reads a page; one not there yet (an event the reconciler has
	// not found) reads as empty.
	get := func(path string) string {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return ""
		}
		return string(b)
	}
	// Each status on the console's own listings and event pages.
	checks := []struct {
		what, path string
		want       []string
	}{
		{"the dead-lettered invoice", "/events?status=dead_lettered", []string{ids["dee_paid"]}},
		{"the refused invoice", "/events?status=failed_permanent", []string{ids["fay_finalized"]}},
		{"both on the failing list", "/events?status=failing", []string{ids["dee_paid"], ids["fay_finalized"]}},
		{"the paid, failed payment and upgrade events processed", "/events?status=processed", []string{ids["ada_paid"], ids["cy_payment_failed"], ids["ben_upgrade"]}},
		{"the missed webhook, found by the reconciler", "/events/stripe/" + ids["gus_sub"], []string{"processed", "reconciler"}},
		{"the out-of-order update superseded", "/events/stripe/" + ids["ben_update_late"], []string{"superseded"}},
	}
	for _, c := range checks {
		var page string
		testenv.Eventually(t, 60*time.Second, c.what+" on "+c.path, func() bool {
			page = get(c.path)
			for _, w := range c.want {
				if !strings.Contains(page, w) {
					return false
				}
			}
			return true
		})
	}
	// The duplicate: the receiver recognised it (its log's outcome), and
	// the listing holds the event once.
	// The receiver answers a duplicate of a settled event as a duplicate,
	// and of one still on its way by requeueing it, whose second message
	// the processor acknowledges as a duplicate: either is counted (the
	// outcome dimension of their metrics).
	dup := func() bool {
		for _, l := range strings.Split(out.text(), "\n") {
			if strings.Contains(l, `"event_id":"`+ids["ada_paid"]+`"`) &&
				(strings.Contains(l, `"outcome":"duplicate"`) || strings.Contains(l, `"msg":"duplicate message"`)) {
				return true
			}
		}
		return false
	}
	testenv.Eventually(t, 10*time.Second, "the duplicate of "+ids["ada_paid"]+" recognised", dup)
	if n := strings.Count(get("/events?status=processed"), `/events/stripe/`+ids["ada_paid"]+`"`); n != 1 {
		t.Errorf("the duplicated event is listed %d times, want once", n)
	}
	// Dee's page: her dead-lettered invoice among her events.
	if page := get("/objects/cus_demo_dee_" + strings.Split(strings.TrimPrefix(ids["dee_paid"], "evt_demo_"), "_")[0]); !strings.Contains(page, ids["dee_paid"]) ||
		!strings.Contains(page, "dead_lettered") {
		t.Errorf("the customer page of Dee lists no dead-lettered %s", ids["dee_paid"])
	}
}

package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// browser is an HTTP client with a cookie jar, as a browser that opened
// the console's URL is.
type browser struct {
	t      *testing.T
	c      *http.Client
	base   string
	formRE *regexp.Regexp
}

func newBrowser(t *testing.T, consoleURL string) *browser {
	jar, _ := cookiejar.New(nil)
	// The run's pages live under the URL's own path (console.RunPath).
	base := consoleURL[:strings.Index(consoleURL, "/?token=")]
	return &browser{t: t, c: &http.Client{Jar: jar}, base: base, formRE: regexp.MustCompile(`name="csrf" value="([^"]+)"`)}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// submit reads the form of the confirmation page at path and posts it, as
// a click on its button does.
func (b *browser) submit(path string, extra url.Values) (int, string) {
	b.t.Helper()
	code, page := b.get(path)
	m := b.formRE.FindStringSubmatch(page)
	if code != 200 || m == nil {
		b.t.Fatalf("GET %s: got %d without a form:\n%s", path, code, page)
	}
	form := url.Values{"csrf": {m[1]}}
	for k, v := range extra {
		form[k] = v
	}
	action := strings.SplitN(path, "?", 2)[0]
	req, _ := http.NewRequest("POST", b.base+action, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(b.base)
	req.Header.Set("Origin", "http://"+u.Host)
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// startConsole serves inboxctl console against the world's stack, as
// inboxctl --prefix P console --addr 127.0.0.1:0 does, and returns its URL.
func startConsole(t *testing.T, w *world) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env := testenv.Endpoints(t).Vars()
	env["AWS_REGION"] = "us-east-1"
	urls := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	var log testenv.Buffer
	go func() {
		defer wg.Done()
		err := ServeConsole(ctx, []string{"--prefix", w.s.Prefix}, "127.0.0.1:0", func(k string) string { return env[k] }, &log, func(u string) { urls <- u })
		if err != nil {
			t.Errorf("ServeConsole: %v\n%s", err, log.String())
			urls <- ""
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	u := <-urls
	if u == "" {
		t.FailNow()
	}
	return u
}

// TestConsoleOnTheStack drives the console as inboxctl serves it against
// a provisioned stack: the events page lists the seeded events from the
// store's own listing, an event page shows its record, a replay from its
// confirmation page puts exactly one pointer on the webhook queue, and a
// redrive of one dead-lettered message moves that message alone.
func TestConsoleOnTheStack(t *testing.T) {
	w := newWorld(t, false)
	w.clock = &clock{t: time.Now().Add(-time.Minute)}
	w.seed()
	ids := deadLetter(t, w, 3)
	consoleURL := startConsole(t, w)
	b := newBrowser(t, consoleURL)

	if code, _ := (&browser{t: t, c: &http.Client{}, base: b.base}).get("/events"); code != http.StatusUnauthorized {
		t.Fatalf("without the token: got %d, want 401", code)
	}
	// The first page is the health page, the seeded world's counts.
	code, page := b.get(strings.TrimPrefix(consoleURL, b.base))
	if code != 200 || !strings.Contains(page, "3 failing") || !strings.Contains(page, `data-status="dead_lettered"><span class="n">1</span>`) {
		t.Fatalf("health: got %d\n%s", code, page)
	}
	code, page = b.get("/events")
	if code != 200 || !strings.Contains(page, "evt_golden_inv_failed") || !strings.Contains(page, "evt_golden_sub_updated") {
		t.Fatalf("events: got %d\n%s", code, page)
	}
	code, page = b.get("/events?status=failing")
	if code != 200 || !strings.Contains(page, "evt_golden_inv_failed") || !strings.Contains(page, "evt_golden_dead") ||
		!strings.Contains(page, "evt_golden_perm") ||
		strings.Contains(page, "evt_golden_sub_updated") {
		t.Fatalf("failing events: got %d\n%s", code, page)
	}
	code, page = b.get("/events?status=failed")
	if code != 200 || !strings.Contains(page, "evt_golden_inv_failed") || strings.Contains(page, "evt_golden_sub_updated") {
		t.Fatalf("failed events: got %d\n%s", code, page)
	}
	code, page = b.get("/events/stripe/evt_golden_inv_failed")
	if code != 200 || !strings.Contains(page, "billing service: 504 gateway timeout") || !strings.Contains(page, "&#34;invoice&#34;") {
		t.Fatalf("event: got %d\n%s", code, page)
	}
	if code, page = b.get("/objects/cus_golden"); code != 200 || !strings.Contains(page, "sub_golden") {
		t.Fatalf("customer: got %d\n%s", code, page)
	}
	if code, page = b.get("/reconciler"); code != 200 || !strings.Contains(page, "stripe#") {
		t.Fatalf("reconciler: got %d\n%s", code, page)
	}

	code, page = b.submit("/events/stripe/evt_golden_inv_failed/replay", nil)
	if code != 200 || !strings.Contains(page, "<strong>Enqueued</strong>") {
		t.Fatalf("replay: got %d\n%s", code, page)
	}

	code, page = b.get("/dlq")
	if code != 200 || !strings.Contains(page, ids[1]) {
		t.Fatalf("dlq: got %d\n%s", code, page)
	}
	msg := messageOf(t, page, ids[1])
	code, page = b.submit("/dlq/redrive?message="+url.QueryEscape(msg), url.Values{"message": {msg}})
	if code != 200 || !strings.Contains(page, "Moved 1 message") {
		t.Fatalf("redrive one: got %d\n%s", code, page)
	}
	// The seeded events never went through the queue: it holds what the
	// console put there.
	main, dlq := census(t, w)
	if want := []string{ids[1], "evt_golden_inv_failed"}; !slices.Equal(main, want) || !slices.Equal(dlq, []string{ids[0], ids[2]}) {
		t.Errorf("after a replay and a redrive of %s: webhook queue %v, DLQ %v; want %v and the other two", ids[1], main, dlq, want)
	}
}

// messageOf finds the message id of event id's row on the DLQ page.
func messageOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, ">"+id+"<")
	m := regexp.MustCompile(`redrive\?message=([^"]+)"`).FindStringSubmatch(page[i:])
	if i < 0 || m == nil {
		t.Fatalf("no redrive link for %s on\n%s", id, page)
	}
	v, _ := url.QueryUnescape(m[1])
	return v
}

// TestConsoleListensOnLoopbackOnly: inboxctl console refuses any address
// but a loopback one, as a usage error.
func TestConsoleListensOnLoopbackOnly(t *testing.T) {
	w := newWorld(t, false)
	c := w.cli()
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.0.2.10:8080"} {
		r := c.run(context.Background(), "console", "--addr", addr)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "loopback address only") {
			t.Errorf("console --addr %s: exit %d\n%s", addr, r.code, r.stderr)
		}
	}
}

//go:build browser

package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/chromedp/chromedp"

	"github.com/webhook-inbox/webhook-inbox/internal/cli"
	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/devconsole"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/repo"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

var docsShot = flag.Bool("docs-screenshot", false, "write the events page's screenshot to docs/console.png too")

// installHint is what to do when there is no browser.
const installHint = "install Debian's Chromium with `apt-get install -y chromium` (as root), or run `make test-browser`, which does"

// chromium finds Debian's Chromium.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no chromium on PATH nor at /usr/bin/chromium: %s", installHint)
	return ""
}

// brokenEffect is a team effect that fails, as a downstream service does,
// for the events the test has not fixed yet.
type brokenEffect struct {
	mu     sync.Mutex
	broken map[string]bool
}

func (b *brokenEffect) set(id string, broken bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.broken[id] = broken
}

func (b *brokenEffect) handler() effect.Handler {
	return effect.Func{HandlerName: "billing-sync", Fn: func(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.broken[ev.Record.ID] {
			return nil, errors.New("billing service: 503 service unavailable")
		}
		return nil, nil
	}}
}

// shots saves screenshots under bin/screenshots (git-ignored).
type shots struct {
	t   *testing.T
	dir string
}

func (s shots) save(ctx context.Context, name string) []byte {
	s.t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, name+".png"), png, 0o644); err != nil {
		s.t.Fatal(err)
	}
	return png
}

// TestConsoleInChromium is an operator's session, in a real browser:
// events through the gateway of make dev's stack, one of them failing
// until its effect is fixed; the console's URL without its token refused;
// its cookie sent to no other server on the same loopback host; the
// failed events filtered from the keyboard; one opened, fixed, replayed
// and seen processed; a dead-lettered message redriven and its event seen
// processed; the reconciler's runs; the pages at phone width.
func TestConsoleInChromium(t *testing.T) {
	browserPath := chromium(t)
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	shot := shots{t: t, dir: filepath.Join(root, "bin", "screenshots")}
	if err := os.MkdirAll(shot.dir, 0o755); err != nil {
		t.Fatal(err)
	}

	// make dev's stack, in this process so that the effect is the test's:
	// a failed attempt comes back after 75 s (RETRY_BACKOFF_BASE), the
	// second one dead-letters (MaxReceiveCount 2), and the reconciler runs
	// every 2 s against a Stripe stand-in holding one event that never
	// arrived by webhook.
	cfg := testenv.AWS(t)
	prefix := testenv.Prefix(t)
	fx := &brokenEffect{broken: map[string]bool{}}
	reg := &effect.Registry{}
	reg.On(fx.handler(), "*")
	fake := stripefake.New()
	t.Cleanup(fake.Close)
	missing := build(t, "invoice.finalized", "evt_console_reconciled", time.Now().Add(-10*time.Minute))
	if err := fake.Add(missing); err != nil {
		t.Fatal(err)
	}
	var logs testenv.Buffer
	stack, err := devstack.Start(context.Background(), devstack.Options{
		Template:  testenv.TemplatePath(t),
		Overrides: map[string]string{"MaxReceiveCount": "2"},
		Prefix:    prefix,
		Addr:      "127.0.0.1:0",
		Env: map[string]string{
			"RETRY_BACKOFF_BASE": "75s", "STRIPE_API_BASE": fake.URL,
			"RECONCILE_SETTLE": "1s", "RECONCILE_SINCE": "1h",
		},
		Effects:        reg,
		ReconcileEvery: 2 * time.Second,
		AWS:            cfg,
		Logger:         slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.Close)
	con, err := devconsole.Start(stack, prefix, "127.0.0.1:0", &logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(con.Close)
	// Every page of the run lives under its own path (console.RunPath):
	// base is the origin and that path, run the path alone.
	base := con.URL[:strings.Index(con.URL, "/?token=")]
	conURL, err := url.Parse(con.URL)
	if err != nil {
		t.Fatal(err)
	}
	run := strings.TrimSuffix(conURL.Path, "/")
	token := conURL.Query().Get("token")
	events := &store.Events{DB: dynamodb.NewFromConfig(cfg), Table: prefix + "-EventsTable"}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stack and console log:\n%s", logs.String())
		}
	})

	// Events through the gateway: a customer, its subscription and a paid
	// invoice that go through, a failed payment whose effect fails until
	// the test fixes it (it will be replayed), and an invoice whose effect
	// keeps failing until it is dead-lettered (it will be redriven).
	now := time.Now()
	const replayed, redriven = "evt_console_payment_failed", "evt_console_invoice_created"
	fx.set(replayed, true)
	fx.set(redriven, true)
	for i, e := range []struct{ typ, id string }{
		{"customer.created", "evt_console_customer"},
		{"customer.subscription.created", "evt_console_subscription"},
		{"invoice.paid", "evt_console_invoice_paid"},
		{"invoice.payment_failed", replayed},
		{"invoice.created", redriven},
	} {
		deliver(t, stack.URL, build(t, e.typ, e.id, now.Add(time.Duration(i-10)*time.Second)))
	}
	status := func(id string) event.Status {
		r, err := events.Get(context.Background(), event.ProviderStripe, id)
		if err != nil {
			return ""
		}
		return r.Status
	}
	testenv.Eventually(t, 30*time.Second, "the events to be processed or failed, and the reconciler to find the missing one", func() bool {
		return status("evt_console_invoice_paid") == event.StatusProcessed && status(replayed) == event.StatusFailed &&
			status(redriven) == event.StatusFailed && status("evt_console_reconciled") == event.StatusProcessed
	})

	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(browserPath),
		// The flags it needs: this machine's closed network refuses the
		// browser's background connections.
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 330*time.Second)
	defer cancel()

	// The token is required: without it, and with a wrong one, 401.
	resp, err := http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /events without the token: got %d, want 401", resp.StatusCode)
	}
	for _, u := range []string{base + "/events", base + "/?token=WRONGTOKENWRONGTOKENWRONGT"} {
		resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(u))
		if err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
		if text := bodyText(t, ctx); resp.Status != http.StatusUnauthorized || strings.Contains(text, "evt_console") {
			t.Fatalf("open %s: got %d %q, want 401 and nothing else", u, resp.Status, text)
		}
	}
	shot.save(ctx, "01_no_token")

	// The printed URL opens the health page: the counts inboxctl status
	// reports, read the same way, and the chart of the same hours.
	report := statusJSON(t, prefix)
	open(t, ctx, con.URL)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); strings.Contains(loc, "token=") {
		t.Errorf("the token stays in the address bar: %s", loc)
	}
	checkHealth(t, ctx, report)
	checkAccessible(t, ctx, "health")
	shot.save(ctx, "02_health")

	// The events page, newest first.
	open(t, ctx, base+"/events")
	page := bodyText(t, ctx)
	for _, id := range []string{"evt_console_customer", "evt_console_invoice_paid", replayed, redriven, "evt_console_reconciled"} {
		if !strings.Contains(page, id) {
			t.Errorf("events page: no %s in\n%s", id, page)
		}
	}
	png := shot.save(ctx, "02_events")
	if *docsShot {
		if err := os.WriteFile(filepath.Join(root, "docs", "console.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkAccessible(t, ctx, "events")
	fits(t, ctx, "events")

	// The reconciler: checkpoints and runs, one of which found the event
	// that never arrived. Seen now, while that run is among the last
	// store.MaxRuns (it runs every 2 s; the waits below are longer).
	open(t, ctx, base+"/reconciler")
	if page = bodyText(t, ctx); !strings.Contains(page, "Last runs") || !strings.Contains(page, "complete") || !strings.Contains(page, "Checkpoints") {
		t.Errorf("reconciler page: got\n%s", page)
	}
	if found, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll("td.num.bad")].some(td => td.textContent.trim() === "1")`)); err != nil ||
		!found {
		t.Errorf("reconciler page: no run shows the missing event it found (%v)", err)
	}
	shot.save(ctx, "13_reconciler")

	// The audit page, linked from the health page: its last run, or that
	// none is recorded yet.
	open(t, ctx, base+"/audit")
	if page = bodyText(t, ctx); !strings.Contains(page, "Last audit of the mirror") ||
		(!strings.Contains(page, "No audit run recorded yet") && !strings.Contains(page, "Listed")) {
		t.Errorf("audit page: got\n%s", page)
	}
	checkAccessible(t, ctx, "audit")

	// The browser now holds the console's cookie. Another web server on the
	// same loopback host (cookies ignore ports), visited at any path but
	// the run's, receives none of it; and the console's pages outside the
	// run's path are refused as to a stranger.
	var (
		mu       sync.Mutex
		received []string
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.URL.Path+" Cookie: "+r.Header.Get("Cookie"))
		mu.Unlock()
		fmt.Fprintln(w, "another local server")
	}))
	defer other.Close()
	for _, p := range []string{"/", "/events", "/login"} {
		open(t, ctx, other.URL+p)
	}
	mu.Lock()
	for _, r := range received {
		if strings.Contains(r, token) || strings.Contains(r, "inboxctl_console") {
			t.Errorf("another server on 127.0.0.1 received the console's cookie: %s", r)
		}
	}
	if len(received) < 3 {
		t.Errorf("the other server saw %d requests, want 3 at least: %q", len(received), received)
	}
	mu.Unlock()
	outside := "http://" + conURL.Host + "/events"
	if resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(outside)); err != nil {
		t.Errorf("open %s: %v", outside, err)
	} else if resp.Status != http.StatusUnauthorized {
		t.Errorf("open %s, outside the run's path: got %d, want 401", outside, resp.Status)
	}
	open(t, ctx, base+"/events")

	// Filter the failed events from the keyboard: the status select takes
	// "failed" as typed, and Enter on the Filter button submits.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.ID("f-status")), chromedp.KeyEvent("failed")); err != nil {
		t.Fatal(err)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("f-status"))); v != "failed" {
		t.Fatalf("the status select after typing failed: got %q", v)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Focus(chromedp.CSS(".filters button[type=submit]")), chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	page = bodyText(t, ctx)
	if !strings.Contains(page, replayed) || !strings.Contains(page, redriven) || strings.Contains(page, "evt_console_invoice_paid") {
		t.Fatalf("failed events: got\n%s", page)
	}
	shot.save(ctx, "03_events_failed")

	// Open the failed payment: its record, its transitions, its payload.
	click(t, ctx, chromedp.CSS(`a[href="`+run+`/events/stripe/`+replayed+`"]`))
	page = bodyText(t, ctx)
	for _, want := range []string{"failed", "billing service: 503 service unavailable", "Transitions", "received", "claimed"} {
		if !strings.Contains(page, want) {
			t.Errorf("event page: no %q in\n%s", want, page)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("details.payload summary"))); err != nil {
		t.Fatal(err)
	}
	if opened, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("details.payload").open`)); err != nil || !opened {
		t.Errorf("the payload did not open: %v", err)
	}
	page = bodyText(t, ctx)
	if !strings.Contains(page, `"type": "invoice.payment_failed"`) || strings.Contains(page, "Stripe-Signature") || strings.Contains(page, "v1=") {
		t.Errorf("payload: want it pretty-printed and no signature:\n%s", page)
	}
	shot.save(ctx, "04_event_failed")

	// Fix the effect, replay, see the result, then see it processed.
	fx.set(replayed, false)
	click(t, ctx, chromedp.CSS(`a.button[href$="/replay"]`))
	if page = bodyText(t, ctx); !strings.Contains(page, "Put it back on the webhook queue") {
		t.Fatalf("replay confirmation: got\n%s", page)
	}
	shot.save(ctx, "05_replay_confirm")
	// The action needs the confirmation page's own form: submitted from
	// the console's origin, with its cookie, but without the form's token
	// (taken out of the page), it is refused and replays nothing.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.querySelector("main form input[name=csrf]").remove(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	refused, err := chromedp.RunResponse(ctx, chromedp.Focus(chromedp.CSS(`main form button[type=submit]`)), chromedp.KeyEvent("\r"))
	if err != nil {
		t.Fatalf("replay without the form's token: %v", err)
	}
	if refused.Status != http.StatusForbidden {
		t.Fatalf("replay without the form's token: got %d, want 403\n%s", refused.Status, bodyText(t, ctx))
	}
	if got := status(replayed); got != event.StatusFailed {
		t.Fatalf("replay without the form's token: the event is %s, want it still failed", got)
	}
	open(t, ctx, base+"/events/stripe/"+replayed+"/replay")
	// Confirmed from the keyboard: Enter on the form's button.
	if _, err := chromedp.RunResponse(ctx, chromedp.Focus(chromedp.CSS(`main form button[type=submit]`)), chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	if page = bodyText(t, ctx); !strings.Contains(page, "Enqueued: the processor claims it again") {
		t.Fatalf("replay result: got\n%s", page)
	}
	shot.save(ctx, "06_replayed")
	click(t, ctx, chromedp.CSS(`a.button[href="`+run+`/events/stripe/`+replayed+`"]`))
	waitFor(t, ctx, "the replayed event to show processed", ".lead .status", "processed")
	shot.save(ctx, "07_event_processed")

	// The other failing event is dead-lettered after its second attempt:
	// the DLQ page shows its message beside its status. Fix it, redrive it.
	open(t, ctx, base+"/dlq")
	waitFor(t, ctx, "the dead-lettered message in the DLQ", "table.dlq", redriven)
	if page = bodyText(t, ctx); !strings.Contains(page, "dead_lettered") {
		t.Fatalf("DLQ page: got\n%s", page)
	}
	fits(t, ctx, "DLQ")
	shot.save(ctx, "08_dlq")
	// Meanwhile the customer's page lists the dead-lettered invoice among
	// her events (never applied to the mirror, still hers), its status
	// beside it, and nothing saying she has no events.
	open(t, ctx, base+"/objects/cus_console")
	waitFor(t, ctx, "the customer's dead-lettered invoice on her page", `[aria-label="Events of the customer"]`, redriven)
	if page = bodyText(t, ctx); !regexp.MustCompile(redriven+`\s+invoice\.created\s+in_\S+\s+dead_lettered`).MatchString(page) ||
		strings.Contains(page, "None stored") {
		t.Errorf("customer page with a dead-lettered invoice: got\n%s", page)
	}
	shot.save(ctx, "08_customer_dead_lettered")
	open(t, ctx, base+"/dlq")
	waitFor(t, ctx, "the dead-lettered message in the DLQ", "table.dlq", redriven)
	fx.set(redriven, false)
	click(t, ctx, chromedp.CSS(`a[aria-label="Redrive the message of `+redriven+`"]`))
	shot.save(ctx, "09_redrive_confirm")
	click(t, ctx, chromedp.CSS(`main form button[type=submit]`))
	if page = bodyText(t, ctx); !strings.Contains(page, "Moved 1 message") {
		t.Fatalf("redrive result: got\n%s", page)
	}
	shot.save(ctx, "10_redriven")
	open(t, ctx, base+"/events/stripe/"+redriven)
	waitFor(t, ctx, "the redriven event to show processed", ".lead .status", "processed")
	shot.save(ctx, "11_redriven_processed")

	// The customer: snapshot, entitlement, subscriptions.
	open(t, ctx, base+"/find?id=cus_console")
	if page = bodyText(t, ctx); !strings.Contains(page, "Entitlement") || !strings.Contains(page, "Snapshot in the mirror") {
		t.Errorf("customer page: got\n%s", page)
	}
	shot.save(ctx, "12_customer")

	// Phone width: nothing wider than the screen, the events as cards.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/events", "/events?status=failing", "/events/stripe/" + replayed, "/events/stripe/" + replayed + "/replay",
		"/objects/cus_console", "/dlq", "/dlq/redrive", "/reconciler", "/audit"} {
		open(t, ctx, base+p)
		checkAccessible(t, ctx, p)
	}
	open(t, ctx, base+"/events")
	if cards, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...document.querySelectorAll("table.cards tbody tr")].every(tr => getComputedStyle(tr).display === "block")`)); err != nil ||
		!cards {
		t.Errorf("events at phone width: the rows are not cards (%v)", err)
	}
	shot.save(ctx, "14_events_phone")
}

// statusJSON runs inboxctl status --json against the local stack.
func statusJSON(t *testing.T, prefix string) cli.StatusJSON {
	t.Helper()
	env := testenv.Endpoints(t).Vars()
	env["AWS_REGION"] = "us-east-1"
	var out, errb bytes.Buffer
	code := cli.Run(
		context.Background(),
		[]string{"--prefix", prefix, "status", "--json"},
		strings.NewReader(""),
		&out,
		&errb,
		func(k string) string { return env[k] },
	)
	var r cli.StatusJSON
	if err := json.Unmarshal(out.Bytes(), &r); code != 0 || err != nil {
		t.Fatalf("inboxctl status --json: exit %d, %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	return r
}

// checkHealth checks the health page against inboxctl status's report:
// every status's count, the failing total, the dead-letter queue's depth
// (in the page and in the navigation), and the chart's bars, one per
// hour, adding up to the events received.
func checkHealth(t *testing.T, ctx context.Context, r cli.StatusJSON) {
	t.Helper()
	for _, c := range r.Counts {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('ul.counts a[data-status="`+c.Status+`"] .n').textContent`))
		if err != nil || got != fmt.Sprint(c.Count) {
			t.Errorf("health page: %s shows %q (%v), inboxctl status says %d", c.Status, got, err, c.Count)
		}
	}
	for sel, want := range map[string]string{
		"#received": fmt.Sprint(r.Received), "#failing": fmt.Sprintf("%d failing", r.Failing),
		"#dlq-depth .n": fmt.Sprint(r.DLQDepth), "#nav-dlq-depth": fmt.Sprint(r.DLQDepth),
	} {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+sel+`').textContent`))
		if err != nil || got != want {
			t.Errorf("health page: %s shows %q (%v), want %q as inboxctl status says", sel, got, err, want)
		}
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[...document.querySelectorAll("figure.chart svg rect.received")].map(e => +e.dataset.received)`))
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, n := range bars {
		sum += n
	}
	if len(bars) != len(r.Hours) || sum != r.Received || r.Received == 0 {
		t.Errorf("health chart: %d bars adding up to %d; inboxctl status: %d hours, %d received", len(bars), sum, len(r.Hours), r.Received)
	}
	if r.Failing == 0 || r.P95MS == 0 {
		t.Errorf("inboxctl status: %d failing, p95 %d ms; want the failing events counted and the processed ones timed", r.Failing, r.P95MS)
	}
}

// build makes a Stripe event of type typ with id, created at.
func build(t *testing.T, typ, id string, at time.Time) []byte {
	t.Helper()
	b, err := stripefixture.Build(typ, stripefixture.Options{ID: id, Customer: "cus_console", Created: at.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deliver posts body to the stack's gateway, signed as Stripe signs it.
func deliver(t *testing.T, url string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/webhooks/stripe", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Stripe-Signature", provider.SignStripe(body, devstack.DefaultWebhookSecret, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
		t.Fatalf("delivery: got %d %s", resp.StatusCode, b)
	}
}

// open navigates to u and fails unless it answers 200.
func open(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(u))
	if err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("open %s: got %d\n%s", u, resp.Status, bodyText(t, ctx))
	}
}

// click clicks what sel selects and waits for the page it leads to, which
// must answer 200.
func click[S chromedp.Selectable](t *testing.T, ctx context.Context, sel S) {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(sel))
	if err != nil {
		t.Fatalf("click %v: %v", sel, err)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("click %v: got %d\n%s", sel, resp.Status, bodyText(t, ctx))
	}
}

func bodyText(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return s
}

// waitFor reloads the page until the element css selects contains want,
// as an operator who presses F5 does.
func waitFor(t *testing.T, ctx context.Context, what, css, want string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText`, css)))
		if strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s reads %q", what, css, got)
		}
		time.Sleep(time.Second)
		if _, err := chromedp.RunResponse(ctx, chromedp.Reload()); err != nil {
			t.Fatal(err)
		}
	}
}

// fits checks that the page's list needs no horizontal scrolling at the
// window's width (1280 px): every column of it readable at once.
func fits(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	over, err := chromedp.Run(
		ctx,
		chromedp.Evaluate[int](`(() => { const e = document.querySelector(".scroll"); return e ? e.scrollWidth - e.clientWidth : 0; })()`),
	)
	if err != nil || over > 0 {
		t.Errorf("%s: the list is %d px wider than the page at this width (%v)", name, over, err)
	}
}

// checkAccessible checks what a keyboard and a screen reader need of a
// page just opened: the first Tab reaches the skip link, every field has a label,
// every button and link has a name, and nothing is wider than the window.
func checkAccessible(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
		t.Fatal(err)
	}
	first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.textContent`))
	if err != nil || first != "Skip to content" {
		t.Errorf("%s: the first Tab reaches %q (%v), want the skip link", name, first, err)
	}
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const out = [];
		for (const e of document.querySelectorAll("input:not([type=hidden]), select, textarea")) {
			if (!e.labels || e.labels.length === 0) out.push("a field without a label: " + e.outerHTML);
		}
		for (const e of document.querySelectorAll("a, button, summary")) {
			const n = (e.getAttribute("aria-label") || e.textContent).trim();
			if (!n) out.push("a control without a name: " + e.outerHTML);
		}
		if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push("the page is wider than the window: " + document.documentElement.scrollWidth + " > " + window.innerWidth);
		return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", name, p)
	}
}

package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
)

// offline returns a cli that needs no AWS endpoint.
func offline(t *testing.T) *cli {
	return &cli{t: t, now: now, env: map[string]string{}}
}

// verifyCase is one inboxctl verify run: a delivery, where its secrets come
// from, and the flags.
type verifyCase struct {
	name   string
	body   string // on stdin, or in --file with bodyFile
	header string // --header's value; noHeader leaves the flag out
	// envSecret is STRIPE_WEBHOOK_SECRET; fileSecret, when set, is written
	// to a file passed with --secret-file; stdinSecret is piped for
	// --secret-file - (the body then goes in --file).
	envSecret, fileSecret, stdinSecret string
	dev, bodyFile, ignoreAge, noHeader bool
	args                               []string // more flags
	code                               int
}

func verifyCases(t *testing.T) []verifyCase {
	b := string(body(t, "invoice.paid", stripefixture.Options{ID: "evt_verify", ObjectID: "in_verify", Customer: "cus_verify", Created: now.Unix()}))
	secret := "whsec_golden"
	sig := func(payload string, at time.Time) string { return provider.SignStripe([]byte(payload), secret, at) }
	captured := sig(b, now.Add(-120*24*time.Hour))
	fresh := fmt.Sprintf("t=%d", now.Unix())
	return []verifyCase{
		{name: "verify_valid", body: b, envSecret: secret, header: sig(b, now.Add(-7*time.Second)), code: 0},
		{name: "verify_file_env_secret", body: b, bodyFile: true, envSecret: secret, header: sig(b, now), code: 0},
		{name: "verify_wrong_secret", body: b, envSecret: "whsec_other", header: sig(b, now), code: 1},
		{name: "verify_stale", body: b, envSecret: secret, header: sig(b, now.Add(-26*time.Hour)), code: 1},
		{name: "verify_stale_ignored", body: b, envSecret: secret, header: sig(b, now.Add(-26*time.Hour)), ignoreAge: true, code: 0},
		{name: "verify_future", body: b, envSecret: secret, header: sig(b, now.Add(10*time.Minute)), code: 1},
		{name: "verify_far_future", body: b, envSecret: secret, header: sig(b, time.Unix(now.Unix()+1<<40, 0)), code: 1},
		{name: "verify_newline_added", body: b + "\n", envSecret: secret, header: sig(b, now), code: 1},
		{name: "verify_crlf", body: strings.ReplaceAll(b, "\n", "\r\n"), envSecret: secret, header: sig(b, now), code: 1},
		{name: "verify_reserialized_json", body: compact(t, b), envSecret: secret, header: sig(b, now), args: []string{"--json"}, code: 1},
		{name: "verify_base64", body: base64.StdEncoding.EncodeToString([]byte(b)), envSecret: secret, header: sig(b, now), code: 1},
		{name: "verify_rotation", body: b, fileSecret: "whsec_new\n" + secret + "\n", header: sig(b, now), args: []string{"--json"}, code: 0},
		{name: "verify_secret_from_stdin", body: b, bodyFile: true, stdinSecret: secret + "\n", header: sig(b, now), code: 0},
		{name: "verify_dev_secret", body: b, dev: true, envSecret: secret, header: provider.SignStripe([]byte(b), devstack.DefaultWebhookSecret, now), code: 0},
		{name: "verify_pasted_header_line", body: b, envSecret: secret, header: "Stripe-Signature: " + sig(b, now), code: 0},
		{name: "verify_space_in_header", body: b, envSecret: secret, header: strings.Replace(sig(b, now), ",", ", ", 1), code: 1},
		{name: "verify_replayed_fresh_t", body: b, envSecret: secret, header: fresh + "," + captured, code: 1},
		{
			name:      "verify_replayed_joined_headers",
			body:      b,
			envSecret: secret,
			header:    fresh + ",v1=" + strings.Repeat("0", 64) + "," + captured,
			args:      []string{"--json"},
			code:      1,
		},
		{name: "verify_malformed_header", body: b, envSecret: secret, header: "sha256=abc", code: 1},
		{name: "verify_empty_header", body: b, envSecret: secret, header: "", code: 1},
		{name: "verify_no_header_flag", body: b, envSecret: secret, noHeader: true, code: 2},
		{name: "verify_empty_body", body: "", envSecret: secret, header: sig(b, now), code: 2},
		{name: "verify_secret_flag_refused", body: b, header: sig(b, now), args: []string{"--secret", secret}, code: 2},
		{name: "verify_no_secret", body: b, header: sig(b, now), code: 2},
		{name: "verify_secret_stdin_needs_file", body: b, stdinSecret: secret, header: sig(b, now), code: 2},
	}
}

// run runs the case and returns the result and the secrets it was checked
// with.
func (tc verifyCase) run(t *testing.T, extra ...string) (result, []string) {
	t.Helper()
	c := offline(t)
	dir := t.TempDir()
	var args []string
	if !tc.noHeader {
		args = append(args, "--header", tc.header)
	}
	c.stdin = tc.body
	if tc.bodyFile {
		file := filepath.Join(dir, "body.json")
		if err := os.WriteFile(file, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--file", file)
		c.stdin = ""
	}
	var secrets []string
	if tc.envSecret != "" {
		c.env["STRIPE_WEBHOOK_SECRET"] = tc.envSecret
		secrets = strings.Split(tc.envSecret, ",")
	}
	if tc.fileSecret != "" {
		file := filepath.Join(dir, "secrets")
		if err := os.WriteFile(file, []byte(tc.fileSecret), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--secret-file", file)
		secrets = strings.Fields(tc.fileSecret)
	}
	if tc.stdinSecret != "" {
		args = append(args, "--secret-file", "-")
		c.stdin = tc.stdinSecret
		secrets = strings.Fields(tc.stdinSecret)
	}
	if tc.dev {
		args = append(args, "--dev")
		secrets = []string{devstack.DefaultWebhookSecret}
	}
	if tc.ignoreAge {
		args = append(args, "--ignore-age")
	}
	args = append(args, tc.args...)
	args = append(args, extra...)
	r := c.run(context.Background(), append([]string{"verify"}, args...)...)
	r.stdout = strings.ReplaceAll(r.stdout, dir, "DIR")
	r.stderr = strings.ReplaceAll(r.stderr, dir, "DIR")
	for i := range r.args {
		r.args[i] = strings.ReplaceAll(r.args[i], dir, "DIR")
	}
	return r, secrets
}

func TestVerifyGolden(t *testing.T) {
	for _, tc := range verifyCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := tc.run(t)
			offline(t).golden(tc.name, r.must(t, tc.code))
		})
	}
}

// TestVerifyAgreesWithTheReceiver runs every verify case that reaches a
// verdict through the receiver's Verifier too, with the same secrets and
// the same window: both must call it valid or not, and for the same class
// of reason.
func TestVerifyAgreesWithTheReceiver(t *testing.T) {
	for _, tc := range verifyCases(t) {
		if tc.code == ExitUsage {
			continue // no verdict: verify stopped before checking anything
		}
		t.Run(tc.name, func(t *testing.T) {
			r, secrets := tc.run(t, "--json")
			r.must(t, tc.code)
			var j VerifyJSON
			if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
				t.Fatalf("verify --json: %v\n%s", err, r.stdout)
			}
			o := verifyOpts{tolerance: provider.DefaultTolerance, skew: provider.DefaultFutureSkew, ignoreAge: tc.ignoreAge}
			v, err := provider.New(provider.Stripe, secrets, o.signatureOptions(func() time.Time { return now }))
			if err != nil {
				t.Fatal(err)
			}
			// The receiver gets the header's value; a pasted name is not
			// part of it.
			_, got := v.Verify(
				context.Background(),
				provider.Request{Body: []byte(tc.body), Headers: map[string]string{"stripe-signature": headerValue(tc.header)}},
			)
			want := provider.Problem(j.Problem).Err()
			if j.Valid != (got == nil) || !errors.Is(got, want) || (want == nil) != (got == nil) {
				t.Errorf("verify says %s (valid=%v), the receiver's Verifier says %v", j.Problem, j.Valid, got)
			}
		})
	}
}

func compact(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	// As a framework that parses the JSON and encodes it again would.
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSendGolden sends to a stand-in receiver that checks each delivery's
// signature, and compares what send printed.
func TestSendGolden(t *testing.T) {
	var mu sync.Mutex
	var got []string
	v, err := provider.New(provider.Stripe, []string{devstack.DefaultWebhookSecret}, provider.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if _, err := v.Verify(r.Context(), provider.Request{Body: b, Headers: map[string]string{"stripe-signature": r.Header.Get("Stripe-Signature")}}); err != nil {
			http.Error(w, `{"error":"bad signature"}`, 400)
			return
		}
		var ev struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &ev)
		mu.Lock()
		got = append(got, ev.ID+" "+ev.Type)
		mu.Unlock()
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	defer srv.Close()

	ctx := context.Background()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(devstack.DefaultWebhookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		env   string // STRIPE_WEBHOOK_SECRET
		stdin string
		args  []string
		code  int
	}{
		{"send_repeat", "", "", []string{"send", "--dev", "invoice.paid", "--id", "evt_send", "--customer", "cus_send", "--created", "1777600000", "--repeat", "2", "--url", srv.URL}, 0},
		{"send_several_json", devstack.DefaultWebhookSecret, "", []string{"send", "customer.subscription.created", "customer.subscription.updated", "--id", "evt_sub", "--object-id", "sub_send", "--json", "--url", srv.URL}, 0},
		{"send_wrong_secret", "whsec_wrong", "", []string{"send", "invoice.paid", "--id", "evt_bad", "--url", srv.URL}, 1},
		{"send_secret_file", "whsec_wrong", "", []string{"send", "invoice.paid", "--id", "evt_file", "--secret-file", secretFile, "--url", srv.URL}, 0},
		{"send_secret_stdin", "", devstack.DefaultWebhookSecret, []string{"send", "invoice.paid", "--id", "evt_stdin", "--secret-file", "-", "--url", srv.URL}, 0},
		{"send_secret_flag_refused", "", "", []string{"send", "invoice.paid", "--secret", "whsec_x", "--url", srv.URL}, 2},
		{"send_no_secret", "", "", []string{"send", "invoice.paid", "--url", srv.URL}, 2},
		{"send_unknown_type", "", "", []string{"send", "--dev", "nonsense", "--url", srv.URL}, 2},
		{"send_unhandled_type_warns", "", "", []string{"send", "--dev", "invoice.payed", "--id", "evt_payed", "--url", srv.URL}, 0},
		{"send_unhandled_type_strict", "", "", []string{"send", "--dev", "invoice.payed", "--strict", "--url", srv.URL}, 2},
		{"send_bad_repeat", "", "", []string{"send", "--dev", "invoice.paid", "--repeat", "0", "--url", srv.URL}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := offline(t)
			if tc.env != "" {
				c.env["STRIPE_WEBHOOK_SECRET"] = tc.env
			}
			c.stdin = tc.stdin
			c.golden(tc.name, c.run(ctx, tc.args...).must(t, tc.code), srv.URL, "URL", secretFile, "SECRET_FILE")
		})
	}
	want := "evt_send invoice.paid,evt_send invoice.paid,evt_sub_1 customer.subscription.created,evt_sub_2 customer.subscription.updated,evt_file invoice.paid,evt_stdin invoice.paid,evt_payed invoice.payed"
	if g := strings.Join(got, ","); g != want {
		t.Errorf("received: got %s, want %s", g, want)
	}
}

// TestShuffleReorders: --shuffle sends the same deliveries, in another
// order.
func TestShuffleReorders(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		got = append(got, ev.ID)
		mu.Unlock()
	}))
	defer srv.Close()
	var out strings.Builder
	a := &app{stdout: &out, stderr: &out, getenv: func(string) string { return "" }, now: time.Now,
		shuffle: func(n int, swap func(i, j int)) {
			for i := range n / 2 {
				swap(i, n-1-i)
			}
		}}
	if code := a.run(context.Background(), []string{"send", "--dev", "invoice.created", "invoice.paid", "invoice.voided", "--id", "evt_s", "--url", srv.URL, "--shuffle"}); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	if g := strings.Join(got, ","); g != "evt_s_3,evt_s_2,evt_s_1" {
		t.Errorf("order: got %s, want the shuffled evt_s_3,evt_s_2,evt_s_1", g)
	}
}

func TestNothingListeningSaysWhatToDo(t *testing.T) {
	c := offline(t)
	c.env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1"
	r := c.run(context.Background(), "event", "evt_1").must(t, 1)
	if !strings.Contains(r.stderr, "connection refused") || !strings.Contains(r.stderr, "start it with `make dev`") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

func TestColourOnlyOnATerminal(t *testing.T) {
	rows := [][]string{{"evt_1", "processed", "x"}, {"evt_22", "failed_permanent", "y"}}
	render := func(colour bool) string {
		var out strings.Builder
		a := &app{stdout: &out, colour: colour}
		cells := make([][]string, len(rows))
		for i, r := range rows {
			cells[i] = []string{r[0], a.status(r[1]), r[2]}
		}
		if err := a.table([]string{"ID", "STATUS", "X"}, cells); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	plain, coloured := render(false), render(true)
	if strings.Contains(plain, "\x1b") {
		t.Errorf("plain output has escape codes: %q", plain)
	}
	if !strings.Contains(coloured, green+"processed"+reset) || !strings.Contains(coloured, red+"failed_permanent"+reset) {
		t.Errorf("coloured output lacks colours: %q", coloured)
	}
	strip := strings.NewReplacer(green, "", red, "", reset, "")
	if got := strip.Replace(coloured); got != plain {
		t.Errorf("colour changed the alignment:\n%s\nwant\n%s", got, plain)
	}
}

package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/devstack"
	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/signature"
)

// offline returns a cli that needs no AWS endpoint.
func offline(t *testing.T) *cli {
	return &cli{t: t, now: now, env: map[string]string{}}
}

func TestVerifyGolden(t *testing.T) {
	ctx := context.Background()
	b := string(body(t, "invoice.paid", stripefixture.Options{ID: "evt_verify", ObjectID: "in_verify", Customer: "cus_verify", Created: now.Unix()}))
	secret := "whsec_golden"
	sig := func(payload string, at time.Time) string { return signature.Sign([]byte(payload), secret, at) }
	file := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(file, []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
	}{
		{"verify_valid", b, []string{"--secret", secret, "--header", sig(b, now.Add(-7*time.Second))}, 0},
		{"verify_file_env_secret", "", []string{"--file", file, "--header", sig(b, now)}, 0},
		{"verify_wrong_secret", b, []string{"--secret", "whsec_other", "--header", sig(b, now)}, 1},
		{"verify_stale", b, []string{"--secret", secret, "--header", sig(b, now.Add(-26*time.Hour))}, 1},
		{"verify_stale_ignored", b, []string{"--secret", secret, "--header", sig(b, now.Add(-26*time.Hour)), "--ignore-age"}, 0},
		{"verify_future", b, []string{"--secret", secret, "--header", sig(b, now.Add(10*time.Minute))}, 1},
		{"verify_newline_added", b + "\n", []string{"--secret", secret, "--header", sig(b, now)}, 1},
		{"verify_crlf", strings.ReplaceAll(b, "\n", "\r\n"), []string{"--secret", secret, "--header", sig(b, now)}, 1},
		{"verify_reserialized_json", compact(t, b), []string{"--secret", secret, "--header", sig(b, now), "--json"}, 1},
		{"verify_base64", base64.StdEncoding.EncodeToString([]byte(b)), []string{"--secret", secret, "--header", sig(b, now)}, 1},
		{"verify_rotation", b, []string{"--secret", "whsec_new", "--secret", secret, "--header", sig(b, now), "--json"}, 0},
		{"verify_malformed_header", b, []string{"--secret", secret, "--header", "sha256=abc"}, 1},
		{"verify_empty_header", b, []string{"--secret", secret, "--header", ""}, 1},
		{"verify_no_header_flag", b, []string{"--secret", secret}, 2},
		{"verify_empty_body", "", []string{"--secret", secret, "--header", sig(b, now)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := offline(t)
			c.env["STRIPE_WEBHOOK_SECRET"] = secret
			c.stdin = tc.stdin
			r := c.run(ctx, append([]string{"verify"}, tc.args...)...).must(t, tc.code)
			c.golden(tc.name, r, file, "BODY.json")
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
	v, err := signature.New([]string{devstack.DefaultWebhookSecret}, signature.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := v.Verify(b, r.Header.Get("Stripe-Signature")); err != nil {
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
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"send_repeat", []string{"send", "invoice.paid", "--id", "evt_send", "--customer", "cus_send", "--created", "1777600000", "--repeat", "2", "--url", srv.URL}, 0},
		{"send_several_json", []string{"send", "customer.subscription.created", "customer.subscription.updated", "--id", "evt_sub", "--object-id", "sub_send", "--json", "--url", srv.URL}, 0},
		{"send_wrong_secret", []string{"send", "invoice.paid", "--id", "evt_bad", "--secret", "whsec_wrong", "--url", srv.URL}, 1},
		{"send_unknown_type", []string{"send", "nonsense", "--url", srv.URL}, 2},
		{"send_bad_repeat", []string{"send", "invoice.paid", "--repeat", "0", "--url", srv.URL}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := offline(t)
			c.golden(tc.name, c.run(ctx, tc.args...).must(t, tc.code), srv.URL, "URL")
		})
	}
	want := "evt_send invoice.paid,evt_send invoice.paid,evt_sub_1 customer.subscription.created,evt_sub_2 customer.subscription.updated"
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
	if code := a.run(context.Background(), []string{"send", "invoice.created", "invoice.paid", "invoice.voided", "--id", "evt_s", "--url", srv.URL, "--shuffle"}); code != 0 {
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

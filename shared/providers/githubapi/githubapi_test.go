package githubapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/providers/githubapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/githubfake"
)

const token = "github_pat_test_0123456789"

func fixed(v string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return v, nil }
}

func newClient(t *testing.T, fake *githubfake.Server, cfg githubapi.Config) *githubapi.Client {
	t.Helper()
	cfg.BaseURL = fake.URL
	if cfg.Token == nil {
		cfg.Token = fixed(token)
	}
	c, err := githubapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseHooks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "", want: nil},
		{in: "repo:acme/shop/12, org:acme/34 ,app:56,repo:acme/shop/12", want: []string{"repo:acme/shop/12", "org:acme/34", "app:56"}},
		{in: "repo:acme/12", err: `"repo:acme/12"`},
		{in: "org:acme/x", err: `"x" is not a positive id`},
		{in: "app", err: `"app" has no kind`},
		{in: "team:acme/1,org:acme/0", err: `unknown kind "team"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			hooks, err := githubapi.ParseHooks(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error with %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hooks {
				got = append(got, h.String())
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestListsEveryPageNewestFirstWithinThreeDays(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fake := githubfake.Start(githubfake.Config{Token: token, Now: func() time.Time { return now }})
	defer fake.Close()
	hook := githubfake.RepoHook("acme", "shop", 12)
	// One too old to be kept, then 230 within the three days.
	fake.Record(hook, githubfake.Delivery{GUID: "old", Event: "push", StatusCode: 500, DeliveredAt: now.Add(-githubapi.Retention - time.Minute)})
	for i := range 230 {
		fake.Record(
			hook,
			githubfake.Delivery{GUID: fmt.Sprintf("g%03d", i), Event: "push", StatusCode: 200, DeliveredAt: now.Add(-time.Duration(230-i) * time.Minute)},
		)
	}
	c := newClient(t, fake, githubapi.Config{})
	h := githubapi.Hook{Kind: githubapi.KindRepo, Owner: "acme", Repo: "shop", ID: 12}
	var got []githubapi.Delivery
	cursor, pages := "", 0
	for {
		p, err := c.Deliveries(context.Background(), h, cursor)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, p.Deliveries...)
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if pages != 3 || len(got) != 230 {
		t.Fatalf("got %d deliveries in %d pages, want 230 in 3", len(got), pages)
	}
	if got[0].GUID != "g229" || got[229].GUID != "g000" {
		t.Errorf("got %s first and %s last, want g229 and g000 (newest first)", got[0].GUID, got[229].GUID)
	}
	for i := 1; i < len(got); i++ {
		if got[i].DeliveredAt.After(got[i-1].DeliveredAt) {
			t.Fatalf("delivery %d is newer than the one before it", i)
		}
	}
	if !got[0].OK() || got[0].StatusCode != 200 || got[0].Event != "push" {
		t.Errorf("got %+v, want a 200 push", got[0])
	}
}

func TestRedeliverMakesANewDeliveryWithTheSameGUID(t *testing.T) {
	fake := githubfake.Start(githubfake.Config{Token: token})
	defer fake.Close()
	hook := githubfake.OrgHook("acme", 34)
	d := fake.Record(hook, githubfake.Delivery{GUID: "guid-1", Event: "issues", Action: "opened", StatusCode: 502})
	c := newClient(t, fake, githubapi.Config{})
	h := githubapi.Hook{Kind: githubapi.KindOrg, Owner: "acme", ID: 34}
	if err := c.Redeliver(context.Background(), h, d.ID); err != nil {
		t.Fatal(err)
	}
	fake.Flush()
	p, err := c.Deliveries(context.Background(), h, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Deliveries) != 2 {
		t.Fatalf("got %d deliveries, want 2", len(p.Deliveries))
	}
	re := p.Deliveries[0]
	if re.GUID != "guid-1" || !re.Redelivery || re.ID == d.ID || !re.OK() || re.Action != "opened" {
		t.Errorf("got %+v, want a new 200 delivery of guid-1 with redelivery=true", re)
	}
	err = c.Redeliver(context.Background(), h, 999999)
	if !errors.Is(err, githubapi.ErrNotRedeliverable) {
		t.Errorf("unknown delivery: got %v, want ErrNotRedeliverable", err)
	}
}

func TestRateLimitsCarryTheirWait(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name      string
		status    int
		secondary bool
	}{
		{"primary 403", http.StatusForbidden, false},
		{"primary 429", http.StatusTooManyRequests, false},
		{"secondary 403", http.StatusForbidden, true},
		{"secondary 429", http.StatusTooManyRequests, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := githubfake.Start(githubfake.Config{Token: token, Now: func() time.Time { return now }})
			defer fake.Close()
			fake.AddHook(githubfake.RepoHook("acme", "shop", 12))
			if tc.secondary {
				fake.SecondaryRateLimit(1, tc.status, 90*time.Second)
			} else {
				fake.RateLimit(1, tc.status, 90*time.Second)
			}
			c := newClient(t, fake, githubapi.Config{Now: func() time.Time { return now }})
			_, err := c.Deliveries(context.Background(), githubapi.Hook{Kind: githubapi.KindRepo, Owner: "acme", Repo: "shop", ID: 12}, "")
			rl, ok := githubapi.RateLimited(err)
			if !ok {
				t.Fatalf("got %v, want a rate-limit error", err)
			}
			if rl.Status != tc.status {
				t.Errorf("status: got %d, want %d", rl.Status, tc.status)
			}
			if got := rl.Until.Sub(now); got != 90*time.Second {
				t.Errorf("wait: got %v, want 90s", got)
			}
		})
	}
}

func TestForbiddenWithoutRateLimitIsNotOne(t *testing.T) {
	fake := githubfake.Start(githubfake.Config{Token: token})
	defer fake.Close()
	fake.AddHook(githubfake.RepoHook("acme", "shop", 12))
	c := newClient(t, fake, githubapi.Config{Token: fixed("github_pat_wrong")})
	_, err := c.Deliveries(context.Background(), githubapi.Hook{Kind: githubapi.KindRepo, Owner: "acme", Repo: "shop", ID: 12}, "")
	if err == nil {
		t.Fatal("got nil error, want 401")
	}
	if _, ok := githubapi.RateLimited(err); ok {
		t.Errorf("got a rate-limit error for bad credentials: %v", err)
	}
	if strings.Contains(err.Error(), "github_pat_wrong") {
		t.Errorf("the error shows the token: %v", err)
	}
}

func TestAppHookIsReadWithTheAppsJWT(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)}))
	fake := githubfake.Start(githubfake.Config{AppID: 56, AppKey: &key.PublicKey})
	defer fake.Close()
	d := fake.Record(githubfake.AppHook, githubfake.Delivery{GUID: "app-guid", Event: "installation", StatusCode: 0})
	for _, tc := range []struct {
		name string
		key  string
		app  int64
		ok   bool
	}{
		{"its key", pemKey, 56, true},
		{"another key", otherPEM, 56, false},
		{"another app", pemKey, 57, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, fake, githubapi.Config{AppKey: fixed(tc.key)})
			h := githubapi.Hook{Kind: githubapi.KindApp, ID: tc.app}
			p, err := c.Deliveries(context.Background(), h, "")
			if !tc.ok {
				if err == nil {
					t.Fatal("got nil error, want 401")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Deliveries) != 1 || p.Deliveries[0].GUID != "app-guid" || p.Deliveries[0].OK() {
				t.Fatalf("got %+v, want the one failed delivery", p.Deliveries)
			}
			if err := c.Redeliver(context.Background(), h, d.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCredentialsNeverFollowARedirect: an API base that redirects (any
// 3xx, to another host or another port of the same one) is answered with
// an error, and the Location receives neither the token nor the App's JWT.
func TestCredentialsNeverFollowARedirect(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	var (
		mu       sync.Mutex
		received []string
	)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.Method+" "+r.URL.Path+" Authorization="+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]"))
	}))
	defer elsewhere.Close()
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		base := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, status)
		}))
		for _, tc := range []struct {
			name string
			hook githubapi.Hook
		}{
			{"token", githubapi.Hook{Kind: githubapi.KindRepo, Owner: "acme", Repo: "shop", ID: 12}},
			{"app jwt", githubapi.Hook{Kind: githubapi.KindApp, ID: 56}},
		} {
			t.Run(fmt.Sprintf("%d %s", status, tc.name), func(t *testing.T) {
				c, err := githubapi.New(githubapi.Config{BaseURL: base.URL, Token: fixed(token), AppKey: fixed(pemKey)})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.Deliveries(context.Background(), tc.hook, ""); err == nil {
					t.Errorf("list: got nil error, want the %d refused", status)
				}
				if err := c.Redeliver(context.Background(), tc.hook, 7); err == nil {
					t.Errorf("redeliver: got nil error, want the %d refused", status)
				}
			})
		}
		base.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range received {
		if !strings.HasSuffix(r, "Authorization=") {
			t.Errorf("the redirect's Location received %q, want no credential", r)
		}
	}
	if len(received) != 0 {
		t.Errorf("the redirect's Location received %d request(s), want none: no redirect is followed", len(received))
	}
}

// TestTheCredentialGoesToTheAPIHostOnly: a request the client is made to
// send elsewhere (another port of the same host, another scheme) is sent
// nowhere, with or without a credential.
func TestTheCredentialGoesToTheAPIHostOnly(t *testing.T) {
	fake := githubfake.Start(githubfake.Config{Token: token})
	defer fake.Close()
	var hits int
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer other.Close()
	c := newClient(t, fake, githubapi.Config{})
	for _, raw := range []string{other.URL + "/repos/acme/shop/hooks/12/deliveries", strings.Replace(fake.URL, "http://", "https://", 1) + "/repos"} {
		req, err := http.NewRequest(http.MethodGet, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.HTTPClient().Do(req)
		if !errors.Is(err, githubapi.ErrNotAPIHost) {
			t.Errorf("GET %s: got %v, want ErrNotAPIHost", raw, err)
		}
	}
	if hits != 0 {
		t.Errorf("the other host received %d request(s), want none", hits)
	}
}

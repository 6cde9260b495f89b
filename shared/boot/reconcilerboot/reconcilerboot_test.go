package reconcilerboot

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

func envMap(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestReportsEveryProblemAtOnce(t *testing.T) {
	_, err := FromEnv(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"RECONCILE_OVERLAP":    "an hour",
		"RECONCILE_MAX_PAGES":  "many",
		"RECONCILE_RATE_LIMIT": "25", // Stripe's own test-mode limit: too close
		"STRIPE_API_BASE":      "http://stripe.example.com",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil {
		t.Fatal("got nil error")
	}
	for _, want := range []string{"RECONCILE_OVERLAP", "RECONCILE_MAX_PAGES", "RECONCILE_RATE_LIMIT", "STRIPE_API_BASE", "STRIPE_API_KEY_PARAMETER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	_, err = FromEnv(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_MODE": "live", "RECONCILE_RATE_LIMIT": "90",
	}), aws.Config{}, slog.Default(), nil)
	if err == nil || !strings.Contains(err.Error(), "STRIPE_API_KEY_PARAMETER") || strings.Contains(err.Error(), "RECONCILE_RATE_LIMIT") {
		t.Fatalf("live mode, 90/s, no key: got %v, want only the missing key parameter", err)
	}
}

func TestBuildsFromALocalKey(t *testing.T) {
	r, err := FromEnv(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"STRIPE_API_KEY": "sk_test_local", "STRIPE_API_BASE": "http://127.0.0.1:1",
	}), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The mirror's 24 types take two types[] filters.
	if n := len(r.Groups()); n != 2 {
		t.Errorf("groups: got %d, want 2", n)
	}
}

func TestGitHubIsOffWithoutHooks(t *testing.T) {
	r, err := FromEnv(context.Background(), envMap(map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_API_KEY": "sk_test_local",
		// A token alone turns nothing on.
		"GITHUB_API_TOKEN": "github_pat_local",
	}), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.GitHubHooks()); n != 0 {
		t.Errorf("hooks: got %d, want none", n)
	}
}

func TestGitHubHooksNeedTheirCredentials(t *testing.T) {
	base := map[string]string{"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q", "STRIPE_API_KEY": "sk_test_local"}
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want      []string
		notWanted []string
		hooks     int
	}{
		{name: "bad hooks", env: map[string]string{"GITHUB_HOOKS": "repo:acme/12"}, want: []string{"GITHUB_HOOKS", `"repo:acme/12"`}},
		{name: "repo hook without a token", env: map[string]string{"GITHUB_HOOKS": "repo:acme/shop/12"},
			want: []string{"GITHUB_API_TOKEN_PARAMETER"}, notWanted: []string{"GITHUB_APP_PRIVATE_KEY_PARAMETER"}},
		{name: "app hook without a key", env: map[string]string{"GITHUB_HOOKS": "app:56"},
			want: []string{"GITHUB_APP_PRIVATE_KEY_PARAMETER"}, notWanted: []string{"GITHUB_API_TOKEN_PARAMETER"}},
		{name: "plain http to another host", env: map[string]string{"GITHUB_HOOKS": "org:acme/34", "GITHUB_API_TOKEN": "t", "GITHUB_API_BASE": "http://github.example.com"},
			want: []string{"GITHUB_API_BASE"}},
		{name: "a parameter of another stage", env: map[string]string{"GITHUB_HOOKS": "org:acme/34", "STAGE": "staging", "GITHUB_API_TOKEN_PARAMETER": "/webhook-inbox/prod/github/token"},
			want: []string{"GITHUB_API_TOKEN_PARAMETER=/webhook-inbox/prod/github/token is not one of stage staging"}},
		{name: "every kind, each with its credential", env: map[string]string{
			"GITHUB_HOOKS": "repo:acme/shop/12,org:acme/34,app:56", "GITHUB_API_TOKEN_PARAMETER": "/webhook-inbox/dev/github/token",
			"GITHUB_APP_PRIVATE_KEY_PARAMETER": "/webhook-inbox/dev/github/app-key", "GITHUB_API_BASE": "http://127.0.0.1:1"}, hooks: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			r, err := FromEnv(context.Background(), envMap(env), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if n := len(r.GitHubHooks()); n != tc.hooks {
					t.Errorf("hooks: got %d, want %d", n, tc.hooks)
				}
				return
			}
			if err == nil {
				t.Fatal("got nil error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %s:\n%v", w, err)
				}
			}
			for _, w := range tc.notWanted {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error mentions %s:\n%v", w, err)
				}
			}
		})
	}
}

// TestConnectAccountsAreListedToo: STRIPE_CONNECT_ACCOUNTS adds each
// account's groups, with their own checkpoints; an id that is no account's
// fails the cold start.
func TestConnectAccountsAreListedToo(t *testing.T) {
	env := map[string]string{
		"EVENTS_TABLE": "e", "MIRROR_TABLE": "m", "QUEUE_URL": "q",
		"STRIPE_API_KEY": "sk_test_local", "STRIPE_API_BASE": "http://127.0.0.1:1",
		"STRIPE_CONNECT_ACCOUNTS": "acct_a, acct_b,acct_a",
	}
	r, err := FromEnv(context.Background(), envMap(env), aws.Config{Region: "us-east-1"}, slog.Default(), nil)
	if err != nil {
		t.Fatal(err)
	}
	accounts := map[string]int{}
	for _, g := range r.Groups() {
		accounts[g.Account]++
	}
	if len(r.Groups()) != 6 || accounts[""] != 2 || accounts["acct_a"] != 2 || accounts["acct_b"] != 2 {
		t.Errorf("groups by account: got %v, want 2 each for the platform, acct_a and acct_b", accounts)
	}
	env["STRIPE_CONNECT_ACCOUNTS"] = "acct_a,cus_1"
	if _, err := FromEnv(context.Background(), envMap(env), aws.Config{Region: "us-east-1"}, slog.Default(), nil); err == nil {
		t.Error("a customer id among the accounts: got no error")
	}
	env["STRIPE_CONNECT_ACCOUNTS"] = "acct_a"
	for v, ok := range map[string]bool{"true": true, "false": true, "yes": false} {
		env["STRIPE_CONNECT_LIST_ACCOUNTS"] = v
		if _, err := FromEnv(context.Background(), envMap(env), aws.Config{Region: "us-east-1"}, slog.Default(), nil); (err == nil) != ok {
			t.Errorf("STRIPE_CONNECT_LIST_ACCOUNTS=%s: got %v, want accepted %v", v, err, ok)
		}
	}
}

// TestTheStuckSweepReadsTheDeclaredSenders: unset, the sweep reads every
// provider's lanes and each declared sender's; RECONCILE_STUCK_PROVIDERS
// may name a sender, and a name neither a provider nor a sender is
// refused.
func TestTheStuckSweepReadsTheDeclaredSenders(t *testing.T) {
	const decl = `[{"name":"n8n","signature_header":"x-sig","id_field":"id"}]`
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    []string
		wantErr string
	}{
		{"no sender, unset: the reconciler's default", map[string]string{}, nil, ""},
		{"a sender, unset", map[string]string{"GENERIC_SENDERS": decl}, append(slices.Clone(event.Providers), "n8n"), ""},
		{"a sender named", map[string]string{"GENERIC_SENDERS": decl, "RECONCILE_STUCK_PROVIDERS": "stripe,n8n"}, []string{"stripe", "n8n"}, ""},
		{"a sender not declared", map[string]string{"RECONCILE_STUCK_PROVIDERS": "n8n"}, nil, `"n8n" is not a provider`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := boot.NewReader(envMap(tc.env), aws.Config{})
			got := stuckProviders(r)
			err := r.Err("reconciler")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error saying %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

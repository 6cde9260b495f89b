package lambda

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/githubfake"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// TestReconcilerRedeliversGitHubWithTheTemplatesGitHubSettings deploys the
// template with GitHubHooks (a repository hook and an App's), the token
// and the App's key in their SSM parameters: the real reconciler binary
// gets the hooks and the parameters' names from the template alone, reads
// each credential once, when it first needs it, has GitHub redeliver the
// failed delivery of each hook (beside Stripe's missing event), and its
// policy (the grants that exist only
// with GitHub's parameters set) allows exactly what it did.
func TestReconcilerRedeliversGitHubWithTheTemplatesGitHubSettings(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	appKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	token := "github_pat_rie_" + randomHex(12)
	s := newSetupWith(
		t,
		map[string]string{
			"GitHubHooks":           "repo:acme/shop/12,app:56",
			"GitHubTokenParameter":  "{base}github-token",
			"GitHubAppKeyParameter": "{base}github-app-key",
		},
		map[string]string{"GitHubTokenParameter": token, "GitHubAppKeyParameter": appKey},
	)
	gh := githubfake.Start(githubfake.Config{Token: token, AppID: 56, AppKey: &key.PublicKey})
	t.Cleanup(gh.Close)
	repo := githubfake.RepoHook("acme", "shop", 12)
	// Inside a first run's window: older than the settle delay (5 min),
	// younger than one schedule period (the template's 10 min); what is
	// older is history a new deployment leaves alone.
	at := time.Now().Add(-7 * time.Minute)
	failed := map[string]githubfake.Delivery{
		repo: gh.Record(repo, githubfake.Delivery{GUID: "rie-repo-" + randomHex(4), Event: "push", StatusCode: 502, DeliveredAt: at}),
		githubfake.AppHook: gh.Record(
			githubfake.AppHook,
			githubfake.Delivery{GUID: "rie-app-" + randomHex(4), Event: "installation", StatusCode: 0, DeliveredAt: at},
		),
	}

	stripe := stripefake.New()
	t.Cleanup(stripe.Close)
	stripe.RequireKey(s.apiKey)
	// A Stripe event never delivered too: the run's policy is checked
	// whole, its queue grant included.
	body, err := stripefixture.Build("invoice.paid", stripefixture.Options{ID: "evt_rie_gh_" + randomHex(4), Created: at.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if err := stripe.Add(body); err != nil {
		t.Fatal(err)
	}
	env := s.env(t, reconcilerID, map[string]string{"GITHUB_API_BASE": gh.URL, "STRIPE_API_BASE": stripe.URL})
	if env["GITHUB_HOOKS"] != "repo:acme/shop/12,app:56" || !strings.HasSuffix(env["GITHUB_API_TOKEN_PARAMETER"], "/github-token") ||
		!strings.HasSuffix(env["GITHUB_APP_PRIVATE_KEY_PARAMETER"], "/github-app-key") {
		t.Fatalf("reconciler environment: GITHUB_HOOKS=%q GITHUB_API_TOKEN_PARAMETER=%q GITHUB_APP_PRIVATE_KEY_PARAMETER=%q, want the template's parameters",
			env["GITHUB_HOOKS"], env["GITHUB_API_TOKEN_PARAMETER"], env["GITHUB_APP_PRIVATE_KEY_PARAMETER"])
	}
	fn := start(t, hostBootstrap(t, reconcilerID), env)
	for range 2 {
		status, out := fn.call(t, []byte(`{}`))
		if status != http.StatusOK || strings.TrimSpace(string(out)) != "null" {
			t.Fatalf("scheduled run: got %d %s, want 200 and null\n%s", status, out, fn.out.String())
		}
	}
	gh.Flush()
	for hook, d := range failed {
		var redelivered int
		for _, a := range gh.Deliveries(hook) {
			if a.GUID == d.GUID && a.Redelivery {
				redelivered++
			}
		}
		if redelivered != 1 {
			t.Errorf("%s: %d redeliveries of %s, want 1\n%s", hook, redelivered, d.GUID, fn.out.String())
		}
	}
	// Stripe's key, GitHub's token and the App's key: each read once over
	// two runs.
	if reads := secretReads(s.rec.Calls(0)); reads != 3 {
		t.Errorf("secret reads over two runs: got %d, want 3 (each credential once)", reads)
	}
	auditOnce(t, s, fn, stripe)
	checkLeastPrivilege(t, s.stack.Template, s.stack.Resources, reconcilerID, s.rec.Calls(0))
}

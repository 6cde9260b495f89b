package boot_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

const module = "github.com/webhook-inbox/webhook-inbox/"

// TestDependencies holds each function to linking only what it runs, as
// `go list -deps` reports it: Go initializes every package a binary links,
// used or not, and that is paid at every cold start (make bench-coldstart
// reports it). The rules:
//   - the receiver links neither the reconciler, the mirror nor the
//     processor, and of stripe-go only the webhook signature check (with
//     the root package and form, which it imports);
//   - the bridge links what the receiver may, and neither the receiver
//     nor the other providers' verifiers;
//   - the processor does not link the reconciler;
//   - only the reconciler links GitHub's API (go-github's package builds
//     tables of every event type at init);
//   - no function links stripe-go's client package (it imports every
//     resource package of Stripe's API), the SDK's config package (every
//     credential source; package awsenv reads what Lambda gives) or its
//     ssm package (its schemas' initialization; secrets.Client makes the
//     one call).
func TestDependencies(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	const stripe = "github.com/stripe/stripe-go/v81"
	const gogithub = "github.com/google/go-github/v75/github"
	everywhere := []string{stripe + "/client", "github.com/aws/aws-sdk-go-v2/config", "github.com/aws/aws-sdk-go-v2/service/ssm"}
	rules := map[string]struct {
		forbidden []string
		// stripe, when set, lists every stripe-go package allowed.
		stripe []string
	}{
		"receiver": {
			forbidden: append(
				[]string{
					module + "shared/pipeline/reconcile",
					module + "shared/pipeline/redeliver",
					module + "shared/stripe/mirror",
					module + "shared/pipeline/processor",
					module + "shared/stripe/stripeapi",
					module + "shared/providers/githubapi",
					gogithub,
				},
				everywhere...),
			stripe: []string{stripe, stripe + "/form", stripe + "/webhook"},
		},
		// The bridge (Stripe's EventBridge destination) stores and queues,
		// as the receiver does, and verifies no signature of its own.
		"bridge": {
			forbidden: append(
				[]string{
					module + "shared/pipeline/reconcile",
					module + "shared/pipeline/redeliver",
					module + "shared/stripe/mirror",
					module + "shared/pipeline/processor",
					module + "shared/stripe/stripeapi",
					module + "shared/providers/githubapi",
					module + "shared/pipeline/receiver",
					module + "shared/providers/provider",
					gogithub,
				},
				everywhere...),
			stripe: []string{stripe, stripe + "/form", stripe + "/webhook"},
		},
		"processor":  {forbidden: append([]string{module + "shared/pipeline/reconcile", module + "shared/pipeline/redeliver", module + "shared/providers/githubapi", gogithub}, everywhere...)},
		"reconciler": {forbidden: everywhere},
	}
	for fn, rule := range rules {
		t.Run(fn, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "./functions/"+fn)
			cmd.Dir = root
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps ./functions/%s: %v", fn, err)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 10 {
				t.Fatalf("go list -deps ./functions/%s: got %d packages, want the function's whole graph", fn, len(deps))
			}
			for _, dep := range deps {
				for _, bad := range rule.forbidden {
					if dep == bad {
						t.Errorf("./functions/%s links %s", fn, dep)
					}
				}
				if rule.stripe != nil && strings.HasPrefix(dep, stripe) && !slices.Contains(rule.stripe, dep) {
					t.Errorf("./functions/%s links %s: of stripe-go it needs the webhook check only", fn, dep)
				}
			}
		})
	}
}

package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror/handled"
)

// TestTypesIsWhatToRegister: inboxctl types prints the receiver's
// allowlist, each type by name, and the API version the code is pinned
// to, which the registration step in docs/operations.md tells the
// operator to enter. A wildcard would select types the mirror does not
// handle (customer.subscription.* selects 8, the mirror handles 6).
func TestTypesIsWhatToRegister(t *testing.T) {
	c := offline(t)
	ctx := context.Background()
	r := c.run(ctx, "types", "--json").must(t, 0)
	var out TypesJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(handled.Types))
	if out.APIVersion != "2025-02-24.acacia" || !slices.Equal(out.Types, want) || out.Provider != "stripe" || out.WebhookURL != "" {
		t.Errorf("types --json: %+v; want stripe, 2025-02-24.acacia and %v, no URL without a stack", out, want)
	}
	var subs int
	for _, ty := range out.Types {
		if strings.Contains(ty, "*") {
			t.Errorf("a wildcard in the list: %s", ty)
		}
		if strings.HasPrefix(ty, "customer.subscription.") {
			subs++
		}
	}
	if subs != 6 {
		t.Errorf("%d customer.subscription types, want the mirror's 6", subs)
	}
	c.golden("types", c.run(ctx, "types").must(t, 0))

	// Locally it reads EVENT_TYPES as the functions do.
	c.env["EVENT_TYPES"] = "invoice.paid, customer.created"
	r = c.run(ctx, "types", "--json").must(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !slices.Equal(out.Types, []string{"customer.created", "invoice.paid"}) {
		t.Errorf("with EVENT_TYPES: %v (%v)", out.Types, err)
	}
}

package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// Group is a set of event types listed together: at most stripeapi.MaxTypes.
type Group struct {
	Types []string
	// Account is the connected account whose events the group lists
	// (Stripe Connect: the Stripe-Account header); empty for the
	// platform's own.
	Account string
	// Checkpoint names the group's checkpoint: the provider and a hash of
	// the sorted types, so a change to the set of handled types starts a
	// fresh checkpoint instead of trusting one that never covered the new
	// types.
	Checkpoint string
}

// Groups splits types into groups of at most stripeapi.MaxTypes, sorted and
// without duplicates, so the same set always makes the same groups.
func Groups(provider string, types []string) []Group {
	sorted := slices.Clone(types)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	sorted = slices.DeleteFunc(sorted, func(t string) bool { return strings.TrimSpace(t) == "" })
	var out []Group
	for chunk := range slices.Chunk(sorted, stripeapi.MaxTypes) {
		sum := sha256.Sum256([]byte(strings.Join(chunk, ",")))
		out = append(out, Group{Types: chunk, Checkpoint: provider + "#" + hex.EncodeToString(sum[:8])})
	}
	return out
}

// AccountGroups returns the groups of types for each connected account
// (Stripe Connect), after the platform's: the same chunks of types, each
// with a checkpoint of its own per account (provider#account#hash), so
// each account's progress is its own and a busy account's backlog never
// moves another's.
func AccountGroups(provider string, types, accounts []string) []Group {
	out := Groups(provider, types)
	seen := map[string]bool{}
	for _, a := range accounts {
		if a = strings.TrimSpace(a); a == "" || seen[a] {
			continue
		}
		seen[a] = true
		for _, g := range Groups(provider+"#"+a, types) {
			g.Account = a
			out = append(out, g)
		}
	}
	return out
}

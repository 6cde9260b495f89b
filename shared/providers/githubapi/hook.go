package githubapi

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is where a hook is configured.
type Kind string

// The kinds of hook whose deliveries GitHub lists.
const (
	KindRepo Kind = "repo" // a repository's webhook
	KindOrg  Kind = "org"  // an organization's webhook
	KindApp  Kind = "app"  // a GitHub App's webhook
)

// Hook names one webhook.
type Hook struct {
	Kind Kind
	// Owner is the repository's owner (KindRepo) or the organization
	// (KindOrg).
	Owner string
	// Repo is the repository's name (KindRepo).
	Repo string
	// ID is the hook's id (KindRepo, KindOrg) or the App's id (KindApp),
	// which signs the App's tokens.
	ID int64
}

// String returns the hook as ParseHooks reads it: repo:OWNER/REPO/ID,
// org:ORG/ID or app:APP_ID. It names the hook's checkpoint and its log
// lines.
func (h Hook) String() string {
	switch h.Kind {
	case KindRepo:
		return fmt.Sprintf("repo:%s/%s/%d", h.Owner, h.Repo, h.ID)
	case KindOrg:
		return fmt.Sprintf("org:%s/%d", h.Owner, h.ID)
	default:
		return fmt.Sprintf("app:%d", h.ID)
	}
}

// ParseHooks reads a comma-separated list of hooks (GITHUB_HOOKS):
// repo:OWNER/REPO/HOOK_ID, org:ORG/HOOK_ID, app:APP_ID. Empty means none.
// Each problem is reported, naming the entry.
func ParseHooks(s string) ([]Hook, error) {
	var out []Hook
	var bad []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		h, err := parseHook(f)
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		if k := h.String(); !seen[k] {
			seen[k] = true
			out = append(out, h)
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("githubapi: hooks: %s (want repo:OWNER/REPO/HOOK_ID, org:ORG/HOOK_ID or app:APP_ID)", strings.Join(bad, "; "))
	}
	return out, nil
}

func parseHook(f string) (Hook, error) {
	kind, rest, ok := strings.Cut(f, ":")
	if !ok {
		return Hook{}, fmt.Errorf("%q has no kind", f)
	}
	parts := strings.Split(rest, "/")
	id := func(s string) (int64, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%q: %q is not a positive id", f, s)
		}
		return n, nil
	}
	name := func(s string) error {
		if s == "" || strings.ContainsAny(s, " ?#%") {
			return fmt.Errorf("%q: %q is not a name", f, s)
		}
		return nil
	}
	switch Kind(kind) {
	case KindRepo:
		if len(parts) != 3 {
			return Hook{}, fmt.Errorf("%q: want repo:OWNER/REPO/HOOK_ID", f)
		}
		if err := name(parts[0]); err != nil {
			return Hook{}, err
		}
		if err := name(parts[1]); err != nil {
			return Hook{}, err
		}
		n, err := id(parts[2])
		return Hook{Kind: KindRepo, Owner: parts[0], Repo: parts[1], ID: n}, err
	case KindOrg:
		if len(parts) != 2 {
			return Hook{}, fmt.Errorf("%q: want org:ORG/HOOK_ID", f)
		}
		if err := name(parts[0]); err != nil {
			return Hook{}, err
		}
		n, err := id(parts[1])
		return Hook{Kind: KindOrg, Owner: parts[0], ID: n}, err
	case KindApp:
		if len(parts) != 1 {
			return Hook{}, fmt.Errorf("%q: want app:APP_ID", f)
		}
		n, err := id(parts[0])
		return Hook{Kind: KindApp, ID: n}, err
	}
	return Hook{}, fmt.Errorf("%q: unknown kind %q", f, kind)
}

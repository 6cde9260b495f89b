package boot

import (
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/mirror/handled"
)

// HandledTypeList lists the event types the pipeline handles, sorted:
// EVENT_TYPES (comma separated) when set, else the types the mirror handles
// and those the team's effects are registered for. The receiver accepts
// exactly these (others are recorded as ignored) and the reconciler lists
// exactly these, so it repairs what the receiver would have accepted.
// effects is read, never changed; nil means none.
func HandledTypeList(env Env, effects *effect.Registry) []string {
	var out []string
	if v := strings.TrimSpace(env("EVENT_TYPES")); v != "" {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	} else {
		out = append(out, handled.Types...)
		if effects != nil {
			out = append(out, effects.Types()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HandledTypes returns the event-type allowlist of HandledTypeList as a
// predicate.
func HandledTypes(env Env, effects *effect.Registry) func(string) bool {
	set := map[string]bool{}
	for _, t := range HandledTypeList(env, effects) {
		set[t] = true
	}
	return func(t string) bool { return set[t] }
}

package boot

import (
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror/handled"
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
// predicate, which also accepts Stripe's thin events: the list names
// snapshot types, and a thin event of an API v1 resource is accepted when
// its snapshot type is ("v1.invoice.paid" when "invoice.paid" is listed),
// so one list serves both kinds and a migration from one to the other
// changes no setting; a thin type listed as such is accepted too.
// event.TypeEventGenerationFailureResolved is always accepted: it asks the
// inbox to repair the mirror.
func HandledTypes(env Env, effects *effect.Registry) func(string) bool {
	listed := predicate(HandledTypeList(env, effects))
	return func(t string) bool {
		if listed(t) || t == event.TypeEventGenerationFailureResolved {
			return true
		}
		snapshot, thin := event.SnapshotType(t)
		return thin && listed(snapshot)
	}
}

// AcceptedTypeList lists every Stripe type HandledTypes accepts, sorted: the
// HandledTypeList's snapshot types, each one's thin form ("v1.invoice.paid"
// beside "invoice.paid") and event.TypeEventGenerationFailureResolved.
// It is what the template's EventBridge rule routes, since a Stripe event
// destination to Amazon EventBridge may send either kind.
func AcceptedTypeList(env Env, effects *effect.Registry) []string {
	out := []string{event.TypeEventGenerationFailureResolved}
	for _, t := range HandledTypeList(env, effects) {
		out = append(out, t)
		if _, thin := event.SnapshotType(t); !thin && t != event.TypeEventGenerationFailureResolved {
			out = append(out, event.ThinV1Prefix+t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ProviderTypesVariable is the variable holding the allowlist of a
// provider other than Stripe: GITHUB_EVENT_TYPES, SHOPIFY_EVENT_TYPES,
// STANDARD_EVENT_TYPES. EVENT_TYPES stays Stripe's.
func ProviderTypesVariable(provider string) string {
	return strings.ToUpper(provider) + "_EVENT_TYPES"
}

// ProviderTypeList lists the event types the pipeline handles for a
// provider other than Stripe, sorted: its variable
// (ProviderTypesVariable) when set, else the types the team's effects are
// registered for with that provider. No mirror reads them.
func ProviderTypeList(env Env, provider string, effects *effect.Registry) []string {
	var out []string
	if v := strings.TrimSpace(env(ProviderTypesVariable(provider))); v != "" {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	} else if effects != nil {
		out = append(out, effects.TypesFor(provider)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ProviderTypes returns ProviderTypeList as a predicate; nil (every type
// handled) when an effect is registered for all of the provider's types
// ("*") and no variable narrows them.
func ProviderTypes(env Env, provider string, effects *effect.Registry) func(string) bool {
	if strings.TrimSpace(env(ProviderTypesVariable(provider))) == "" && effects != nil && effects.HandlesFor(provider, "*") {
		return nil
	}
	return predicate(ProviderTypeList(env, provider, effects))
}

func predicate(types []string) func(string) bool {
	set := map[string]bool{}
	for _, t := range types {
		set[t] = true
	}
	return func(t string) bool { return set[t] }
}

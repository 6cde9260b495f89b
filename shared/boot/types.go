package boot

import (
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror/handled"
)

// HandledTypeList lists the event types the pipeline handles, sorted:
// listed (a function's EventTypes, EVENT_TYPES: Reader.EventTypes) when not
// nil, else the types the mirror handles and those the team's effects are
// registered for. The receiver accepts
// exactly these (others are recorded as ignored) and the reconciler lists
// exactly these, so it repairs what the receiver would have accepted.
// effects is read, never changed; nil means none.
func HandledTypeList(listed []string, effects *effect.Registry) []string {
	var out []string
	if listed != nil {
		out = append(out, listed...)
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
func HandledTypes(listed []string, effects *effect.Registry) func(string) bool {
	handled := predicate(HandledTypeList(listed, effects))
	return func(t string) bool {
		if handled(t) || t == event.TypeEventGenerationFailureResolved {
			return true
		}
		snapshot, thin := event.SnapshotType(t)
		return thin && handled(snapshot)
	}
}

// AcceptedTypeList lists every Stripe type HandledTypes accepts, sorted: the
// HandledTypeList's snapshot types, each one's thin form ("v1.invoice.paid"
// beside "invoice.paid") and event.TypeEventGenerationFailureResolved.
// It is what the template's EventBridge rule routes, since a Stripe event
// destination to Amazon EventBridge may send either kind.
func AcceptedTypeList(listed []string, effects *effect.Registry) []string {
	out := []string{event.TypeEventGenerationFailureResolved}
	for _, t := range HandledTypeList(listed, effects) {
		out = append(out, t)
		if _, thin := event.SnapshotType(t); !thin && t != event.TypeEventGenerationFailureResolved {
			out = append(out, event.ThinV1Prefix+t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// EventTypes reads EVENT_TYPES, Stripe's allowlist (comma separated): nil
// when it is not set (HandledTypeList's default).
func (r *Reader) EventTypes() []string { return r.list("EVENT_TYPES") }

// ProviderEventTypes reads provider's allowlist (ProviderTypesVariable):
// nil when it is not set (ProviderTypeList's default).
func (r *Reader) ProviderEventTypes(provider string) []string {
	return r.list(ProviderTypesVariable(provider))
}

// list reads the comma-separated variable key: nil when it is not set,
// its non-empty entries (perhaps none) when it is.
func (r *Reader) list(key string) []string {
	v := strings.TrimSpace(r.env(key))
	if v == "" {
		return nil
	}
	out := []string{}
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// ProviderTypesVariable is the variable holding the allowlist of a
// provider other than Stripe: GITHUB_EVENT_TYPES, SHOPIFY_EVENT_TYPES,
// STANDARD_EVENT_TYPES. EVENT_TYPES stays Stripe's.
func ProviderTypesVariable(provider string) string {
	return strings.ToUpper(provider) + "_EVENT_TYPES"
}

// ProviderTypeList lists the event types the pipeline handles for a
// provider other than Stripe, sorted: listed (its variable,
// ProviderTypesVariable: Reader.ProviderEventTypes) when not nil, else the
// types the team's effects are registered for with that provider. No
// mirror reads them.
func ProviderTypeList(listed []string, provider string, effects *effect.Registry) []string {
	var out []string
	if listed != nil {
		out = append(out, listed...)
	} else if effects != nil {
		out = append(out, effects.TypesFor(provider)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ProviderTypes returns ProviderTypeList as a predicate; nil (every type
// handled) when an effect is registered for all of the provider's types
// ("*") and no variable narrows them.
func ProviderTypes(listed []string, provider string, effects *effect.Registry) func(string) bool {
	if listed == nil && effects != nil && effects.HandlesFor(provider, "*") {
		return nil
	}
	return predicate(ProviderTypeList(listed, provider, effects))
}

func predicate(types []string) func(string) bool {
	set := map[string]bool{}
	for _, t := range types {
		set[t] = true
	}
	return func(t string) bool { return set[t] }
}

// EventTypesFrom reads Stripe's allowlist (EVENT_TYPES) from env, as
// Reader.EventTypes does: for a caller that reads no other variable.
func EventTypesFrom(env Env) []string { return (&Reader{env: env}).EventTypes() }

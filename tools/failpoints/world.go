package failpoints

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// Scale is how much faster than the world's own clock a case runs: one
// second of a case is Scale seconds of the providers', the reconciler's
// and the processor's time (a 10-minute reconciler period takes 2 s). SQS
// counts delays in whole seconds, so the processor's first backoff is 1 s,
// five times its share; everything else keeps its proportion.
const Scale = 300

// scaled is d of the world's time in a case's time, at least 50 ms.
func scaled(d time.Duration) time.Duration { return max(d/Scale, 50*time.Millisecond) }

// A World is one provider's side of the pipeline as the enumeration drives
// it: who sends its deliveries and how that courier retries, and what the
// processor can read a payload from.
type World struct {
	// Name names the world in the report: the provider's name, with a
	// suffix for a variant ("stripe-no-api-key").
	Name string
	// Provider is the provider's name in keys and in /webhooks/{provider}.
	Provider string
	// APIKey: the processor reads a Stripe event stored without its
	// payload from Stripe's API, and the reconciler lists Stripe's events.
	// Without it the reconciler's listing is refused (401) every run: a
	// deployment whose key is missing still sweeps stuck records.
	APIKey bool
	// Thin: the delivery is a Stripe thin event (an event destination's),
	// which the processor reads whole from Stripe's API (the event and its
	// object). The reconciler lists no thin event: a lost one is found
	// only as its snapshot twin, and this world's has none, so only the
	// courier's retries repair it.
	Thin bool
	// Connect is the connected account whose event the world's delivery
	// is (Stripe Connect), signed with the Connect endpoint's secret; the
	// reconciler knows the account once the receiver has recorded it.
	Connect string
	// Declared is the declaration (one object of GENERIC_SENDERS) of a
	// declared sender's world, whose Provider is its name: configured
	// as a deployment declares it (GenericSenders, its secret under
	// GenericSendersSecretsPath), and signing as declared.
	Declared string
	// ListAccounts: the reconciler also lists the platform's connected
	// accounts (StripeConnectListAccounts=true, GET /v1/accounts), which
	// name Connect's account, and lists each one's events.
	ListAccounts bool
	// Bridge: the event comes through Stripe's EventBridge destination:
	// EventBridge puts it on the ingress queue (AWS's own delivery, not a
	// call of the pipeline's: never faulted here) and the bridge ingests
	// it, recording its connected account on a Connect platform.
	Bridge bool
	// Tie: the mirror holds another event of the delivery's object and
	// second before it arrives, so the processor settles the tie from
	// Stripe's API (its read a failure point) before any effect runs.
	Tie bool
	// Audit: the reconciler function also runs the scheduled audit, once
	// as the case starts (racing the event in flight) and before each
	// reconciliation; Stripe's API lists the delivery's subscription.
	// AuditEffects runs the team's effects with its repairs
	// (AUDIT_RUN_EFFECTS).
	Audit        bool
	AuditEffects bool
	Retry        RetryPolicy
}

// Sender is the model of a provider's courier: what it does after an
// attempt that got no 2xx.
type RetryPolicy struct {
	// Retries are the waits before each retry, in the provider's time;
	// none: it never retries by itself.
	Retries []time.Duration
	// Redelivers: it keeps its deliveries and redelivers one when asked
	// (GitHub; the reconciler asks), instead of retrying.
	Redelivers bool
	// Says is the model in one line, for the report.
	Says string
}

// RetryPolicies are the retry models of the providers this enumeration knows;
// a provider without one (added later) gets DefaultRetryPolicy.
var RetryPolicies = map[string]RetryPolicy{
	event.ProviderStripe: {
		// Stripe publishes no intervals: "up to three days, with an
		// exponential back off". Modelled on the intervals reported for
		// live mode: 5 min, 30 min, 1 h, 2 h, then doubling to 24 h.
		Retries: []time.Duration{5 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour,
			8 * time.Hour, 16 * time.Hour, 24 * time.Hour, 24 * time.Hour},
		Says: "retries a non-2xx for 3 days, backing off (modelled: 5 min, 30 min, 1 h, 2 h, ... 24 h)",
	},
	provider.GitHub: {
		Redelivers: true,
		Says:       "never retries; keeps each delivery 3 days and redelivers it when the reconciler asks",
	},
	provider.Shopify: {
		// "8 times over the next 4 hours"; the intervals are unpublished,
		// so they are modelled even.
		Retries: slices.Repeat([]time.Duration{30 * time.Minute}, 8),
		Says:    "retries 8 times over 4 hours (modelled: every 30 min)",
	},
	provider.Standard: DefaultRetryPolicy,
}

// DeclaredWorlds are the declared senders' worlds: one whose template
// signs a timestamp and the id header (docs/providers.md's n8n example,
// the window bounding a capture), one that signs the body alone with the
// id in it (an internal service; its capture is bounded by the body's
// claim). Each sends the sample of every declared sender
// (internal/cli/samples/generic).
var DeclaredWorlds = []World{
	{
		Name: "declared-timestamp", Provider: "n8n",
		Declared: `{"name":"n8n","prefix":"sha256=","signature_header":"x-n8n-signature","timestamp_header":"x-n8n-timestamp",` +
			`"id_header":"x-n8n-delivery","template":"{timestamp}.{id}.{body}","type_field":"type"}`,
		Retry: RetryPolicy{
			// n8n's HTTP Request node with Retry On Fail at its most:
			// 5 tries, 5 s apart, each signed anew by the workflow.
			Retries: slices.Repeat([]time.Duration{5 * time.Second}, 4),
			Says:    "an n8n workflow's Retry On Fail at its most: 5 tries, 5 s apart, each signed anew",
		},
	},
	{
		Name: "declared-untimed", Provider: "billing_svc",
		Declared: `{"name":"billing_svc","signature_header":"x-signature","id_field":"id","type_field":"type"}`,
		Retry:    DefaultRetryPolicy,
	},
}

// sendersPath is the declared senders' secrets path
// (GenericSendersSecretsPath): each one's is <path>/<name>.
const sendersPath = "/webhook-inbox/dev/failpoints/senders"

// declared returns w's declared sender, checked as the receiver checks it.
func (w World) declared() (provider.Sender, error) {
	s, err := provider.ParseSenders("[" + w.Declared + "]")
	if err != nil {
		return provider.Sender{}, err
	}
	return s[0], nil
}

// sign returns the headers w's provider sends with d, signed with secret:
// a declared sender's as declared.
func (w World) sign(secret string, d provider.Delivery) (map[string]string, error) {
	if w.Declared == "" {
		return provider.Sign(w.Provider, secret, d)
	}
	s, err := w.declared()
	if err != nil {
		return nil, err
	}
	return s.Spec().Sign(secret, d)
}

// EventBridgeRetryPolicy is Stripe's EventBridge destination: the event is put
// on the ingress queue once; EventBridge's own retries (24 h) are AWS's,
// and its put never fails here.
var EventBridgeRetryPolicy = RetryPolicy{Says: "EventBridge puts the event on the ingress queue once (its own retries, 24 h, are AWS's)"}

// DefaultRetryPolicy is the Standard Webhooks reference schedule (Svix's):
// retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h. A provider
// with no model of its own is enumerated with it.
var DefaultRetryPolicy = RetryPolicy{
	Retries: []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
		5 * time.Hour, 10 * time.Hour, 10 * time.Hour},
	Says: "retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (the Standard Webhooks schedule)",
}

// Worlds are the worlds enumerated: one per provider the tables may hold
// (event.Providers), Stripe's nine times: with and without an API key,
// sending thin events, a connected account's (known from its events, or
// also from the platform's account list, or arriving through the
// EventBridge destination's bridge), one that ties with a same-second
// event of its object (the processor's API read), and two with the audit
// running beside the event (without and with its effects); then the
// declared senders' (DeclaredWorlds). A
// provider added to that list joins with its courier's model (RetryPolicies,
// else DefaultRetryPolicy) and its first sample delivery (Samples).
func Worlds() []World {
	var out []World
	for _, p := range event.Providers {
		s, ok := RetryPolicies[p]
		if !ok {
			s = DefaultRetryPolicy
		}
		if p == event.ProviderStripe {
			out = append(out, World{Name: p, Provider: p, APIKey: true, Retry: s})
			out = append(out, World{Name: p + "-no-api-key", Provider: p, Retry: s})
			out = append(out, World{Name: p + "-thin", Provider: p, APIKey: true, Thin: true, Retry: s})
			out = append(out, World{Name: p + "-connect", Provider: p, APIKey: true, Connect: connectAccount, Retry: s})
			out = append(out, World{Name: p + "-connect-listed", Provider: p, APIKey: true, Connect: connectAccount, ListAccounts: true, Retry: s})
			out = append(out, World{Name: p + "-bridge-connect", Provider: p, APIKey: true, Connect: connectAccount, Bridge: true, Retry: EventBridgeRetryPolicy})
			out = append(out, World{Name: p + "-tie", Provider: p, APIKey: true, Tie: true, Retry: s})
			out = append(out, World{Name: p + "-audit", Provider: p, APIKey: true, Audit: true, Retry: s})
			out = append(out, World{Name: p + "-audit-effects", Provider: p, APIKey: true, Audit: true, AuditEffects: true, Retry: s})
			continue
		}
		out = append(out, World{Name: p, Provider: p, Retry: s})
	}
	return append(out, DeclaredWorlds...)
}

// Samples is where the sample deliveries of the providers other than
// Stripe are, one directory per provider, a file per type (a Shopify
// topic's "/" a directory): those inboxctl send sends.
var Samples = filepath.Join("internal", "cli", "samples")

// delivery is the one event a case sends.
type delivery struct {
	id, typ string
	body    []byte
	// object is the object a thin event names, as Stripe's API serves it.
	object []byte
}

// sample returns a delivery of w's provider with id, created now: Stripe's
// from Stripe's own sample objects, the others' the first sample (by
// name) of the provider's directory under root.
func (w World) sample(root, id string, now time.Time) (delivery, error) {
	if w.Provider == event.ProviderStripe && w.Thin {
		const typ = "customer.subscription.updated"
		body, obj, err := stripefixture.Thin(typ, stripefixture.Options{ID: id, Created: now.Unix(), ObjectID: "sub_" + id, Customer: "cus_" + id}, stripefixture.ThinOptions{})
		return delivery{id: id, typ: event.ThinV1Prefix + typ, body: body, object: obj}, err
	}
	if w.Provider == event.ProviderStripe {
		const typ = "customer.subscription.updated"
		body, err := stripefixture.Build(typ, stripefixture.Options{ID: id, Created: now.Unix(), ObjectID: "sub_" + id, Customer: "cus_" + id, Account: w.Connect})
		return delivery{id: id, typ: typ, body: body}, err
	}
	samples := w.Provider
	if w.Declared != "" {
		samples = "generic"
	}
	dir := filepath.Join(root, Samples, samples)
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		return delivery{}, fmt.Errorf("failpoints: no sample delivery of %s in %s: %v", w.Provider, dir, err)
	}
	slices.Sort(files)
	body, err := os.ReadFile(files[0])
	if err != nil {
		return delivery{}, err
	}
	rel, _ := filepath.Rel(dir, files[0])
	typ := strings.TrimSuffix(filepath.ToSlash(rel), ".json")
	if w.Declared != "" {
		// The declaration puts this case's id and the type in the body
		// where it reads them.
		s, err := w.declared()
		if err != nil {
			return delivery{}, err
		}
		if body, id, err = s.Sample(body, id, typ); err != nil {
			return delivery{}, err
		}
		return delivery{id: id, typ: typ, body: body}, nil
	}
	// A provider whose id is in the body sends this case's id there.
	if body, id, err = provider.Stamp(w.Provider, body, id); err != nil {
		return delivery{}, err
	}
	return delivery{id: id, typ: typ, body: body}, nil
}

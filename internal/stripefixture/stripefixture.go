// Package stripefixture builds realistic Stripe events from Stripe's own
// sample objects (fixtures.json, from Stripe's public OpenAPI
// repository), for the CLI's send command, the tests and the load test.
package stripefixture

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"time"
)

//go:embed fixtures.json
var fixturesJSON []byte

var resources map[string]json.RawMessage

func init() {
	var f struct {
		Resources map[string]json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(fixturesJSON, &f); err != nil {
		panic("stripefixture: embedded fixtures are not JSON: " + err.Error())
	}
	resources = f.Resources
}

// APIVersion is the API version events are built with: the one stripe-go
// v81 is pinned to.
const APIVersion = "2025-02-24.acacia"

// Options shape a built event. Zero values take realistic defaults.
type Options struct {
	ID         string // evt_...; random when empty
	ObjectID   string // data.object.id; the sample's when empty
	Customer   string // data.object.customer (or the customer's own id)
	Created    int64  // Unix seconds; now when zero
	Livemode   bool
	APIVersion string
	// Account is the connected account the event is of (Stripe Connect:
	// the event's top-level "account"); none when empty.
	Account string
	// Status sets data.object.status (subscriptions, invoices, sessions);
	// the event type's usual status when empty.
	Status string
	// Set replaces top-level fields of data.object.
	Set map[string]any
}

// resourceFor maps an event type to the sample object it carries.
func resourceFor(eventType string) (string, error) {
	switch {
	case strings.HasPrefix(eventType, "customer.subscription."):
		return "subscription", nil
	case strings.HasPrefix(eventType, "checkout.session."):
		return "checkout.session", nil
	}
	i := strings.LastIndex(eventType, ".")
	if i <= 0 {
		return "", fmt.Errorf("stripefixture: %q is not an event type like invoice.paid", eventType)
	}
	name := eventType[:i]
	if _, ok := resources[name]; !ok {
		return "", fmt.Errorf("stripefixture: no sample object for %q (have %s)", eventType, strings.Join(Resources(), ", "))
	}
	return name, nil
}

// Resources lists the sample objects available.
func Resources() []string {
	var out []string
	for k := range resources {
		if k != "event" {
			out = append(out, k)
		}
	}
	return out
}

// usualStatus is the status an object usually has in an event of this type.
var usualStatus = map[string]string{
	"customer.subscription.created":        "active",
	"customer.subscription.updated":        "active",
	"customer.subscription.deleted":        "canceled",
	"customer.subscription.paused":         "paused",
	"customer.subscription.resumed":        "active",
	"customer.subscription.trial_will_end": "trialing",
	"invoice.created":                      "draft",
	"invoice.finalized":                    "open",
	"invoice.paid":                         "paid",
	"invoice.payment_succeeded":            "paid",
	"invoice.payment_failed":               "open",
	"invoice.voided":                       "void",
	"checkout.session.completed":           "complete",
}

// Build returns the JSON of an event of eventType, pretty-printed as Stripe
// sends it.
func Build(eventType string, o Options) ([]byte, error) {
	name, err := resourceFor(eventType)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(resources[name], &obj); err != nil {
		return nil, fmt.Errorf("stripefixture: sample %s: %w", name, err)
	}
	if o.ObjectID != "" {
		obj["id"] = o.ObjectID
	}
	if o.Customer != "" {
		if name == "customer" {
			obj["id"] = o.Customer
		} else {
			obj["customer"] = o.Customer
		}
	}
	status := o.Status
	if status == "" {
		status = usualStatus[eventType]
	}
	if _, has := obj["status"]; has && status != "" {
		obj["status"] = status
	}
	if _, has := obj["livemode"]; has {
		obj["livemode"] = o.Livemode
	}
	created := o.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	plausible(obj, created)
	switch name {
	case "subscription":
		periods(obj, created, status)
	case "invoice":
		obj["period_start"], obj["period_end"] = created-30*24*3600, created
		obj["due_date"], obj["next_payment_attempt"] = nil, nil
		if eventType == "invoice.payment_failed" {
			obj["next_payment_attempt"] = created + 3*24*3600
		}
	}
	for k, v := range o.Set {
		obj[k] = v
	}
	id := o.ID
	if id == "" {
		id = NewID("evt_")
	}
	version := o.APIVersion
	if version == "" {
		version = APIVersion
	}
	ev := map[string]any{
		"id":               id,
		"object":           "event",
		"api_version":      version,
		"created":          created,
		"data":             map[string]any{"object": obj},
		"livemode":         o.Livemode,
		"pending_webhooks": 1,
		"request":          map[string]any{"id": NewID("req_"), "idempotency_key": NewID("")},
		"type":             eventType,
	}
	if o.Account != "" {
		ev["account"] = o.Account
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, fmt.Errorf("stripefixture: encode: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// sampleTime is the time Stripe's sample objects give every timestamp
// (2009-02-13): a trial that ended in 2009 reads as a bug.
const sampleTime = 1234567890

// plausible moves the sample's timestamps at the top of obj to the event's
// time.
func plausible(obj map[string]any, created int64) {
	for k, v := range obj {
		if n, ok := v.(float64); ok && n == sampleTime {
			obj[k] = created
		}
	}
}

// periods gives a subscription a current period around the event's time (the
// sample's dates are from 2009), a start a day before it, a trial only
// when it is trialing, and no cancellation unless it is canceled (the
// sample is set to cancel at its period's end).
func periods(obj map[string]any, created int64, status string) {
	start, end := created-24*3600, created+30*24*3600
	obj["current_period_start"], obj["current_period_end"] = start, end
	obj["created"], obj["start_date"], obj["billing_cycle_anchor"] = start, start, start
	obj["trial_start"], obj["trial_end"] = nil, nil
	obj["cancel_at_period_end"], obj["cancel_at"], obj["canceled_at"], obj["ended_at"] = false, nil, nil, nil
	if status == "canceled" {
		obj["canceled_at"], obj["ended_at"] = created, created
	}
	if status == "trialing" {
		obj["trial_start"], obj["trial_end"] = start, created+14*24*3600
	}
	items, _ := obj["items"].(map[string]any)
	data, _ := items["data"].([]any)
	for _, it := range data {
		if m, ok := it.(map[string]any); ok {
			m["current_period_start"], m["current_period_end"] = start, end
		}
	}
}

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewID returns a random Stripe-like id with prefix.
func NewID(prefix string) string {
	b := make([]byte, 24)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return prefix + string(b)
}

// ObjectPrefix is the id prefix of the sample object eventType carries
// ("sub_" for customer.subscription.*, "in_" for invoice.*).
func ObjectPrefix(eventType string) (string, error) {
	name, err := resourceFor(eventType)
	if err != nil {
		return "", err
	}
	var obj struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resources[name], &obj); err != nil {
		return "", fmt.Errorf("stripefixture: sample %s: %w", name, err)
	}
	i := strings.Index(obj.ID, "_")
	return obj.ID[:i+1], nil
}

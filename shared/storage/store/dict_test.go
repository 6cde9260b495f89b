package store

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var writeDict = flag.Bool("write-dict", false, "write dict/stripe.v1.json from the fixtures (once: see TestStripeDictIsStripesSampleObjectsSkeleton)")

// skeleton is a Stripe sample object with every string and number value
// blanked ("" and 0), its keys, nesting, booleans, nulls and object types
// ("object": "customer") kept: the vocabulary every event of that type
// shares, none of the sample's own values.
func skeleton(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k != "object" {
				x[k] = skeleton(e)
			}
		}
	case []any:
		for i := range x {
			x[i] = skeleton(x[i])
		}
	case string:
		return ""
	case float64:
		return 0
	}
	return v
}

// stripeDictFromFixtures builds the dictionary: the skeletons of Stripe's
// sample objects (from its public OpenAPI repository, as
// internal/stripefixture holds them) for the types the inbox handles,
// pretty-printed as Stripe sends events, the event envelope last (DEFLATE
// reaches the end of a dictionary with the shortest distances).
func stripeDictFromFixtures(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile("../../../internal/stripefixture/fixtures.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Resources map[string]any `json:"resources"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, name := range []string{"charge", "payment_intent", "product", "price", "invoice", "checkout.session", "subscription", "customer", "event"} {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(skeleton(f.Resources[name])); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestStripeDictIsStripesSampleObjectsSkeleton: the payload dictionary is
// the skeleton of Stripe's sample objects, and it never changes: its
// Adler-32 names it in every payload packed with it, so a change would
// make them unreadable. A new dictionary is a new file beside it, read by
// its own id.
func TestStripeDictIsStripesSampleObjectsSkeleton(t *testing.T) {
	want := stripeDictFromFixtures(t)
	if *writeDict {
		if err := os.WriteFile("dict/stripe.v1.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(stripeDictData, want) {
		t.Errorf("dict/stripe.v1.json (%d bytes) is not the skeleton of the fixtures (%d bytes)", len(stripeDictData), len(want))
	}
	if got := stripeDict().ID(); got != stripeDictID {
		t.Errorf("the Stripe payload dictionary's id: got %08x, want %08x: stored payloads name it", got, stripeDictID)
	}
	// Its values are blank: no sample's id, name or address is in it.
	for _, v := range [][]byte{[]byte(`"cus_`), []byte(`"Jenny`), []byte(`@example.com`)} {
		if bytes.Contains(stripeDictData, v) {
			t.Errorf("the dictionary holds a sample value %s", v)
		}
	}
}

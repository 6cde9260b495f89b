package mirror_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

func TestParseFieldsRejectsWhatItCannotRead(t *testing.T) {
	for _, tc := range []struct {
		spec, want string
	}{
		{"metadata", "want type:path"},
		{"customer:", "want type:path"},
		{":metadata", "want type:path"},
		{"charge:metadata", `unknown object type "charge"`},
		{"customer:metadata..x", `segment "" is not a field name`},
		{"customer:meta data", "is not a field name"},
		{"customer:items.*", "is not a field name"},
		{"customer:metadata, invoice:lines.data[x]", "is not a field name"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := mirror.ParseFields(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseFields(%q): got %v, want an error with %q", tc.spec, err, tc.want)
			}
		})
	}
	if _, err := mirror.ParseFields(" , subscription:metadata.app_user_id ,*:metadata.tenant, customer:* "); err != nil {
		t.Errorf("a valid spec with blanks: %v", err)
	}
}

// filter runs Filter over obj (JSON text) and decodes the result.
func filter(t *testing.T, spec, objectType, obj string) map[string]any {
	t.Helper()
	f, err := mirror.ParseFields(spec)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Filter(objectType, json.RawMessage(obj))
	if err != nil {
		t.Fatalf("Filter: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("Filter gave invalid JSON %s: %v", out, err)
	}
	return m
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestFilterKeepsWhatThePathsName(t *testing.T) {
	sub := `{"id":"sub_1","object":"subscription","status":"active","description":"for jane@example.com",
	  "metadata":{"app_user_id":"u_1","email":"jane@example.com"},
	  "items":{"object":"list","url":"/v1/x","data":[
	    {"id":"si_1","metadata":{"note":"x"},"price":{"id":"price_1","product":"prod_1","nickname":"Gold","metadata":{"a":"b"}}},
	    {"id":"si_2","price":{"id":"price_2","product":{"id":"prod_2","name":"Pro","description":"secret"},"nickname":null}}]}}`

	t.Run("defaults keep ids and status, drop the rest", func(t *testing.T) {
		got := jsonOf(filter(t, "", "subscription", sub))
		// An expanded product (Stripe expands nothing in webhooks, but an
		// event fetched with expand could) is reduced to its id.
		want := `{"id":"sub_1","items":{"data":[{"id":"si_1","price":{"id":"price_1","product":"prod_1"}},` +
			`{"id":"si_2","price":{"id":"price_2","product":{"id":"prod_2"}}}]},"object":"subscription","status":"active"}`
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
	t.Run("a nested path through a list", func(t *testing.T) {
		m := filter(t, "subscription:items.data[].price.nickname", "subscription", sub)
		items := m["items"].(map[string]any)["data"].([]any)
		if n := items[0].(map[string]any)["price"].(map[string]any)["nickname"]; n != "Gold" {
			t.Errorf("first item's nickname: got %v, want Gold", n)
		}
		if p := items[1].(map[string]any)["price"].(map[string]any); p["nickname"] != nil || p["id"] != "price_2" {
			t.Errorf("second item's price: got %v, want id and a null nickname", p)
		}
	})
	t.Run("one metadata key, not the others", func(t *testing.T) {
		m := filter(t, "subscription:metadata.app_user_id", "subscription", sub)
		if got := jsonOf(m["metadata"]); got != `{"app_user_id":"u_1"}` {
			t.Errorf("metadata: got %s, want only app_user_id", got)
		}
	})
	t.Run("* applies to every type", func(t *testing.T) {
		for _, typ := range mirror.ObjectTypes {
			m := filter(t, "*:metadata.tenant", typ, `{"id":"x_1","object":"`+typ+`","metadata":{"tenant":"acme","email":"e"}}`)
			if got := jsonOf(m["metadata"]); got != `{"tenant":"acme"}` {
				t.Errorf("%s: metadata %s, want the tenant only", typ, got)
			}
		}
	})
	t.Run("a path through an id or an expanded object keeps the id", func(t *testing.T) {
		for _, customer := range []string{`"cus_1"`, `{"id":"cus_1","email":"jane@example.com"}`} {
			m := filter(t, "invoice:customer.id", "invoice", `{"id":"in_1","object":"invoice","customer":`+customer+`}`)
			got := jsonOf(m["customer"])
			if !strings.Contains(got, "cus_1") || strings.Contains(got, "jane") {
				t.Errorf("customer %s: kept %s, want the id only", customer, got)
			}
		}
	})
	t.Run("the type's whole object with *", func(t *testing.T) {
		f, err := mirror.ParseFields("subscription:*")
		if err != nil {
			t.Fatal(err)
		}
		out, err := f.Filter("subscription", json.RawMessage(sub))
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		_ = json.Compact(&want, []byte(sub))
		if !bytes.Equal(out, want.Bytes()) {
			t.Errorf("got %s\nwant the object byte for byte, compacted", out)
		}
	})
	t.Run("an unknown type keeps id and object", func(t *testing.T) {
		if got := jsonOf(filter(t, "", "charge", `{"id":"ch_1","object":"charge","billing_details":{"email":"e"}}`)); got != `{"id":"ch_1","object":"charge"}` {
			t.Errorf("got %s", got)
		}
	})
	t.Run("text is kept as sent, not HTML-escaped", func(t *testing.T) {
		f := mirror.DefaultFields()
		out, err := f.Filter("product", json.RawMessage(`{"id":"prod_1","object":"product","name":"Tom & Jerry <3>"}`))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(out, []byte(`"Tom & Jerry <3>"`)) {
			t.Errorf("got %s, want the name unescaped", out)
		}
	})
}

// TestDefaultFieldsNameNoPersonalData: no default path goes through a
// field where Stripe puts personal data or free text.
func TestDefaultFieldsNameNoPersonalData(t *testing.T) {
	personal := map[string]bool{}
	for _, name := range strings.Fields(`email name phone address shipping shipping_details customer_details
		collected_information individual_name business_name metadata description custom_fields tax_ids
		customer_email customer_name customer_phone customer_address customer_shipping customer_tax_ids
		account_name footer url hosted_invoice_url invoice_pdf success_url cancel_url return_url`) {
		personal[name] = true
	}
	f := mirror.DefaultFields()
	for _, typ := range mirror.ObjectTypes {
		paths := f.Paths(typ)
		if len(paths) < 3 || paths[0] != "id" || paths[1] != "object" {
			t.Errorf("%s: paths %v, want id, object and the defaults", typ, paths)
		}
		for _, p := range paths {
			for _, seg := range strings.Split(p, ".") {
				// A product's name is the team's catalogue.
				if personal[strings.TrimSuffix(seg, "[]")] && !(typ == "product" && p == "name") {
					t.Errorf("%s: default path %s goes through %s", typ, p, seg)
				}
			}
		}
	}
}

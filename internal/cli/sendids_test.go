package cli

import (
	"strings"
	"testing"
)

// TestSendObjectIDs: --customer gives each customer a subscription of its
// own, the same one on every send; invoices and a send without --customer
// get fresh ids; --object-id wins.
func TestSendObjectIDs(t *testing.T) {
	id := func(typ string, o sendOpts) string {
		t.Helper()
		v, err := sendObjectID(typ, o)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := id("customer.subscription.created", sendOpts{customer: "cus_alice"})
	if a != "sub_alice" || id("customer.subscription.updated", sendOpts{customer: "cus_alice"}) != a {
		t.Errorf("cus_alice's subscription: got %s, want sub_alice on every send", a)
	}
	if b := id("customer.subscription.created", sendOpts{customer: "cus_bob"}); b == a {
		t.Errorf("two customers share the subscription %s", a)
	}
	i1, i2 := id("invoice.paid", sendOpts{customer: "cus_alice"}), id("invoice.paid", sendOpts{customer: "cus_alice"})
	if i1 == i2 || !strings.HasPrefix(i1, "in_") {
		t.Errorf("invoices: got %s and %s, want two fresh in_ ids", i1, i2)
	}
	if s1, s2 := id("customer.subscription.created", sendOpts{}), id("customer.subscription.created", sendOpts{}); s1 == s2 {
		t.Errorf("two sends without --customer share the subscription %s", s1)
	}
	if got := id("invoice.paid", sendOpts{objectID: "in_given", customer: "cus_alice"}); got != "in_given" {
		t.Errorf("--object-id: got %s", got)
	}
	if got := id("customer.updated", sendOpts{customer: "cus_alice"}); got != "" {
		t.Errorf("a customer event: got object id %q, want the customer's own (Build's)", got)
	}
}

// TestNoCredentialsSaysWhatToDo: a deployed stage without credentials
// stops before any call, with the fix, not the SDK's provider chain alone.
func TestNoCredentialsSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": dir + "/config", "AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "",
	} {
		t.Setenv(k, v)
	}
	c := offline(t)
	c.prefix = ""
	r := c.run(t.Context(), "--stage", "dev", "--region", "eu-west-1", "types")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "no AWS credentials") || !strings.Contains(r.stderr, "aws configure") {
		t.Errorf("got exit %d\n%s\nwant 1 and what to run", r.code, r.stderr)
	}
}

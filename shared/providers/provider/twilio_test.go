package provider

import (
	"context"
	"errors"
	"testing"
)

// Twilio's vectors, as the twilio npm package 6.3.1's validateRequest
// accepted them (../shared/FACTS.md).
func TestTwilioVectors(t *testing.T) {
	form := "CallSid=CA1234567890ABCDE&Caller=%2B12349013030&Digits=1234&From=%2B12349013030&To=%2B18005551212"
	const jsonBody = `{"property": "value", "boolean": true}`
	opts := Options{Settings: map[string]string{SettingURL: "https://mycompany.com/myapp.php"}}
	for _, tc := range []struct {
		name, secret, query, body, sig, settings string
		want                                     error
	}{
		{"form, HMAC-SHA1", "12345", "foo=1&bar=2", form, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=", "", nil},
		{"JSON through bodySHA256", "12345", "foo=1&bar=2&bodySHA256=0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620", jsonBody, "a9nBmqA0ju/hNViExpshrM61xv4=", "", nil},
		{"SharedKey, HMAC-SHA256", "sharedsecret", "foo=1&bar=2", form, "IDCkT2jipWgWurYfkCryXYfzNpn9JLRFI2bc0N2m/yU=", "key=sharedsecret,algorithm=HMAC_SHA256", nil},
		{"wrong token", "54321", "foo=1&bar=2", form, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=", "", ErrNoMatch},
		{"a parameter changed", "12345", "foo=1&bar=2", form + "&x=1", "0/KCTR6DLpKmkAf8muzZqo1nDgQ=", "", ErrNoMatch},
		{"the query changed", "12345", "foo=1&bar=3", form, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=", "", ErrNoMatch},
		{"JSON body changed", "12345", "foo=1&bar=2&bodySHA256=0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620", jsonBody + " ", "a9nBmqA0ju/hNViExpshrM61xv4=", "", ErrNoMatch},
		{"no signature", "12345", "foo=1&bar=2", form, "", "", ErrMissingSignature},
		{"not base64", "12345", "foo=1&bar=2", form, "not base64!", "", ErrMalformedSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(Twilio, []string{"other token", tc.secret}, opts)
			if err != nil {
				t.Fatal(err)
			}
			h := map[string]string{"i-twilio-idempotency-token": "idem-1"}
			if tc.sig != "" {
				h["x-twilio-signature"] = tc.sig
			}
			if tc.settings != "" {
				h["x-twilio-webhooks-signature-settings"] = tc.settings
			}
			out, err := v.Verify(
				t.Context(),
				Request{Body: []byte(tc.body), Headers: h, Host: "ignored.execute-api.example", Path: "/webhooks/twilio", Query: tc.query},
			)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err == nil && (out.Envelope.ID != "idem-1" || out.ReplayKey == "") {
				t.Errorf("got %+v, want the idempotency token as the id and a replay key (the id is unsigned)", out)
			}
		})
	}
	// The default port: the URL configured with :443 verifies the vector
	// signed without it.
	v, err := New(Twilio, []string{"12345"}, Options{Settings: map[string]string{SettingURL: "https://mycompany.com:443/myapp.php"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify2(v, form, "foo=1&bar=2", "0/KCTR6DLpKmkAf8muzZqo1nDgQ="); err != nil {
		t.Errorf("the URL with :443: got %v, want the port-less signature accepted", err)
	}
	for _, u := range []string{"", "http://mycompany.com/x", "https://mycompany.com/x?foo=1"} {
		if _, err := New(Twilio, []string{"12345"}, Options{Settings: map[string]string{SettingURL: u}}); err == nil {
			t.Errorf("URL %q: got no error, want one", u)
		}
	}
}

func verify2(v Verifier, body, query, sig string) (Verified, error) {
	return v.Verify(t0(), Request{Body: []byte(body), Headers: map[string]string{"x-twilio-signature": sig}, Query: query})
}

func t0() context.Context { return context.Background() }

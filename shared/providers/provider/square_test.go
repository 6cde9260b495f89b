package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Square's vector, as the square npm package 46.0.0's WebhooksHelper
// accepted it (../shared/FACTS.md).
const (
	squareKey          = "Ibxx_5AKakO-3qeNVR61Dw"
	squareURL          = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
	squareBody         = `{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}`
	squareVectorHeader = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
)

func squareMAC(key, url, body string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(url + body))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestSquareVector(t *testing.T) {
	if got := squareMAC(squareKey, squareURL, squareBody); got != squareVectorHeader {
		t.Fatalf("independent HMAC: got %s, want the vector's", got)
	}
	at := func(u string) Options { return Options{Settings: map[string]string{SettingURL: u}} }
	v, err := New(Square, []string{squareKey}, at(squareURL))
	if err != nil {
		t.Fatal(err)
	}
	env, err := verify(v, []byte(squareBody), map[string]string{"X-Square-HmacSha256-Signature": squareVectorHeader})
	if err != nil {
		t.Fatal(err)
	}
	want := event.Envelope{ID: "ac3ac95b-f97d-458c-a6e6-18981597e05f", Type: "webhooks.test_notification", Created: 1657744259,
		Account: "MLEFBHHSJGVHD", ObjectID: "bc368e64-01aa-407e-b46e-3231809b1129", ObjectType: "webhooks"}
	if env != want {
		t.Errorf("got %+v, want %+v", env, want)
	}
	for _, tc := range []struct {
		name    string
		secrets []string
		url     string
		sig     string
		body    string
		want    error
	}{
		{"rotation: the vector's key second", []string{"new key", squareKey}, squareURL, squareVectorHeader, squareBody, nil},
		{"wrong key", []string{"other"}, squareURL, squareVectorHeader, squareBody, ErrNoMatch},
		{"another URL configured", []string{squareKey}, "https://hooks.example.com/webhooks/square", squareVectorHeader, squareBody, ErrNoMatch},
		{"a trailing slash", []string{squareKey}, squareURL + "/", squareVectorHeader, squareBody, ErrNoMatch},
		{"body changed", []string{squareKey}, squareURL, squareVectorHeader, squareBody + " ", ErrNoMatch},
		{"no signature", []string{squareKey}, squareURL, "", squareBody, ErrMissingSignature},
		{"hex, not base64", []string{squareKey}, squareURL, "185e1892b260", squareBody, ErrMalformedSignature},
		{"not JSON", []string{squareKey}, squareURL, squareMAC(squareKey, squareURL, "oops"), "oops", event.ErrMalformed},
		{"no event_id", []string{squareKey}, squareURL, squareMAC(squareKey, squareURL, `{"type":"payment.updated"}`), `{"type":"payment.updated"}`, event.ErrMissingID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(Square, tc.secrets, at(tc.url))
			if err != nil {
				t.Fatal(err)
			}
			h := map[string]string{}
			if tc.sig != "" {
				h["x-square-hmacsha256-signature"] = tc.sig
			}
			_, err = verify(v, []byte(tc.body), h)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	for _, u := range []string{"", "http://webhook.site/x", "webhook.site/x"} {
		if _, err := New(Square, []string{squareKey}, at(u)); err == nil {
			t.Errorf("notification URL %q: got no error, want one", u)
		}
	}
}

// testSettings are the settings the table tests give each provider that
// needs some, and testOptions the options with them.
var testSettings = map[string]map[string]string{Square: {SettingURL: squareURL}, Twilio: {SettingURL: squareURL}}

func testOptions(name string, opts Options) Options {
	opts.Settings = testSettings[name]
	return opts
}

package provider

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Twilio is Twilio's webhooks (messaging and voice callbacks, status
// callbacks, Event Streams' webhook sinks).
const Twilio = "twilio"

// Twilio's delivery headers.
const (
	headerTwilioSignature   = "x-twilio-signature"
	headerTwilioSettings    = "x-twilio-webhooks-signature-settings"
	headerTwilioIdempotency = "i-twilio-idempotency-token"
)

var twilioSpec = Spec{Name: Twilio, Check: checkTwilio, New: newTwilio, Sign: signTwilio, Settings: []string{SettingURL}}

// twilio verifies Twilio's webhooks as its Node helper library's
// validateRequest does: X-Twilio-Signature is the base64 HMAC-SHA1 under
// the auth token (HMAC-SHA256 under a SharedKey when
// X-Twilio-Webhooks-Signature-Settings says algorithm=HMAC_SHA256) of the
// URL Twilio called followed by each form parameter's key and value,
// sorted by key (a repeated key's values sorted, duplicates once), with
// no separators. A JSON body is signed through the URL: its bodySHA256
// query value must be the hex SHA-256 of the body. The URL is the
// configured one (TWILIO_WEBHOOK_URL, without its query: the host behind
// API Gateway is not the one Twilio called) with the request's query, and
// is tried with and without the default port, as the library does.
//
// Nothing names the event but the signed parameters: the id is the
// unsigned I-Twilio-Idempotency-Token (the same on Twilio's retries), or
// one made from the body, and Verified.ReplayKey is the hash of the
// signed URL and body, so a captured request sent again under a fresh
// token is a replay. No timestamp is signed.
//
// Hand-written: Twilio's Go library is its whole REST client, and the
// scheme is one HMAC over a canonical string.
type twilio struct {
	keys [][]byte
	base string
}

func newTwilio(secrets []string, opts Options) (Verifier, error) {
	u := opts.Settings[SettingURL]
	if p, err := url.Parse(u); u == "" || err != nil || p.Scheme != "https" || p.Host == "" || p.RawQuery != "" {
		return nil, fmt.Errorf("provider twilio: set %s to the https URL Twilio calls, without its query", SettingVariable(Twilio, SettingURL))
	}
	t := &twilio{base: u}
	for _, s := range secrets {
		t.keys = append(t.keys, []byte(s))
	}
	return t, nil
}

func twilioSignature(r Request) ([]byte, error) {
	sig := r.Header(headerTwilioSignature)
	if sig == "" {
		return nil, ErrMissingSignature
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || (len(got) != sha1.Size && len(got) != sha256.Size) {
		return nil, fmt.Errorf("%w: not the base64 of an HMAC", ErrMalformedSignature)
	}
	return got, nil
}

func checkTwilio(r Request) error {
	_, err := twilioSignature(r)
	return err
}

// twilioURLs are the URL as called and its default-port variant.
func twilioURLs(base, query string) []string {
	u := base
	if query != "" {
		u += "?" + query
	}
	p, err := url.Parse(u)
	if err != nil {
		return []string{u}
	}
	if p.Port() == "" {
		p.Host += ":443"
	} else if p.Port() == "443" {
		p.Host = p.Hostname()
	}
	return []string{u, p.String()}
}

// twilioSigned is what Twilio signs for body at u: u alone for a JSON
// body (bodySHA256 in u's query), else u and the sorted form parameters.
func twilioSigned(u string, body []byte, json bool) ([]byte, error) {
	if json {
		return []byte(u), nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: the body is not form-encoded: %v", event.ErrMalformed, err)
	}
	var b strings.Builder
	b.WriteString(u)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range form {
			if !yield(k) {
				return
			}
		}
	}) {
		vs := slices.Compact(slices.Sorted(slices.Values(form[k])))
		for _, v := range vs {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	return []byte(b.String()), nil
}

func (t *twilio) Verify(_ context.Context, r Request) (Verified, error) {
	got, err := twilioSignature(r)
	if err != nil {
		return Verified{}, err
	}
	q, _ := url.ParseQuery(r.Query)
	bodyHash := q.Get("bodySHA256")
	isJSON := bodyHash != ""
	if isJSON {
		sum := sha256.Sum256(r.Body)
		if !hmac.Equal([]byte(strings.ToLower(bodyHash)), []byte(hex.EncodeToString(sum[:]))) {
			return Verified{}, fmt.Errorf("%w: bodySHA256 is another body's", ErrNoMatch)
		}
	}
	newHash := sha1.New
	if strings.Contains(r.Header(headerTwilioSettings), "algorithm=HMAC_SHA256") {
		newHash = sha256.New
	}
	var signed []byte
	matched := false
	for _, u := range twilioURLs(t.base, r.Query) {
		s, err := twilioSigned(u, r.Body, isJSON)
		if err != nil {
			return Verified{}, err
		}
		for _, k := range t.keys {
			if twilioMAC(newHash, k, s, got) {
				matched, signed = true, s
			}
		}
	}
	if !matched {
		return Verified{}, ErrNoMatch
	}
	env := event.Envelope{ID: r.Header(headerTwilioIdempotency), Type: "request"}
	key := replayKey(signed, r.Body)
	if env.ID == "" {
		env.ID = "body-" + key[:32]
	}
	if isJSON {
		b, err := decodeObject[struct {
			Type string `json:"type"`
		}](r.Body)
		if err != nil {
			return Verified{}, err
		}
		if b.Type != "" {
			env.Type = b.Type
		}
	} else {
		form, _ := url.ParseQuery(string(r.Body))
		switch {
		case form.Get("EventType") != "":
			env.Type = form.Get("EventType")
		case form.Get("MessageStatus") != "":
			env.Type, env.ObjectID, env.ObjectType = "message."+form.Get("MessageStatus"), form.Get("MessageSid"), "message"
		case form.Get("CallStatus") != "":
			env.Type, env.ObjectID, env.ObjectType = "call."+form.Get("CallStatus"), form.Get("CallSid"), "call"
		}
		env.Account = form.Get("AccountSid")
	}
	return Verified{Envelope: env, ReplayKey: key}, nil
}

func twilioMAC(h func() hash.Hash, key, signed, got []byte) bool {
	m := hmac.New(h, key)
	m.Write(signed)
	return hmac.Equal(m.Sum(nil), got)
}

// signTwilio signs d as Twilio does with HMAC-SHA1, for d.URL (with its
// query) and a form body; d.ID is the idempotency token.
func signTwilio(secret string, d Delivery) (map[string]string, error) {
	if d.URL == "" {
		return nil, fmt.Errorf("provider twilio: sign: no URL")
	}
	s, err := twilioSigned(d.URL, d.Body, strings.Contains(d.URL, "bodySHA256="))
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(s)
	return map[string]string{headerTwilioIdempotency: d.ID, headerTwilioSignature: base64.StdEncoding.EncodeToString(m.Sum(nil))}, nil
}

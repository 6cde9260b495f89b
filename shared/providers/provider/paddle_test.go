package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Paddle Billing's vector, as @paddle/paddle-node-sdk 3.10.0's verifier
// accepted it (../shared/FACTS.md).
const (
	paddleSecret       = "pdl_ntfset_01hv0000000000000000000000_abcdefghijklmnopqrstuvwxyz012345"
	paddleTimestamp    = 1712917129
	paddleBody         = `{"event_id":"evt_01hv8wptq8987qeep44cyrewp9","event_type":"transaction.completed","occurred_at":"2024-04-12T10:18:49.621022Z","notification_id":"ntf_01hv8wpts6qsrf4dcsqvcdv7wy","data":{"id":"txn_01hv8wnvvtedwjrhfhpr9vkq9w"}}`
	paddleVectorHeader = "ts=1712917129;h1=cd0d372765e546d5898e04f235816edc6dc295325a89df7fdd78c291d3b8693b"
)

// paddleH1 computes an h1 independently of the package: hex
// HMAC-SHA256(secret, "ts:body").
func paddleH1(secret, ts, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + ":" + body))
	return hex.EncodeToString(m.Sum(nil))
}

func TestPaddleVector(t *testing.T) {
	at := func(ts int64) Options { return Options{Now: func() time.Time { return time.Unix(ts, 0) }} }
	v, err := New(Paddle, []string{paddleSecret}, at(paddleTimestamp))
	if err != nil {
		t.Fatal(err)
	}
	env, err := verify(v, []byte(paddleBody), map[string]string{"Paddle-Signature": paddleVectorHeader})
	if err != nil {
		t.Fatal(err)
	}
	want := event.Envelope{ID: "evt_01hv8wptq8987qeep44cyrewp9", Type: "transaction.completed", Created: 1712917129,
		ObjectID: "txn_01hv8wnvvtedwjrhfhpr9vkq9w", ObjectType: "transaction"}
	if env != want {
		t.Errorf("got %+v, want %+v", env, want)
	}

	other := paddleH1("pdl_ntfset_other", "1712917129", paddleBody)
	for _, tc := range []struct {
		name    string
		secrets []string
		opts    Options
		header  string
		body    string
		want    error
	}{
		{"rotation: the vector's secret second", []string{"pdl_ntfset_new", paddleSecret}, at(paddleTimestamp), paddleVectorHeader, paddleBody, nil},
		{"rotation: two h1, the match first", []string{paddleSecret}, at(paddleTimestamp), paddleVectorHeader + ";h1=" + other, paddleBody, nil},
		{"rotation: two h1, the match last", []string{paddleSecret}, at(paddleTimestamp), "ts=1712917129;h1=" + other + ";h1=cd0d372765e546d5898e04f235816edc6dc295325a89df7fdd78c291d3b8693b", paddleBody, nil},
		{"a field Paddle may add", []string{paddleSecret}, at(paddleTimestamp), paddleVectorHeader + ";h2=abc", paddleBody, nil},
		{"wrong secret", []string{"pdl_ntfset_other"}, at(paddleTimestamp), paddleVectorHeader, paddleBody, ErrNoMatch},
		{"body changed", []string{paddleSecret}, at(paddleTimestamp), paddleVectorHeader, paddleBody + " ", ErrNoMatch},
		{"ts changed", []string{paddleSecret}, at(paddleTimestamp), "ts=1712917130;h1=cd0d372765e546d5898e04f235816edc6dc295325a89df7fdd78c291d3b8693b", paddleBody, ErrNoMatch},
		{"at the tolerance", []string{paddleSecret}, at(paddleTimestamp + 300), paddleVectorHeader, paddleBody, nil},
		{"stale", []string{paddleSecret}, at(paddleTimestamp + 301), paddleVectorHeader, paddleBody, ErrTooOld},
		{"at the future skew", []string{paddleSecret}, at(paddleTimestamp - 60), paddleVectorHeader, paddleBody, nil},
		{"future", []string{paddleSecret}, at(paddleTimestamp - 61), paddleVectorHeader, paddleBody, ErrTooNew},
		{"no header", []string{paddleSecret}, at(paddleTimestamp), "", paddleBody, ErrMissingSignature},
		{"no ts", []string{paddleSecret}, at(paddleTimestamp), "h1=cd0d372765e546d5898e04f235816edc6dc295325a89df7fdd78c291d3b8693b", paddleBody, ErrMalformedSignature},
		{"no h1", []string{paddleSecret}, at(paddleTimestamp), "ts=1712917129", paddleBody, ErrMalformedSignature},
		{"two ts", []string{paddleSecret}, at(paddleTimestamp), "ts=1;" + paddleVectorHeader, paddleBody, ErrMalformedSignature},
		{"ts not seconds", []string{paddleSecret}, at(paddleTimestamp), "ts=soon;h1=cd0d372765e546d5898e04f235816edc6dc295325a89df7fdd78c291d3b8693b", paddleBody, ErrMalformedSignature},
		{"h1 not hex", []string{paddleSecret}, at(paddleTimestamp), "ts=1712917129;h1=zz", paddleBody, ErrMalformedSignature},
		{"Stripe's shape", []string{paddleSecret}, at(paddleTimestamp), "t=1712917129,v1=cd0d", paddleBody, ErrMalformedSignature},
		{"not JSON", []string{paddleSecret}, at(paddleTimestamp), "ts=1712917129;h1=" + paddleH1(paddleSecret, "1712917129", "oops"), "oops", event.ErrMalformed},
		{"no event_id", []string{paddleSecret}, at(paddleTimestamp), "ts=1712917129;h1=" + paddleH1(paddleSecret, "1712917129", `{"event_type":"transaction.completed"}`), `{"event_type":"transaction.completed"}`, event.ErrMissingID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(Paddle, tc.secrets, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			h := map[string]string{}
			if tc.header != "" {
				h["paddle-signature"] = tc.header
			}
			_, err = verify(v, []byte(tc.body), h)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	if got := paddleH1(paddleSecret, "1712917129", paddleBody); "ts=1712917129;h1="+got != paddleVectorHeader {
		t.Errorf("independent h1: got %s, want the vector's", got)
	}
}

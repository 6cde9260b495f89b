package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
)

// Names of the providers served at /webhooks/{provider} beside Stripe's.
const (
	GitHub   = "github"
	Shopify  = "shopify"
	Standard = "standard"
)

// Names lists the providers of this package, in the order operators read
// them.
var Names = []string{GitHub, Shopify, Standard}

// Verifier verifies one delivery against its raw body and its headers (as
// API Gateway passes them: lower-cased names, though any case is found),
// and returns its envelope.
type Verifier interface {
	Verify(body []byte, headers map[string]string) (event.Envelope, error)
}

// Errors of Verify besides event.ErrMalformed and event.ErrMissingID.
// Callers answer every one with the same generic 400.
var (
	ErrMissingSignature   = errors.New("provider: no signature header")
	ErrMalformedSignature = errors.New("provider: malformed signature header")
	ErrNoMatch            = errors.New("provider: no signature matches a configured secret")
	ErrTooOld             = errors.New("provider: signed timestamp older than the tolerance")
	ErrTooNew             = errors.New("provider: signed timestamp too far in the future")
)

// Defaults for Options, the receiver's (shared/signature's) own.
const (
	DefaultTolerance  = 300 * time.Second
	DefaultFutureSkew = 60 * time.Second
)

// Options tune the verifiers of providers that sign a timestamp (Standard
// Webhooks). Zero values take the defaults.
type Options struct {
	Tolerance  time.Duration
	FutureSkew time.Duration
	Now        func() time.Time
}

// New returns the verifier of the named provider for secrets (at least
// one; the current one and, during a rotation, the previous one).
func New(name string, secrets []string, opts Options) (Verifier, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("provider %s: no signing secret", name)
	}
	switch name {
	case GitHub:
		return newGitHub(secrets), nil
	case Shopify:
		return newShopify(secrets), nil
	case Standard:
		return newStandard(secrets, opts)
	}
	return nil, fmt.Errorf("provider: unknown provider %q (want one of %s)", name, strings.Join(Names, ", "))
}

// Known reports whether name is a provider of this package.
func Known(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// Header returns the named header, whatever the case of its name: API
// Gateway's HTTP API lower-cases names, other integrations may not.
func Header(headers map[string]string, name string) string {
	if v, ok := headers[name]; ok {
		return v
	}
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// macs holds HMAC-SHA256 keys and tells whether a MAC matches any of them.
type macs [][]byte

func newMACs(secrets []string) macs {
	m := make(macs, len(secrets))
	for i, s := range secrets {
		m[i] = []byte(s)
	}
	return m
}

// match reports whether got is the HMAC-SHA256 of body under any key. Every
// key is tried, each compared in constant time, so the answer's timing
// says nothing about which key (if any) came close.
func (m macs) match(body, got []byte) bool {
	ok := false
	for _, k := range m {
		h := hmac.New(sha256.New, k)
		h.Write(body)
		if hmac.Equal(h.Sum(nil), got) {
			ok = true
		}
	}
	return ok
}

// decodeObject reads body, one JSON object, as a T (a struct) with
// encoding/json, the rule every reader of a payload follows (package
// event). One pass: anything but an object or null fails to decode into a
// struct, and null leaves the pointer nil.
func decodeObject[T any](body []byte) (T, error) {
	var v *T
	if err := json.Unmarshal(body, &v); err != nil {
		var zero T
		return zero, fmt.Errorf("%w: %w", event.ErrMalformed, err)
	}
	if v == nil {
		var zero T
		return zero, fmt.Errorf("%w: top level is null", event.ErrMalformed)
	}
	return *v, nil
}

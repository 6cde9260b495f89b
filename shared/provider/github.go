package provider

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
)

// GitHub's delivery headers.
const (
	headerGitHubSignature = "x-hub-signature-256"
	headerGitHubDelivery  = "x-github-delivery"
	headerGitHubEvent     = "x-github-event"
)

// github verifies GitHub's webhooks: X-Hub-Signature-256 is "sha256=" and
// the hex HMAC-SHA256 of the raw body. GitHub signs no timestamp, so a
// replayed delivery is caught by its delivery id alone (the record's key).
type github struct{ keys macs }

func newGitHub(secrets []string) *github { return &github{keys: newMACs(secrets)} }

// Verify checks the signature, then reads the id (X-GitHub-Delivery, the
// same across GitHub's redeliveries) and the type: X-GitHub-Event, plus "."
// and the payload's action when it has one ("pull_request.opened").
func (g *github) Verify(body []byte, headers map[string]string) (event.Envelope, error) {
	sig := Header(headers, headerGitHubSignature)
	if sig == "" {
		return event.Envelope{}, ErrMissingSignature
	}
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return event.Envelope{}, fmt.Errorf("%w: no sha256= prefix", ErrMalformedSignature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != 32 {
		return event.Envelope{}, fmt.Errorf("%w: not 64 hex digits", ErrMalformedSignature)
	}
	if !g.keys.match(body, got) {
		return event.Envelope{}, ErrNoMatch
	}
	p, err := decodeObject[struct {
		Action string `json:"action"`
	}](body)
	if err != nil {
		return event.Envelope{}, err
	}
	id, typ := Header(headers, headerGitHubDelivery), Header(headers, headerGitHubEvent)
	if id == "" || typ == "" {
		return event.Envelope{}, event.ErrMissingID
	}
	if p.Action != "" {
		typ += "." + p.Action
	}
	// GitHub gives no event time nor any order between deliveries: the
	// record's created stays 0 and it names no object (docs/providers.md).
	return event.Envelope{ID: id, Type: typ}, nil
}

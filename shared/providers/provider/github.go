package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// GitHub is GitHub's webhooks (repository, organization and GitHub App
// hooks).
const GitHub = "github"

// GitHub's delivery headers.
const (
	headerGitHubSignature = "x-hub-signature-256"
	headerGitHubDelivery  = "x-github-delivery"
	headerGitHubEvent     = "x-github-event"
)

var githubSpec = Spec{Name: GitHub, Check: checkGitHub, New: newGitHub, Sign: signGitHub}

// github verifies GitHub's webhooks: X-Hub-Signature-256 is "sha256=" and
// the hex HMAC-SHA256 of the raw body. Nothing else is signed (not the
// delivery id, not the event name) and no timestamp either, so the body
// alone names the event: Verified.ReplayKey is its hash, and a captured
// body sent again under a fresh delivery id or event name is a replay.
type github struct{ keys macs }

func newGitHub(secrets []string, _ Options) (Verifier, error) {
	return &github{keys: newMACs(secrets)}, nil
}

// githubSignature reads X-Hub-Signature-256: the MAC it carries.
func githubSignature(r Request) ([]byte, error) {
	sig := r.Header(headerGitHubSignature)
	if sig == "" {
		return nil, ErrMissingSignature
	}
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return nil, fmt.Errorf("%w: no sha256= prefix", ErrMalformedSignature)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return nil, fmt.Errorf("%w: not 64 hex digits", ErrMalformedSignature)
	}
	return got, nil
}

func checkGitHub(r Request) error {
	_, err := githubSignature(r)
	return err
}

// Verify checks the signature, then reads the id (X-GitHub-Delivery, the
// same across GitHub's redeliveries) and the type: X-GitHub-Event, plus "."
// and the payload's action when it has one ("pull_request.opened").
func (g *github) Verify(_ context.Context, r Request) (Verified, error) {
	got, err := githubSignature(r)
	if err != nil {
		return Verified{}, err
	}
	if !g.keys.match(r.Body, got) {
		return Verified{}, ErrNoMatch
	}
	p, err := decodeObject[struct {
		Action string `json:"action"`
	}](r.Body)
	if err != nil {
		return Verified{}, err
	}
	id, typ := r.Header(headerGitHubDelivery), r.Header(headerGitHubEvent)
	if id == "" || typ == "" {
		return Verified{}, event.ErrMissingID
	}
	if p.Action != "" {
		typ += "." + p.Action
	}
	// GitHub gives no event time nor any order between deliveries: the
	// record's created stays 0 and it names no object (docs/providers.md).
	return Verified{Envelope: event.Envelope{ID: id, Type: typ}, ReplayKey: replayKey(r.Body)}, nil
}

// signGitHub signs d as GitHub does: d.Type's part before the first "." is
// X-GitHub-Event (the action is the payload's).
func signGitHub(secret string, d Delivery) (map[string]string, error) {
	ev, _, _ := strings.Cut(d.Type, ".")
	sum := hmacSHA256(secret, d.Body)
	return map[string]string{
		headerGitHubDelivery:  d.ID,
		headerGitHubEvent:     ev,
		headerGitHubSignature: "sha256=" + hex.EncodeToString(sum),
	}, nil
}

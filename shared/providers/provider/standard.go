package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// Standard is the Standard Webhooks senders, Svix-based senders among
// them, whose headers are named svix-id, svix-timestamp and
// svix-signature.
const Standard = "standard"

var standardSpec = Spec{Name: Standard, Check: checkStandard, New: newStandard, Sign: signStandard}

// standard verifies Standard Webhooks deliveries with the specification's
// own library: webhook-signature holds space-separated "v1,<base64>"
// entries, each an HMAC-SHA256 of "id.timestamp.body" under the key a
// whsec_ secret encodes. The id and the timestamp are signed, so no
// ReplayKey: a replay is its id's duplicate, or too old. The library's own
// timestamp check is fixed at five minutes either way on the wall clock;
// the receiver's tolerance and future skew are checked here instead, after
// the signature, on an injectable clock.
type standard struct {
	hooks  []*standardwebhooks.Webhook
	window window
}

func newStandard(secrets []string, opts Options) (Verifier, error) {
	s := &standard{window: opts.window()}
	for i, secret := range secrets {
		if !strings.HasPrefix(secret, "whsec_") {
			return nil, fmt.Errorf("provider standard: secret %d is not a whsec_ value", i+1)
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			// The library's error quotes no secret, but say only which.
			return nil, fmt.Errorf("provider standard: secret %d is not whsec_ and base64", i+1)
		}
		s.hooks = append(s.hooks, wh)
	}
	return s, nil
}

// Svix's names for the three headers. Svix-based senders (Clerk, Resend
// and many others) sign exactly as the specification does, under these
// names; Svix's own Webhook.verify reads each svix-* header first and the
// webhook-* one when it is absent, and so does standardHeaders.
const (
	headerSvixID        = "svix-id"
	headerSvixTimestamp = "svix-timestamp"
	headerSvixSignature = "svix-signature"
)

// standardHeader is the svix-* header when the request has it, else the
// webhook-* one: Svix's rule, header by header.
func standardHeader(r Request, svix, standard string) string {
	if v := r.Header(svix); v != "" {
		return v
	}
	return r.Header(standard)
}

// standardHeaders reads the three headers, under Svix's names or the
// specification's (standardHeader): the id, the signed timestamp and the
// signatures.
func standardHeaders(r Request) (id, ts, sig string, signedAt int64, err error) {
	id = standardHeader(r, headerSvixID, standardwebhooks.HeaderWebhookID)
	ts = standardHeader(r, headerSvixTimestamp, standardwebhooks.HeaderWebhookTimestamp)
	sig = standardHeader(r, headerSvixSignature, standardwebhooks.HeaderWebhookSignature)
	if sig == "" {
		return "", "", "", 0, ErrMissingSignature
	}
	if id == "" {
		return "", "", "", 0, event.ErrMissingID
	}
	signedAt, perr := strconv.ParseInt(ts, 10, 64)
	if perr != nil {
		return "", "", "", 0, fmt.Errorf("%w: the timestamp header is not Unix seconds", ErrMalformedSignature)
	}
	return id, ts, sig, signedAt, nil
}

func checkStandard(r Request) error {
	_, _, _, _, err := standardHeaders(r)
	return err
}

// Verify checks the signature under every secret, then the signed
// timestamp against the window, then reads the type from the payload's
// "type". The id is webhook-id, the created time webhook-timestamp.
func (s *standard) Verify(_ context.Context, r Request) (Verified, error) {
	id, ts, sig, signedAt, err := standardHeaders(r)
	if err != nil {
		return Verified{}, err
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, ts)
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	matched := false
	for _, wh := range s.hooks {
		err := wh.VerifyIgnoringTimestamp(r.Body, h)
		switch {
		case err == nil:
			matched = true
		case errors.Is(err, standardwebhooks.ErrInvalidHeaders):
			return Verified{}, fmt.Errorf("%w: %w", ErrMalformedSignature, err)
		}
	}
	if !matched {
		return Verified{}, ErrNoMatch
	}
	if err := s.window.check(signedAt); err != nil {
		return Verified{}, err
	}
	p, err := decodeObject[struct {
		Type string `json:"type"`
	}](r.Body)
	if err != nil {
		return Verified{}, err
	}
	if p.Type == "" {
		return Verified{}, event.ErrMissingID
	}
	// The specification promises no order and names no object: created is
	// the signed send time, which orders nothing across retries.
	return Verified{Envelope: event.Envelope{ID: id, Type: p.Type, Created: signedAt}}, nil
}

// signStandard signs d as a Standard Webhooks sender does, with the
// specification's library.
func signStandard(secret string, d Delivery) (map[string]string, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		return nil, fmt.Errorf("provider standard: the secret is not a whsec_ value")
	}
	sig, err := wh.Sign(d.ID, d.Now, d.Body)
	if err != nil {
		return nil, fmt.Errorf("provider standard: sign: %w", err)
	}
	return map[string]string{
		standardwebhooks.HeaderWebhookID:        d.ID,
		standardwebhooks.HeaderWebhookTimestamp: strconv.FormatInt(d.Now.Unix(), 10),
		standardwebhooks.HeaderWebhookSignature: sig,
	}, nil
}

package provider

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
)

// standard verifies Standard Webhooks deliveries with the specification's
// own library: webhook-signature holds space-separated "v1,<base64>"
// entries, each an HMAC-SHA256 of "id.timestamp.body" under the key a
// whsec_ secret encodes. The library's own timestamp check is fixed at five
// minutes either way on the wall clock; the receiver's tolerance and future
// skew are checked here instead, after the signature, on an injectable
// clock.
type standard struct {
	hooks []*standardwebhooks.Webhook
	opts  Options
}

func newStandard(secrets []string, opts Options) (*standard, error) {
	s := &standard{opts: opts}
	if s.opts.Tolerance <= 0 {
		s.opts.Tolerance = DefaultTolerance
	}
	if s.opts.FutureSkew <= 0 {
		s.opts.FutureSkew = DefaultFutureSkew
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
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

// Verify checks the signature under every secret, then the signed
// timestamp against the window, then reads the type from the payload's
// "type". The id is webhook-id, the created time webhook-timestamp.
func (s *standard) Verify(body []byte, headers map[string]string) (event.Envelope, error) {
	id := Header(headers, standardwebhooks.HeaderWebhookID)
	ts := Header(headers, standardwebhooks.HeaderWebhookTimestamp)
	sig := Header(headers, standardwebhooks.HeaderWebhookSignature)
	if sig == "" {
		return event.Envelope{}, ErrMissingSignature
	}
	if id == "" {
		return event.Envelope{}, event.ErrMissingID
	}
	signedAt, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return event.Envelope{}, fmt.Errorf("%w: webhook-timestamp is not Unix seconds", ErrMalformedSignature)
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, ts)
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	matched := false
	for _, wh := range s.hooks {
		err := wh.VerifyIgnoringTimestamp(body, h)
		switch {
		case err == nil:
			matched = true
		case errors.Is(err, standardwebhooks.ErrInvalidHeaders):
			return event.Envelope{}, fmt.Errorf("%w: %w", ErrMalformedSignature, err)
		}
	}
	if !matched {
		return event.Envelope{}, ErrNoMatch
	}
	now := s.opts.Now().Unix()
	switch {
	case signedAt < now-int64(s.opts.Tolerance/time.Second):
		return event.Envelope{}, fmt.Errorf("%w: signed %ds ago", ErrTooOld, now-signedAt)
	case signedAt > now+int64(s.opts.FutureSkew/time.Second):
		return event.Envelope{}, fmt.Errorf("%w: signed %ds ahead", ErrTooNew, signedAt-now)
	}
	p, err := decodeObject[struct {
		Type string `json:"type"`
	}](body)
	if err != nil {
		return event.Envelope{}, err
	}
	if p.Type == "" {
		return event.Envelope{}, event.ErrMissingID
	}
	// The specification promises no order and names no object: created is
	// the signed send time, which orders nothing across retries.
	return event.Envelope{ID: id, Type: p.Type, Created: signedAt}, nil
}

package effect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/egress"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripesign"
)

// Forward is a built-in effect: it POSTs each processed event to your
// application, so an application can consume the inbox's exactly-once,
// ordered-where-it-matters stream without talking to AWS.
//
// The request carries the event's raw JSON as the body and:
//   - Idempotency-Key: stable across retries of this event (see Key); the
//     receiving application must treat a repeated key as already done,
//     because a crash after its 2xx and before our commit repeats the call.
//   - Webhook-Inbox-Event-Id and Webhook-Inbox-Event-Type.
//   - Webhook-Inbox-Signature, when a secret is configured: a
//     Stripe-Signature header in every byte ("t=<unix>,v1=<hex
//     HMAC-SHA256 of "<t>.<body>">"), made by stripesign.Header, the
//     project's one signer. The application verifies it as it would a
//     Stripe webhook, with the forward secret in place of Stripe's: in Go,
//     stripe-go's webhook.ValidatePayload(body, header, secret), which
//     compares in constant time and rejects a timestamp older than 5
//     minutes; in other languages, Stripe's library's verifier.
//
// A 2xx answer completes the effect; 429, 5xx and network errors are
// retried (with the processor's backoff); any other 4xx is permanent.
//
// Redirects are never followed, whatever Client says: a 302 or 303 would
// become a GET without the body whose 2xx completes the effect, so the event
// is silently never delivered, and a 307 or 308 would send the payload, its
// signature and the idempotency key to whatever host Location names. Any 3xx
// is a permanent failure; point URL at the final address instead. URL must
// pass egress.Check (https, or http to a loopback host): CheckURL at
// configuration time, and every Handle again.
type Forward struct {
	URL    string
	Secret string
	Client *http.Client
	Now    func() time.Time
}

// Name implements Handler.
func (f *Forward) Name() string { return "forward" }

// CheckURL reports whether raw may be a forward target (egress.Check). Its
// error names the scheme and host only: a target's path or query may hold
// a token.
func CheckURL(raw string) error {
	if _, err := egress.Check(raw); err != nil {
		return fmt.Errorf("forward: target: %w", err)
	}
	return nil
}

// Handle implements Handler. It writes nothing to DynamoDB.
func (f *Forward) Handle(ctx context.Context, ev Event) ([]types.TransactWriteItem, error) {
	if err := CheckURL(f.URL); err != nil {
		return nil, &fault.Permanent{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(ev.Payload))
	if err != nil {
		// Not %w: url.Error would print the whole target.
		return nil, &fault.Permanent{Err: errors.New("forward: cannot build the request")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", ev.IdempotencyKey)
	req.Header.Set("Webhook-Inbox-Event-Id", ev.Record.ID)
	req.Header.Set("Webhook-Inbox-Event-Type", ev.Record.Type)
	if f.Secret != "" {
		now := time.Now
		if f.Now != nil {
			now = f.Now
		}
		req.Header.Set("Webhook-Inbox-Signature", stripesign.Header(ev.Payload, f.Secret, now()))
	}
	// A redirect comes back as the answer: see Forward.
	resp, err := egress.Send(f.Client, req)
	if err != nil {
		return nil, fmt.Errorf("forward: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, &fault.Permanent{
			Err: fmt.Errorf("forward: application answered %d, a redirect%s: the forward effect follows none; set the target to the final address",
				resp.StatusCode, redirectHost(resp.Header.Get("Location"))),
		}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("forward: application answered %d", resp.StatusCode)
	default:
		return nil, &fault.Permanent{Err: fmt.Errorf("forward: application answered %d", resp.StatusCode)}
	}
}

// redirectHost describes where a redirect pointed, by host alone: its path,
// query or user info may hold a token.
func redirectHost(location string) string {
	u, err := url.Parse(location)
	if err != nil || u.Host == "" {
		return ""
	}
	return " to host " + u.Host
}

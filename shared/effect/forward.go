package effect

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/fault"
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
//   - Webhook-Inbox-Signature: "t=<unix>,v1=<hex HMAC-SHA256 of
//     "<t>.<body>">", Stripe's scheme, when a secret is configured.
//
// A 2xx answer completes the effect; 429, 5xx and network errors are
// retried (with the processor's backoff); any other 4xx is permanent.
type Forward struct {
	URL    string
	Secret string
	Client *http.Client
	Now    func() time.Time
}

// Name implements Handler.
func (f *Forward) Name() string { return "forward" }

// Handle implements Handler. It writes nothing to DynamoDB.
func (f *Forward) Handle(ctx context.Context, ev Event) ([]types.TransactWriteItem, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(ev.Payload))
	if err != nil {
		return nil, &fault.Permanent{Err: fmt.Errorf("forward: %w", err)}
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
		ts := strconv.FormatInt(now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(f.Secret))
		mac.Write([]byte(ts + "."))
		mac.Write(ev.Payload)
		req.Header.Set("Webhook-Inbox-Signature", "t="+ts+",v1="+hex.EncodeToString(mac.Sum(nil)))
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("forward: POST: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("forward: application answered %d", resp.StatusCode)
	default:
		return nil, &fault.Permanent{Err: fmt.Errorf("forward: application answered %d", resp.StatusCode)}
	}
}

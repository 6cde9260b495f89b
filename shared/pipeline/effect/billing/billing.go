package billing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/egress"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

// Names of its setting and its secret.
const (
	SettingURL  = "BILLING_API_URL"
	SecretToken = "billing-api-token"
)

// Spec declares the effect; shared/pipeline/hooks adds it. Optional: off while
// BILLING_API_URL is not set.
var Spec = effect.Spec{
	Name:     "billing",
	Types:    []string{"invoice.paid"},
	Settings: []string{SettingURL},
	Secrets:  []string{SecretToken},
	Optional: true,
	New:      New,
}

// New builds the effect from its configuration. It makes no network call:
// the token is read on the first invoice.paid.
func New(c effect.Config) (effect.Handler, error) {
	u := c.Setting(SettingURL)
	if _, err := egress.Check(u); err != nil {
		return nil, fmt.Errorf("%s: %w", SettingURL, err)
	}
	token := c.Secret(SecretToken)
	if token == nil {
		return nil, fmt.Errorf("no %s secret", SecretToken)
	}
	return &Effect{URL: u, Token: token, Client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// Effect is the billing effect (the package doc says what it sends).
type Effect struct {
	URL    string
	Token  *secrets.Secret
	Client *http.Client
}

// Name implements effect.Handler.
func (e *Effect) Name() string { return Spec.Name }

// Paid is the request's body.
type Paid struct {
	EventID string `json:"event_id"`
	// Account is the connected account the invoice is of (Stripe
	// Connect); omitted for the platform's own.
	Account    string `json:"account,omitempty"`
	Invoice    string `json:"invoice"`
	Customer   string `json:"customer"`
	AmountPaid int64  `json:"amount_paid"`
	Currency   string `json:"currency"`
	PaidAt     int64  `json:"paid_at,omitempty"`
}

// Handle implements effect.Handler. It writes nothing to DynamoDB.
func (e *Effect) Handle(ctx context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
	body, err := paid(ev)
	if err != nil {
		return nil, &fault.Permanent{Err: err}
	}
	token, err := e.Token.Value(ctx)
	if err != nil {
		return nil, fmt.Errorf("billing: token: %w", err)
	}
	key := idempotencyKey(ev)
	status, err := e.post(ctx, token, key, body)
	if err == nil && status == http.StatusUnauthorized {
		// The token may have been rotated since it was read.
		if fresh, changed, _ := e.Token.Refresh(ctx, token); changed {
			status, err = e.post(ctx, fresh, key, body)
		}
	}
	switch {
	case err != nil:
		return nil, err
	case status >= 200 && status < 300:
		return nil, nil
	case status >= 300 && status < 400:
		return nil, &fault.Permanent{
			Err: fmt.Errorf(
				"billing: API answered %d, a redirect: none is followed (it would carry the token elsewhere); set %s to the final address",
				status,
				SettingURL,
			),
		}
	case status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests || status >= 500:
		// A refused token is fixed by an operator; the event waits for
		// it within the retry budget rather than failing for good.
		return nil, fmt.Errorf("billing: API answered %d", status)
	default:
		return nil, &fault.Permanent{Err: fmt.Errorf("billing: API answered %d", status)}
	}
}

// idempotencyKey is the event's key (effect.Event.IdempotencyKey), behind
// its connected account for a Connect event: "<account>:<event id>:billing".
// The account makes the key say whose invoice it is, so a billing API that
// keeps keys per tenant (or one shared across a platform's accounts) can
// never take one account's invoice for another's.
func idempotencyKey(ev effect.Event) string {
	if ev.Record.Account != "" {
		return ev.Record.Account + ":" + ev.IdempotencyKey
	}
	return ev.IdempotencyKey
}

// paid reads the request's body from the event, with stripe-go's
// Invoice.
func paid(ev effect.Event) ([]byte, error) {
	var envelope struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ev.Payload, &envelope); err != nil {
		return nil, fmt.Errorf("billing: event %s: %w", ev.Record.ID, err)
	}
	var inv stripe.Invoice
	if err := json.Unmarshal(envelope.Data.Object, &inv); err != nil || inv.ID == "" {
		return nil, fmt.Errorf("billing: event %s: data.object is not an invoice", ev.Record.ID)
	}
	p := Paid{EventID: ev.Record.ID, Account: ev.Record.Account, Invoice: inv.ID, AmountPaid: inv.AmountPaid, Currency: string(inv.Currency)}
	if inv.Customer != nil {
		p.Customer = inv.Customer.ID
	}
	if inv.StatusTransitions != nil {
		p.PaidAt = inv.StatusTransitions.PaidAt
	}
	return json.Marshal(p)
}

// post sends body once and returns the answer's status. Its errors name
// the API's host only: the URL's path or query may hold a token.
func (e *Effect) post(ctx context.Context, token, key string, body []byte) (int, error) {
	u, err := egress.Check(e.URL)
	if err != nil {
		return 0, &fault.Permanent{Err: fmt.Errorf("billing: %s: %w", SettingURL, err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, &fault.Permanent{Err: errors.New("billing: cannot build the request")}
	}
	req.Header.Set("Content-Type", "application/json")
	// A token stored from a file (put-parameter --value file://...) may
	// end in a newline, which no header may carry.
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	req.Header.Set("Idempotency-Key", key)
	resp, err := egress.Send(e.Client, req)
	if err != nil {
		return 0, fmt.Errorf("billing: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

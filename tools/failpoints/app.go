package failpoints

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
)

// downstream is the team's application: it applies each idempotency key
// once, as an idempotent application must, and counts every call.
type downstream struct {
	mu      sync.Mutex
	calls   map[string]int
	applied map[string]bool
}

func newDownstream() *downstream {
	return &downstream{calls: map[string]int{}, applied: map[string]bool{}}
}

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	d.mu.Lock()
	d.calls[key]++
	d.applied[key] = true
	d.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// keys returns the idempotency keys applied that start with prefix.
func (d *downstream) keys(prefix string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k := range d.applied {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// worldEffects are the team's effects in every case: a ledger that counts
// each event's commits in the transaction that marks it processed (a
// count above one is an effect committed twice), and, for the providers
// other than Stripe (whose events the built-in forward effect posts), a
// call to the team's application with the event's idempotency key. The
// world's provider has them too when it is a declared sender.
func worldEffects(mirrorTable, notifyURL, world string) *effect.Registry {
	r := &effect.Registry{}
	ledger := effect.Func{HandlerName: "ledger", Fn: func(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
		return []types.TransactWriteItem{{Update: &types.Update{
			TableName:                 aws.String(mirrorTable),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: ledgerKey(ev.Record.Provider, ev.Record.ID)}},
			UpdateExpression:          aws.String("ADD commits :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		}}}, nil
	}}
	providers := event.Providers
	if !slices.Contains(providers, world) {
		providers = append(slices.Clone(providers), world)
	}
	for _, p := range providers {
		r.OnProvider(p, ledger, "*")
		if p != event.ProviderStripe {
			r.OnProvider(p, &notify{client: &http.Client{Timeout: 5 * time.Second}, url: notifyURL}, "*")
		}
	}
	return r
}

func ledgerKey(provider, id string) string { return "ledger#" + provider + "#" + id }

// notify posts an event's idempotency key to the team's application;
// 429, 5xx and no answer are retried, any other answer is permanent.
type notify struct {
	client *http.Client
	url    string
}

func (n *notify) Name() string { return "notify" }

func (n *notify) Handle(ctx context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, strings.NewReader(ev.Record.ID))
	if err != nil {
		return nil, &fault.Permanent{Err: err}
	}
	req.Header.Set("Idempotency-Key", ev.IdempotencyKey)
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, fmt.Errorf("notify: %d", resp.StatusCode)
	}
	return nil, &fault.Permanent{Err: fmt.Errorf("notify: %d", resp.StatusCode)}
}

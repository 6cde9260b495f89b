package effect_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// A team's effect, declared with a Spec: it provisions an account when an
// invoice is paid, through the team's accounts API, whose URL is a
// setting (EFFECT_SETTINGS). The receiver and the reconciler read only
// its types; the processor builds it once, at its cold start, and runs it
// for each invoice.paid, passing the event's idempotency key along so that
// a retried call is never a second account.
func ExampleSpec() {
	provision := effect.Spec{
		Name:     "provision",
		Types:    []string{"invoice.paid"},
		Settings: []string{"ACCOUNTS_API_URL"},
		Optional: true, // off until ACCOUNTS_API_URL is configured
		New: func(c effect.Config) (effect.Handler, error) {
			url := c.Setting("ACCOUNTS_API_URL")
			return effect.Func{HandlerName: "provision", Fn: func(ctx context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
				// A real effect calls the API here, with the key as its
				// Idempotency-Key header, and returns the DynamoDB
				// writes to commit with the event (none here).
				fmt.Printf("POST %s, Idempotency-Key %s\n", url, ev.IdempotencyKey)
				return nil, nil
			}}, nil
		},
	}
	r := &effect.Registry{}
	r.Add(provision)
	fmt.Println("types:", r.Types())

	// The processor's cold start, with the configuration the template
	// gives it.
	built, err := r.Build(map[string]effect.Config{
		"provision": effect.NewConfig(map[string]string{"ACCOUNTS_API_URL": "https://accounts.example/v1"}, nil),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := event.Record{Provider: event.ProviderStripe, ID: "evt_1Q2w3e", Type: "invoice.paid"}
	if _, err := built.Run(context.Background(), rec, nil); err != nil {
		fmt.Println(err)
	}
	// Output:
	// types: [invoice.paid]
	// POST https://accounts.example/v1, Idempotency-Key evt_1Q2w3e:provision
}

package processor

import (
	"context"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// fetcher records which read each fetch made.
type fetcher struct{ calls []string }

func (f *fetcher) Fetch(_ context.Context, id string) ([]byte, error) {
	f.calls = append(f.calls, "platform "+id)
	return []byte(`{}`), nil
}

func (f *fetcher) FetchOf(_ context.Context, account, id string) ([]byte, error) {
	f.calls = append(f.calls, account+" "+id)
	return []byte(`{}`), nil
}

// TestAConnectedAccountsEventIsFetchedAsTheAccount: a payload not stored
// is read back with the event's account (the Stripe-Account header), the
// platform's own without.
func TestAConnectedAccountsEventIsFetchedAsTheAccount(t *testing.T) {
	f := &fetcher{}
	p := &Processor{cfg: Config{Fetcher: f}}
	for _, rec := range []event.Record{
		{Provider: event.ProviderStripe, ID: "evt_1", Account: "acct_1"},
		{Provider: event.ProviderStripe, ID: "evt_2"},
	} {
		if _, err := p.fetch(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.calls; len(got) != 2 || got[0] != "acct_1 evt_1" || got[1] != "platform evt_2" {
		t.Errorf("fetches: got %q, want acct_1's as acct_1, the platform's as the platform", got)
	}
}

package store_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
)

// TestAccountsRecordsEachOnce: recording an account twice keeps it once,
// each provider has its own, and none are seen before the first.
func TestAccountsRecordsEachOnce(t *testing.T) {
	ev, s := newEvents(t)
	acc := &store.Accounts{DB: s.DynamoDB, Table: ev.Table}
	ctx := context.Background()
	if got, err := acc.Seen(ctx, event.ProviderStripe); err != nil || len(got) != 0 {
		t.Fatalf("before any: got %v (%v), want none", got, err)
	}
	for _, a := range []string{"acct_b", "acct_a", "acct_b"} {
		if err := acc.Record(ctx, event.ProviderStripe, a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Seen(ctx, event.ProviderStripe)
	if want := []string{"acct_a", "acct_b"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v (%v), want %v", got, err, want)
	}
	if got, err := acc.Seen(ctx, "other"); err != nil || len(got) != 0 {
		t.Fatalf("another provider: got %v (%v), want none", got, err)
	}
}

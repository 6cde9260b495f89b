package store_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// allAccounts reads every page of provider's accounts, limit at a time.
func allAccounts(t *testing.T, acc *store.Accounts, provider string, limit int) []string {
	t.Helper()
	var all []string
	after := ""
	for range 100000 {
		page, next, err := acc.Page(context.Background(), provider, after, limit)
		if err != nil {
			t.Fatalf("page after %q: %v", after, err)
		}
		if len(page) > limit {
			t.Fatalf("page after %q: got %d accounts, want at most %d", after, len(page), limit)
		}
		all = append(all, page...)
		if next == "" {
			return all
		}
		after = next
	}
	t.Fatal("the pages never ended")
	return nil
}

// TestAccountsRecordsEachOnce: recording an account twice keeps it once,
// each provider has its own, and none are seen before the first.
func TestAccountsRecordsEachOnce(t *testing.T) {
	ev, s := newEvents(t)
	acc := &store.Accounts{DB: s.DynamoDB, Table: ev.Table}
	ctx := context.Background()
	if got := allAccounts(t, acc, event.ProviderStripe, 10); len(got) != 0 {
		t.Fatalf("before any: got %v, want none", got)
	}
	for _, a := range []string{"acct_b", "acct_a", "acct_b"} {
		if err := acc.Record(ctx, event.ProviderStripe, a); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := allAccounts(t, acc, event.ProviderStripe, 10), []string{"acct_a", "acct_b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := allAccounts(t, acc, "other", 10); len(got) != 0 {
		t.Fatalf("another provider: got %v, want none", got)
	}
}

// TestAccountsPagesInOrder: hundreds of accounts come back a small page
// at a time, ascending, each once, the pages' cursor resuming after the
// last one returned.
func TestAccountsPagesInOrder(t *testing.T) {
	ev, s := newEvents(t)
	acc := &store.Accounts{DB: s.DynamoDB, Table: ev.Table}
	ctx := context.Background()
	const n = 300
	var want []string
	for i := range n {
		a := fmt.Sprintf("acct_%06d", (i*7919)%n) // recorded out of order
		if err := acc.Record(ctx, event.ProviderStripe, a); err != nil {
			t.Fatal(err)
		}
		want = append(want, a)
	}
	slices.Sort(want)
	got := allAccounts(t, acc, event.ProviderStripe, 7)
	if !slices.Equal(got, want) {
		t.Fatalf("got %d accounts (first %v), want the %d recorded, ascending", len(got), got[:min(3, len(got))], n)
	}
	page, next, err := acc.Page(ctx, event.ProviderStripe, want[n-3], 10)
	if err != nil || !slices.Equal(page, want[n-2:]) || next != "" {
		t.Fatalf("last page: got %v, next %q (%v); want %v and no next", page, next, err, want[n-2:])
	}
}

// legacyAccounts is the item one string set of accounts was kept in before
// each account had an item of its own; filled to about its ceiling.
func legacyAccounts(t *testing.T, db store.DynamoDB, table string, n int) []string {
	t.Helper()
	accounts := make([]string, n)
	for i := range accounts {
		// Stripe's account ids are acct_ and 16 characters.
		accounts[i] = fmt.Sprintf("acct_%016d", i)
	}
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			"pk":       &types.AttributeValueMemberS{Value: "accounts#stripe"},
			"kind":     &types.AttributeValueMemberS{Value: "connect_accounts"},
			"accounts": &types.AttributeValueMemberSS{Value: accounts},
		},
	})
	if err != nil {
		t.Fatalf("the old accounts item: %v", err)
	}
	return accounts
}

// TestAnAccountPastTheOldItemsCeilingIsRecorded: the one item that held
// every account cannot hold more than about 19k of them (DynamoDB's item
// limit is 400 KB, the emulator's 405,000 bytes): the old Record, an
// UpdateItem of that item, was refused for the next account. An account
// recorded past that ceiling is recorded all the same, the old item stays
// as it was (written back whole, it is still accepted), and its accounts
// are listed with the new one, in order.
func TestAnAccountPastTheOldItemsCeilingIsRecorded(t *testing.T) {
	ev, s := newEvents(t)
	ctx := context.Background()
	const ceiling = 19283 // 21-byte ids, within 405,000 bytes with the key and kind
	old := legacyAccounts(t, s.DynamoDB, ev.Table, ceiling)
	oldKey := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "accounts#stripe"}}
	acc := &store.Accounts{DB: s.DynamoDB, Table: ev.Table}
	const next = "acct_zzzzzzzzzzzzzzzz"
	if err := acc.Record(ctx, event.ProviderStripe, next); err != nil {
		t.Fatalf("an account past the old ceiling: %v", err)
	}
	item, err := s.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(ev.Table), Key: oldKey, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(ev.Table), Item: item.Item}); err != nil {
		t.Fatalf("the old item after the account past its ceiling: %v; want it unchanged, within the item size limit", err)
	}
	got := allAccounts(t, acc, event.ProviderStripe, 5000)
	if want := append(slices.Clone(old), next); !slices.Equal(got, want) {
		t.Fatalf("got %d accounts (last %v), want the old item's %d and %s", len(got), got[max(0, len(got)-2):], len(old), next)
	}
}

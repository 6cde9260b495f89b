package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// Accounts remembers the connected accounts (Stripe Connect) the inbox has
// stored an event of, so the reconciler lists each one's events without an
// operator naming it. Each account is one small item of the events table
// under a key that can never be an event's ("connect_account#<provider>#<account>"),
// in the events table's sparse index accounts_seen (keyed by provider, then account,
// keys only), so a platform with a million accounts is listed a page at a
// time, in a stable order, and recording the millionth costs what the
// first did. Recording is an unconditional PutItem of the same item,
// idempotent: two writers never lose each other's. The items carry none of
// the records' index attributes and no TTL.
//
// Before, every account was one string set in one item per provider
// ("accounts#<provider>"), which DynamoDB's 400 KB item limit closed at
// about 19k accounts. Nothing writes it now; Page still reads it and
// merges its accounts in, so a deployment's accounts recorded before the
// change are listed as they were (docs/data-model.md).
//
// Record needs dynamodb:PutItem on the table; Page dynamodb:Query on the
// index and dynamodb:GetItem on the table (the old item).
type Accounts struct {
	DB    DynamoDB
	Table string
}

// prefixAccount starts the key of each account's item.
const prefixAccount = "connect_account#"

// kindAccount marks an account's item (attrKind), for an operator reading
// the table.
const kindAccount = "account_seen"

// The index's keys on an account's item.
const (
	attrAccountOf = "account_of" // the provider
	attrAccountID = "seen_account"
)

// prefixAccounts and attrAccounts are the old item's: one
// string set of every account of a provider, read, never written.
const (
	prefixAccounts = "accounts#"
	attrAccounts   = "accounts"
)

// Record adds account to provider's accounts; adding one already there
// changes nothing.
func (a *Accounts) Record(ctx context.Context, provider, account string) error {
	_, err := a.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(a.Table),
		Item: map[string]types.AttributeValue{
			attrPK:        ddbattr.S(prefixAccount + provider + "#" + account),
			attrKind:      ddbattr.S(kindAccount),
			attrAccountOf: ddbattr.S(provider),
			attrAccountID: ddbattr.S(account),
		},
	})
	if err != nil {
		return fmt.Errorf("store: record account %s of %s: %w", account, provider, err)
	}
	return nil
}

// Page returns provider's recorded accounts after after (all of them when
// after is ""), ascending, at most limit of them, and next, the after of
// the following page: "" when the list ended. The index is eventually
// consistent: an account recorded a moment ago may be missing from a page
// read now, and is in the next reading's.
func (a *Accounts) Page(ctx context.Context, provider, after string, limit int) (accounts []string, next string, err error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("store: accounts of %s: page limit %d", provider, limit)
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(a.Table),
		IndexName:                aws.String(indexAccounts),
		KeyConditionExpression:   aws.String("#p = :p"),
		ExpressionAttributeNames: map[string]string{"#p": attrAccountOf, "#a": attrAccountID},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": ddbattr.S(provider),
		},
		ProjectionExpression: aws.String("#a"),
		Limit:                aws.Int32(int32(min(limit, 1000))),
	}
	if after != "" {
		in.KeyConditionExpression = aws.String("#p = :p AND #a > :after")
		in.ExpressionAttributeValues[":after"] = ddbattr.S(after)
	}
	out, err := a.DB.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("store: accounts of %s after %q: %w", provider, after, err)
	}
	for _, item := range out.Items {
		if s, ok := item[attrAccountID].(*types.AttributeValueMemberS); ok {
			accounts = append(accounts, s.Value)
		}
	}
	// The index holds more past this page when its answer says so (it
	// may be cut below the limit asked, at 1 MB): the old item's accounts
	// past the index's last wait for the page that reaches them.
	more := len(out.LastEvaluatedKey) > 0 && len(accounts) > 0
	old, err := a.old(ctx, provider, after)
	if err != nil {
		return nil, "", err
	}
	if more {
		last := accounts[len(accounts)-1]
		old = slices.DeleteFunc(old, func(acct string) bool { return acct > last })
	}
	accounts = append(accounts, old...)
	slices.Sort(accounts)
	accounts = slices.Compact(accounts)
	if len(accounts) > limit {
		accounts, more = accounts[:limit], true
	}
	if more && len(accounts) > 0 {
		next = accounts[len(accounts)-1]
	}
	return accounts, next, nil
}

// old returns the accounts of provider's old item after after.
func (a *Accounts) old(ctx context.Context, provider, after string) ([]string, error) {
	out, err := a.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(a.Table),
		Key:                      map[string]types.AttributeValue{attrPK: ddbattr.S(prefixAccounts + provider)},
		ProjectionExpression:     aws.String("#a"),
		ExpressionAttributeNames: map[string]string{"#a": attrAccounts},
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the old accounts item of %s: %w", provider, err)
	}
	ss, _ := out.Item[attrAccounts].(*types.AttributeValueMemberSS)
	if ss == nil {
		return nil, nil
	}
	var accounts []string
	for _, acct := range ss.Value {
		if acct > after {
			accounts = append(accounts, acct)
		}
	}
	return accounts, nil
}

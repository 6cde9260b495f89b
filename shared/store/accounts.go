package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
)

// Accounts remembers the connected accounts (Stripe Connect) the inbox has
// stored an event of, so the reconciler lists each one's events without an
// operator naming it. They live in the events table, one item per provider
// under a key that can never be an event's ("accounts#<provider>"), with
// the accounts in a string set: adding one is an idempotent ADD, so two
// writers never lose each other's, and the item carries none of the
// indexes' attributes and no TTL. Record needs dynamodb:UpdateItem on the
// table, Seen dynamodb:GetItem.
type Accounts struct {
	DB    DynamoDB
	Table string
}

// prefixAccounts starts the key of each provider's accounts item.
const prefixAccounts = "accounts#"

// kindAccounts marks an accounts item (attrKind), for an operator reading
// the table.
const kindAccounts = "connect_accounts"

// attrAccounts is the string set of an accounts item.
const attrAccounts = "accounts"

func (a *Accounts) key(provider string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(prefixAccounts + provider)}
}

// Record adds account to provider's accounts; adding one already there
// changes nothing.
func (a *Accounts) Record(ctx context.Context, provider, account string) error {
	_, err := a.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(a.Table),
		Key:                      a.key(provider),
		UpdateExpression:         aws.String("ADD #a :a SET #k = :k"),
		ExpressionAttributeNames: map[string]string{"#a": attrAccounts, "#k": attrKind},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":a": &types.AttributeValueMemberSS{Value: []string{account}},
			":k": ddbattr.S(kindAccounts),
		},
	})
	if err != nil {
		return fmt.Errorf("store: record account %s of %s: %w", account, provider, err)
	}
	return nil
}

// Seen returns provider's recorded accounts, sorted; none before the first
// is recorded.
func (a *Accounts) Seen(ctx context.Context, provider string) ([]string, error) {
	out, err := a.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(a.Table),
		Key:            a.key(provider),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("store: read accounts of %s: %w", provider, err)
	}
	ss, _ := out.Item[attrAccounts].(*types.AttributeValueMemberSS)
	if ss == nil {
		return nil, nil
	}
	seen := slices.Clone(ss.Value)
	slices.Sort(seen)
	return seen, nil
}

// Page returns up to limit of provider's recorded accounts after the
// account after ("" from the first), sorted, and the account to pass as
// after for the next page ("" after the last).
//
// Temporary: it pages Seen's one item in memory, so that the audit's
// paging compiles against the method the accounts' new storage provides.
func (a *Accounts) Page(ctx context.Context, provider, after string, limit int) ([]string, string, error) {
	seen, err := a.Seen(ctx, provider)
	if err != nil {
		return nil, "", err
	}
	i, _ := slices.BinarySearch(seen, after)
	if after != "" && i < len(seen) && seen[i] == after {
		i++
	}
	page := seen[i:min(i+max(limit, 1), len(seen))]
	next := ""
	if i+len(page) < len(seen) {
		next = page[len(page)-1]
	}
	return page, next, nil
}

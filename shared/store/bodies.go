package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
)

// prefixBody starts the key of every body claim: "body#<provider>#<key>",
// which can never be an event's key ("<provider>#<id>").
const prefixBody = "body#"

// kindBody marks a body claim (attrKind), for an operator reading the
// table.
const kindBody = "body_claim"

// ClaimBody records that the body provider signed, named by key (the hex
// SHA-256 package provider computes of what the signature covers, its
// ReplayKey), is event id's, unless it is another event's already, and
// returns the event it is: id, or the one that claimed it first. Providers
// whose signature does not cover the event's id (GitHub, Shopify) need it,
// so that a captured body sent again under a fresh id is never a second
// event.
//
// The claim is one small item (about 150 bytes, one write unit) under
// "body#<provider>#<key>", in no index, kept as long as a record
// (Retention, its TTL): one conditional put that returns the item it lost
// to (ALL_OLD), so a new claim, a retry of the same event and a replay all
// cost one write. It stores no payload: only the key and the id.
func (e *Events) ClaimBody(ctx context.Context, provider, key, id string, now time.Time) (owner string, err error) {
	item := map[string]types.AttributeValue{
		attrPK:   ddbattr.S(prefixBody + provider + "#" + key),
		attrKind: ddbattr.S(kindBody),
		attrID:   ddbattr.S(id),
	}
	if e.Retention > 0 {
		item[attrExpiresAt] = ddbattr.N(now.Add(e.Retention).Unix())
	}
	_, err = e.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(e.Table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		if owner := ddbattr.GetS(ccf.Item, attrID); owner != "" {
			return owner, nil
		}
		// DynamoDB always returns the item here; an endpoint that drops
		// it must not make a replay look like a new claim: read it.
		return e.bodyOwner(ctx, provider, key)
	case err != nil:
		return "", fmt.Errorf("store: claim the body of event %s: %w", id, err)
	}
	return id, nil
}

// bodyOwner reads a body claim's event, strongly consistent.
func (e *Events) bodyOwner(ctx context.Context, provider, key string) (string, error) {
	out, err := e.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.Table),
		Key:            map[string]types.AttributeValue{attrPK: ddbattr.S(prefixBody + provider + "#" + key)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return "", fmt.Errorf("store: read the claim of a body: %w", err)
	}
	owner := ddbattr.GetS(out.Item, attrID)
	if owner == "" {
		return "", errors.New("store: a body claim whose put failed its condition is not there")
	}
	return owner, nil
}

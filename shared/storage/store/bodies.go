package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
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
// returns the event it is: id, or the one that claimed it first. It also
// reports whether that claim has outlived the records (it was made
// Retention or more before now): a record made at the claim has expired,
// or is about to, so the body presented again is a replay even under its
// own id. Providers whose signature does not cover the event's id
// (GitHub, Shopify) need it so that a captured body sent again under a
// fresh id is never a second event; providers whose signature covers no
// time (Square, Lemon Squeezy, a declared sender without a timestamp) so
// that it is never one after the record's TTL either.
//
// The claim is one small item (about 150 bytes, one write unit) under
// "body#<provider>#<key>", in no index, kept for good (no TTL): a capture
// of an untimed signature verifies for as long as the secret is
// unchanged, so its claim must last as long. It holds no payload, only
// the key, the id and when it was made: one conditional put that returns
// the item it lost to (ALL_OLD), so a new claim, a retry of the same
// event and a replay all cost one write.
func (e *Events) ClaimBody(ctx context.Context, provider, key, id string, now time.Time) (owner string, outlived bool, err error) {
	item := map[string]types.AttributeValue{
		attrPK:         ddbattr.S(prefixBody + provider + "#" + key),
		attrKind:       ddbattr.S(kindBody),
		attrID:         ddbattr.S(id),
		attrReceivedAt: ddbattr.Millis(now),
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
		old := ccf.Item
		if ddbattr.GetS(old, attrID) == "" {
			// DynamoDB always returns the item here; an endpoint that
			// drops it must not make a replay look like a new claim:
			// read it.
			if old, err = e.body(ctx, provider, key); err != nil {
				return "", false, err
			}
		}
		return ddbattr.GetS(old, attrID), e.outlived(old, now), nil
	case err != nil:
		return "", false, fmt.Errorf("store: claim the body of event %s: %w", id, err)
	}
	return id, false, nil
}

// outlived reports whether a body claim was made Retention or more
// before now. A claim written with a TTL (before claims were kept for
// good) has no time of its own, and goes with its record.
func (e *Events) outlived(claim map[string]types.AttributeValue, now time.Time) bool {
	at := ddbattr.GetN(claim, attrReceivedAt)
	return e.Retention > 0 && at > 0 && !now.Before(time.UnixMilli(at).Add(e.Retention))
}

// body reads a body claim, strongly consistent.
func (e *Events) body(ctx context.Context, provider, key string) (map[string]types.AttributeValue, error) {
	out, err := e.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.Table),
		Key:            map[string]types.AttributeValue{attrPK: ddbattr.S(prefixBody + provider + "#" + key)},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the claim of a body: %w", err)
	}
	if ddbattr.GetS(out.Item, attrID) == "" {
		return nil, errors.New("store: a body claim whose put failed its condition is not there")
	}
	return out.Item, nil
}

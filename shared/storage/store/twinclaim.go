package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// TwinSide is which form of a Stripe change an event is, for the twin
// claim: its thin event or its snapshot event.
type TwinSide string

// The two sides of a twin claim.
const (
	// TwinThin: a thin event that names no snapshot twin.
	TwinThin TwinSide = "thin"
	// TwinSnapshot: a snapshot event the reconciler found missing, which
	// may be such a thin event's twin.
	TwinSnapshot TwinSide = "snapshot"
)

// TwinKey names one change as both of its forms see it: a Stripe thin
// event that names no snapshot twin (no snapshot_event) and the snapshot
// event of the same change, which Stripe's v1 Events API lists and the
// reconciler then ingests, share it. Neither names the other, so the key
// is what they have in common: the account, the object, the snapshot type
// and the created second. It relies on a thin event's created and its
// twin's being of one second (event.CreatedSecond; the Stripe stand-in
// and stripefixture.Thin make them so).
type TwinKey struct {
	Account  string // "" for the platform's own
	ObjectID string
	Type     string // the snapshot type: "customer.subscription.updated"
	Created  int64  // Unix seconds
}

// TwinClaim is the count of events of each side that have committed
// under one TwinKey.
type TwinClaim struct {
	Thin, Snapshot int
}

// Twinned reports whether an event of side arriving now is the twin of
// one already committed on the other side, which had the pair's effect:
// its side has fewer events than the other, so one there is unmatched.
// Events pair up one to one in the order they commit, so each change
// has one effect whichever form comes first, and two changes of one
// object, type and second (each sent in both forms) have two, even when
// one form of one of them never arrives.
func (c TwinClaim) Twinned(side TwinSide) bool {
	own, other := c.Thin, c.Snapshot
	if side == TwinSnapshot {
		own, other = other, own
	}
	return own < other
}

// prefixTwinClaim starts the key of a twin claim:
// "twinclaim#stripe#<account>#<object>#<type>#<created>".
const prefixTwinClaim = "twinclaim#"

// kindTwinClaim marks a twin claim (attrKind).
const kindTwinClaim = "twin_claim"

// Attributes of a twin claim: the count of each side's events, and their
// ids (a string set), for an operator.
const (
	attrTwinThin     = "thin_events"
	attrTwinSnapshot = "snapshot_events"
	attrTwinIDs      = "event_ids"
)

// TwinClaimRetention is how long a twin claim is kept after its change's
// created second: a little past the Events API's 30 days, past which the
// reconciler never finds a snapshot event.
const TwinClaimRetention = 31 * 24 * time.Hour

func (e *Events) twinClaimKey(k TwinKey) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(prefixTwinClaim + event.ProviderStripe + "#" + k.Account + "#" +
		k.ObjectID + "#" + k.Type + "#" + strconv.FormatInt(k.Created, 10))}
}

// ReadTwinClaim reads k's claim, strongly consistent (an event asks it
// before its effects make their outside calls, and must see a twin
// committed a moment before); zero counts when there is none.
func (e *Events) ReadTwinClaim(ctx context.Context, k TwinKey) (TwinClaim, error) {
	out, err := e.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.Table),
		Key:            e.twinClaimKey(k),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return TwinClaim{}, fmt.Errorf("store: read the twin claim of %s %s: %w", k.Type, k.ObjectID, err)
	}
	return TwinClaim{Thin: int(ddbattr.GetN(out.Item, attrTwinThin)), Snapshot: int(ddbattr.GetN(out.Item, attrTwinSnapshot))}, nil
}

// TwinClaimWrite returns the write, for the commit of event id of side
// (Completion.Writes), that counts it under k's claim. twinned is what
// the event decided from the claim it read (TwinClaim.Twinned), and the
// write's condition holds it to that: an event running its effects
// commits only while its side has at least as many events as the other
// (no twin of it is unmatched), a twinned one only while its side has
// fewer. A failed condition (a *ConflictError at its index) means an
// event of the other side, or of its own, committed in between: an event
// that ran its effects is then twinned and commits without them, and one
// twinned must be retried, to run them. The claim carries no index
// attribute and expires TwinClaimRetention after k's second.
func (e *Events) TwinClaimWrite(k TwinKey, side TwinSide, twinned bool, id string) types.TransactWriteItem {
	own, other := attrTwinThin, attrTwinSnapshot
	if side == TwinSnapshot {
		own, other = other, own
	}
	names := map[string]string{"#own": own, "#other": other, "#ids": attrTwinIDs, "#kind": attrKind, "#exp": attrExpiresAt}
	cond := "#own < #other"
	if !twinned {
		cond, names["#pk"] = "attribute_not_exists(#pk) OR #own >= #other", attrPK
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: aws.String(e.Table),
		Key:       e.twinClaimKey(k),
		// Both counts are made present on the first write (ADD of 0), so
		// the conditions always compare two numbers.
		UpdateExpression:         aws.String("ADD #own :one, #other :zero, #ids :id SET #kind = :kind, #exp = :exp"),
		ConditionExpression:      aws.String(cond),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one":  ddbattr.N(1),
			":zero": ddbattr.N(0),
			":id":   &types.AttributeValueMemberSS{Value: []string{id}},
			":kind": ddbattr.S(kindTwinClaim),
			":exp":  ddbattr.N(time.Unix(k.Created, 0).Add(TwinClaimRetention).Unix()),
		},
	}}
}

package mirror

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
)

// Objects reads the snapshots of ids in batched, strongly consistent
// reads (BatchGetItem, 100 keys a request), by id; an id the mirror has
// no snapshot of is absent from the map.
func (r *Reader) Objects(ctx context.Context, ids []string) (map[string]Snapshot, error) {
	items, err := r.batchGet(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("mirror: read %d objects: %w", len(ids), err)
	}
	out := make(map[string]Snapshot, len(items))
	for _, item := range items {
		s, err := SnapshotFrom(item)
		if err != nil {
			return nil, err
		}
		out[s.ID] = s
	}
	return out, nil
}

// Differences compares a subscription's snapshot with the subscription as
// Stripe's API serves it (obj) on what the entitlement is derived from:
// status, customer, price, current period end and cancel at period end.
// It returns one "field: mirror → API" line per difference, none when
// they agree. A tombstone agrees with a canceled subscription.
func Differences(snap Snapshot, obj json.RawMessage) ([]string, error) {
	var api object
	if err := json.Unmarshal(obj, &api); err != nil {
		return nil, fmt.Errorf("mirror: compare %s: the API's object: %w", snap.ID, err)
	}
	var here object
	if !snap.Deleted && len(snap.Data) > 0 && string(snap.Data) != "null" {
		if err := json.Unmarshal(snap.Data, &here); err != nil {
			return nil, fmt.Errorf("mirror: compare %s: the snapshot: %w", snap.ID, err)
		}
	}
	a, h := compared(api), compared(here)
	if snap.Deleted {
		if api.Status == "canceled" {
			return nil, nil
		}
		return []string{"status: deleted → " + quoteEmpty(api.Status)}, nil
	}
	if h[1][1] == "" {
		h[1][1] = snap.Customer
	}
	var diffs []string
	for i := range a {
		if a[i][1] != h[i][1] {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", a[i][0], quoteEmpty(h[i][1]), quoteEmpty(a[i][1])))
		}
	}
	return diffs, nil
}

// State is a subscription's state on the fields Differences compares,
// as one line ("status=active customer=cus_1 ..."): what an audit's
// repair makes the mirror say, the same for every read of the same state.
func State(obj json.RawMessage) (string, error) {
	var o object
	if err := json.Unmarshal(obj, &o); err != nil {
		return "", fmt.Errorf("mirror: the API's object: %w", err)
	}
	var b strings.Builder
	for i, f := range compared(o) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f[0] + "=" + f[1])
	}
	return b.String(), nil
}

// compared lists the fields Differences compares, as name and value.
func compared(o object) [5][2]string {
	price, end := "", o.CurrentPeriodEnd
	if len(o.Items.Data) > 0 {
		price = o.Items.Data[0].Price.ID
		if end == 0 {
			end = o.Items.Data[0].CurrentPeriodEnd
		}
	}
	return [5][2]string{
		{"status", o.Status},
		{"customer", idOf(o.Customer)},
		{"price", price},
		{"current_period_end", strconv.FormatInt(end, 10)},
		{"cancel_at_period_end", strconv.FormatBool(o.CancelAtPeriodEnd)},
	}
}

func quoteEmpty(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// ScanDB is the part of *dynamodb.Client SubscriptionIDs uses.
type ScanDB interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// SubscriptionIDs lists the ids of every subscription the mirror has,
// tombstones included, with a paginated Scan of the table that returns
// keys only (it reads, and is billed for, the whole table: the audit runs
// it once per complete run).
func (r *Reader) SubscriptionIDs(ctx context.Context, db ScanDB) ([]string, error) {
	var ids []string
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(r.Table),
		FilterExpression:          aws.String("#o = :sub"),
		ProjectionExpression:      aws.String(attrPK),
		ExpressionAttributeNames:  map[string]string{"#o": attrObject},
		ExpressionAttributeValues: map[string]types.AttributeValue{":sub": ddbattr.S("subscription")},
	}
	for {
		out, err := db.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("mirror: scan subscriptions: %w", err)
		}
		for _, item := range out.Items {
			ids = append(ids, ddbattr.GetS(item, attrPK))
		}
		if len(out.LastEvaluatedKey) == 0 {
			return ids, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

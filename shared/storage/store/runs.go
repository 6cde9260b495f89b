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

// Run is one reconciler run as an operator reads it afterwards: when, how
// it ended and what it found (package reconcile's Result).
type Run struct {
	ID        string
	StartedAt time.Time
	Duration  time.Duration
	// Outcome is outcome.RunComplete, RunPartial or RunAborted; Stopped
	// why a partial run stopped; Error why a failed one failed.
	Outcome, Stopped, Error string
	// Since is a one-off sweep's stretch; zero for a scheduled run.
	Since                                           time.Duration
	Listed, Missing, Raced, Stuck, Pages, Throttled int
}

// MaxRuns is how many runs Runs keeps: the last ones, a few hours of a
// schedule of rate(10 minutes).
const MaxRuns = 20

// maxRunError bounds a run's stored error: a line, not a stack.
const maxRunError = 300

// Runs keeps the reconciler's last MaxRuns runs, for the console. They
// are one item of the events table per provider ("reconcile_runs#<provider>",
// a key no event can have), the runs newest first in a list, outside every
// index and without a TTL: listing them is one read, and a run costs one
// read and one write of a few KB, beside the dozens of requests a run
// makes anyway. It needs dynamodb:GetItem and dynamodb:PutItem on the
// table, as the checkpoints do.
type Runs struct {
	DB    DynamoDB
	Table string
}

// prefixRuns starts the key of the runs item.
const prefixRuns = "reconcile_runs#"

// kindRuns marks the runs item (attrKind).
const kindRuns = "reconcile_runs"

// Attribute names of the runs item and of each run in its list (its id is
// attrRunID, as on a checkpoint).
const (
	attrRuns         = "runs"
	attrRunStarted   = "run_at" // Unix milliseconds
	attrRunDuration  = "run_ms"
	attrRunOutcome   = "run_outcome"
	attrRunStopped   = "run_stopped"
	attrRunError     = "run_error"
	attrRunSince     = "run_since_s"
	attrRunListed    = "run_listed"
	attrRunMissing   = "run_missing"
	attrRunRaced     = "run_raced"
	attrRunStuck     = "run_stuck"
	attrRunPages     = "run_pages"
	attrRunThrottled = "run_throttled"
)

func runsKey(provider string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(prefixRuns + provider)}
}

// Record adds run to the provider's last runs, dropping the oldest beyond
// MaxRuns. The write is conditioned on the list it read, so two runs
// ending at once both land: the second reads again and retries.
func (r *Runs) Record(ctx context.Context, provider string, run Run) error {
	if err := r.prepend(ctx, runsKey(provider), kindRuns, runAttr(run), MaxRuns); err != nil {
		return fmt.Errorf("store: record reconciler run %s: %w", run.ID, err)
	}
	return nil
}

// Recent returns the provider's last runs, newest first; none before the
// first run.
func (r *Runs) Recent(ctx context.Context, provider string) ([]Run, error) {
	list, _, err := r.read(ctx, runsKey(provider))
	if err != nil {
		return nil, fmt.Errorf("store: read reconciler runs: %w", err)
	}
	var runs []Run
	for _, v := range list {
		if m, ok := v.(*types.AttributeValueMemberM); ok {
			runs = append(runs, runFrom(m.Value))
		}
	}
	return runs, nil
}

// prepend puts v first in the list of the item at key, keeping at most
// keep entries, conditioned on the list it read (retried on a race).
func (r *Runs) prepend(ctx context.Context, key map[string]types.AttributeValue, kind string, v types.AttributeValue, keep int) error {
	for attempt := 0; ; attempt++ {
		list, seq, err := r.read(ctx, key)
		if err != nil {
			return err
		}
		list = append([]types.AttributeValue{v}, list...)
		if len(list) > keep {
			list = list[:keep]
		}
		item := map[string]types.AttributeValue{}
		for k, x := range key {
			item[k] = x
		}
		item[attrKind] = ddbattr.S(kind)
		item[attrSeq] = ddbattr.N(seq + 1)
		item[attrRuns] = &types.AttributeValueMemberL{Value: list}
		in := &dynamodb.PutItemInput{TableName: aws.String(r.Table), Item: item}
		if seq == 0 {
			in.ConditionExpression = aws.String("attribute_not_exists(" + attrPK + ")")
		} else {
			in.ConditionExpression = aws.String(attrSeq + " = :seq")
			in.ExpressionAttributeValues = map[string]types.AttributeValue{":seq": ddbattr.N(seq)}
		}
		_, err = r.DB.PutItem(ctx, in)
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) && attempt < 3 {
			continue
		}
		return err
	}
}

// read returns the list of the item at key, newest first, and its Seq
// (zero when there is no item yet).
func (r *Runs) read(ctx context.Context, key map[string]types.AttributeValue) ([]types.AttributeValue, int64, error) {
	out, err := r.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(r.Table), Key: key, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, 0, err
	}
	var list []types.AttributeValue
	if l, ok := out.Item[attrRuns].(*types.AttributeValueMemberL); ok {
		list = l.Value
	}
	return list, ddbattr.GetN(out.Item, attrSeq), nil
}

func runAttr(x Run) types.AttributeValue {
	m := map[string]types.AttributeValue{
		attrRunID:        ddbattr.S(x.ID),
		attrRunStarted:   ddbattr.Millis(x.StartedAt),
		attrRunDuration:  ddbattr.N(x.Duration.Milliseconds()),
		attrRunOutcome:   ddbattr.S(x.Outcome),
		attrRunListed:    ddbattr.N(int64(x.Listed)),
		attrRunMissing:   ddbattr.N(int64(x.Missing)),
		attrRunRaced:     ddbattr.N(int64(x.Raced)),
		attrRunStuck:     ddbattr.N(int64(x.Stuck)),
		attrRunPages:     ddbattr.N(int64(x.Pages)),
		attrRunThrottled: ddbattr.N(int64(x.Throttled)),
	}
	// Only what a run has: most have no stop, no error and no sweep.
	if x.Stopped != "" {
		m[attrRunStopped] = ddbattr.S(x.Stopped)
	}
	if x.Error != "" {
		e := x.Error
		if len(e) > maxRunError {
			e = e[:maxRunError] + "…"
		}
		m[attrRunError] = ddbattr.S(e)
	}
	if x.Since > 0 {
		m[attrRunSince] = ddbattr.N(int64(x.Since / time.Second))
	}
	return &types.AttributeValueMemberM{Value: m}
}

func runFrom(m map[string]types.AttributeValue) Run {
	return Run{
		ID:        ddbattr.GetS(m, attrRunID),
		StartedAt: ddbattr.GetMillis(m, attrRunStarted),
		Duration:  time.Duration(ddbattr.GetN(m, attrRunDuration)) * time.Millisecond,
		Outcome:   ddbattr.GetS(m, attrRunOutcome),
		Stopped:   ddbattr.GetS(m, attrRunStopped),
		Error:     ddbattr.GetS(m, attrRunError),
		Since:     time.Duration(ddbattr.GetN(m, attrRunSince)) * time.Second,
		Listed:    int(ddbattr.GetN(m, attrRunListed)),
		Missing:   int(ddbattr.GetN(m, attrRunMissing)),
		Raced:     int(ddbattr.GetN(m, attrRunRaced)),
		Stuck:     int(ddbattr.GetN(m, attrRunStuck)),
		Pages:     int(ddbattr.GetN(m, attrRunPages)),
		Throttled: int(ddbattr.GetN(m, attrRunThrottled)),
	}
}

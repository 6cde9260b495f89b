package store

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/outcome"
)

// DynamoDB is the part of *dynamodb.Client the store uses.
type DynamoDB interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Errors of the store.
var (
	// ErrNotFound: no record with that key.
	ErrNotFound = errors.New("store: event record not found")
	// ErrLeaseLost: the record is no longer processing under our lease, so
	// our result must not be written.
	ErrLeaseLost = errors.New("store: lease lost")
)

// NotClaimableError reports a claim that lost: Current is the record as it
// stood, whose status says why (already processed, or leased by another
// worker until LeaseUntil).
type NotClaimableError struct {
	Current event.Record
}

func (e *NotClaimableError) Error() string {
	return fmt.Sprintf("store: event %s is %s, not claimable", e.Current.ID, e.Current.Status)
}

// ConflictError reports a transaction cancelled because the condition of one
// of the caller's extra items failed (Index counts the extra items from 0).
// The record itself was not changed.
type ConflictError struct {
	Index int
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: condition of transaction item %d failed", e.Index)
}

// Events is the table of event records.
type Events struct {
	DB    DynamoDB
	Table string
	// Retention sets the TTL of new records; zero keeps them forever.
	Retention time.Duration
	// BatchBackoff is the first pause of Existing before it asks again for
	// keys DynamoDB left unprocessed; DefaultBatchBackoff when zero.
	BatchBackoff time.Duration
}

func (e *Events) key(provider, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(event.Key(provider, id))}
}

// Create stores r unless a record with its key exists. When one does, Create
// returns it and a nil error: decoded from the failed condition check, so a
// duplicate costs one call, and without its payload, which a duplicate never
// needs (its status and payload hash decide). When the payload is too large
// for an item even compressed, Create stores the record without it and sets
// r.PayloadOmitted.
func (e *Events) Create(ctx context.Context, r *event.Record) (existing *event.Record, err error) {
	item, err := e.marshalNew(r)
	if err != nil {
		return nil, err
	}
	_, err = e.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(e.Table),
		Item:                                item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			// DynamoDB always returns the item here, but an endpoint that
			// drops it (an emulator, a proxy) must not make the duplicate
			// look like a record with no status, which would never be
			// enqueued again: read it instead.
			old, err := e.Get(ctx, r.Provider, r.ID)
			var pe *PayloadError
			if errors.As(err, &pe) {
				old, err = pe.Record, nil
			}
			if err != nil {
				return nil, fmt.Errorf("store: read existing event %s: %w", r.ID, err)
			}
			old.Payload = nil
			return &old, nil
		}
		old := unmarshalFields(ccf.Item)
		return &old, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: put event %s: %w", r.ID, err)
	}
	return nil, nil
}

// Get reads a record with a strongly consistent read. A record whose
// payload does not decode comes with a *PayloadError, which holds it.
func (e *Events) Get(ctx context.Context, provider, id string) (event.Record, error) {
	out, err := e.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.Table),
		Key:            e.key(provider, id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return event.Record{}, fmt.Errorf("store: get event %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return event.Record{}, ErrNotFound
	}
	return Unmarshal(out.Item)
}

// Claim moves a record to processing under a lease held by owner until
// leaseUntil, and returns the claimed record. A record is claimable when it
// is received, failed or dead_lettered (sent back by a DLQ redrive), or
// processing under a lease that expired before now. Otherwise Claim returns
// a *NotClaimableError holding the record, or ErrNotFound. When the
// record's payload does not decode, Claim returns a *PayloadError holding
// the record as the claim left it (processing under owner's lease) or, if
// the claim lost, as it stood.
func (e *Events) Claim(ctx context.Context, provider, id, owner string, now, leaseUntil time.Time) (event.Record, error) {
	out, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table),
		Key:       e.key(provider, id),
		UpdateExpression: aws.String("SET #st = :processing, status_at = :now, status_day = :day, " +
			"pending_shard = provider, lease_owner = :owner, lease_until = :until, claimed_at = :now, " +
			"attempts = if_not_exists(attempts, :zero) + :one"),
		ConditionExpression:      aws.String("#st IN (:received, :failed, :dead) OR (#st = :processing AND lease_until < :now)"),
		ExpressionAttributeNames: map[string]string{"#st": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":processing": ddbattr.S(string(event.StatusProcessing)),
			":received":   ddbattr.S(string(event.StatusReceived)),
			":failed":     ddbattr.S(string(event.StatusFailed)),
			":dead":       ddbattr.S(string(event.StatusDeadLettered)),
			":now":        ddbattr.Millis(now),
			":day":        ddbattr.S(statusDay(event.StatusProcessing, now)),
			":owner":      ddbattr.S(owner),
			":until":      ddbattr.Millis(leaseUntil),
			":zero":       ddbattr.N(0),
			":one":        ddbattr.N(1),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return transitioned(out, err, "claim", id)
}

// transitioned reads the answer to a conditional transition that returns
// the record: the new record, or, when the condition failed, a
// *NotClaimableError holding the record as it stood (ErrNotFound when there
// was none).
func transitioned(out *dynamodb.UpdateItemOutput, err error, verb, id string) (event.Record, error) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			return event.Record{}, ErrNotFound
		}
		cur, err := Unmarshal(ccf.Item)
		if err != nil {
			return event.Record{}, err
		}
		return event.Record{}, &NotClaimableError{Current: cur}
	}
	if err != nil {
		return event.Record{}, fmt.Errorf("store: %s event %s: %w", verb, id, err)
	}
	return Unmarshal(out.Attributes)
}

// Completion is the result of processing an event, written by Complete.
type Completion struct {
	Outcome   outcome.Outcome
	MirrorKey string
	// Writes are the effect's own items, committed in the same transaction
	// as the status change.
	Writes []types.TransactWriteItem
}

// Complete commits c.Writes and marks the record processed, in one
// transaction conditioned on owner still holding the lease. Either all of it
// is written or none: ErrLeaseLost when the lease was lost, *ConflictError
// when the condition of one of c.Writes failed.
func (e *Events) Complete(ctx context.Context, r event.Record, owner string, now time.Time, c Completion) error {
	update := "SET #st = :processed, status_at = :now, status_day = :day, outcome = :outcome, processed_at = :now"
	values := map[string]types.AttributeValue{
		":processed":  ddbattr.S(string(event.StatusProcessed)),
		":processing": ddbattr.S(string(event.StatusProcessing)),
		":now":        ddbattr.Millis(now),
		":day":        ddbattr.S(statusDay(event.StatusProcessed, now)),
		":outcome":    ddbattr.S(string(c.Outcome)),
		":owner":      ddbattr.S(owner),
	}
	if c.MirrorKey != "" {
		update += ", mirror_key = :mk"
		values[":mk"] = ddbattr.S(c.MirrorKey)
	}
	update += " REMOVE lease_owner, lease_until, pending_shard"
	items := append(append([]types.TransactWriteItem(nil), c.Writes...), types.TransactWriteItem{
		Update: &types.Update{
			TableName:                 aws.String(e.Table),
			Key:                       e.key(r.Provider, r.ID),
			UpdateExpression:          aws.String(update),
			ConditionExpression:       aws.String("#st = :processing AND lease_owner = :owner"),
			ExpressionAttributeNames:  map[string]string{"#st": attrStatus},
			ExpressionAttributeValues: values,
		},
	})
	err := e.transact(ctx, items)
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, reason := range tce.CancellationReasons {
			if aws.ToString(reason.Code) != "ConditionalCheckFailed" {
				continue
			}
			if i == len(items)-1 {
				return ErrLeaseLost
			}
			return &ConflictError{Index: i}
		}
	}
	if err != nil {
		return fmt.Errorf("store: complete event %s: %w", r.ID, err)
	}
	return nil
}

// conflictRetries bounds the transaction's own retries when DynamoDB
// cancels it for a conflict with another transaction on one of its items.
const conflictRetries = 3

// transact runs a transaction, running it again when DynamoDB cancelled it
// only because another transaction touched one of its items at the same
// time (TransactionConflict): nothing was applied, its conditions are
// evaluated afresh, and the SDK does not retry this cancellation itself.
// Two subscriptions of one customer in one batch, for instance, both update
// the customer's entitlement item.
func (e *Events) transact(ctx context.Context, items []types.TransactWriteItem) error {
	for attempt := 0; ; attempt++ {
		_, err := e.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if !onlyConflicts(err) || attempt == conflictRetries {
			return err
		}
		wait := time.Duration(10<<attempt)*time.Millisecond + time.Duration(mrand.IntN(10))*time.Millisecond
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// onlyConflicts reports whether err is a cancellation whose reasons are
// TransactionConflict and nothing worse (no failed condition).
func onlyConflicts(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	conflict := false
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "TransactionConflict":
			conflict = true
		case "", "None":
		default:
			return false
		}
	}
	return conflict
}

// Fail records a failed attempt: status is failed (retryable; the record
// stays pending), failed_permanent or dead_lettered (both final). It is
// conditioned on owner holding the lease, and returns ErrLeaseLost if not.
func (e *Events) Fail(ctx context.Context, r event.Record, owner string, status event.Status, cause string, now time.Time) error {
	update := "SET #st = :status, status_at = :now, status_day = :day, last_error = :err, last_error_at = :now"
	if status.Pending() {
		update += " REMOVE lease_owner, lease_until"
	} else {
		update += " REMOVE lease_owner, lease_until, pending_shard"
	}
	_, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(e.Table),
		Key:                      e.key(r.Provider, r.ID),
		UpdateExpression:         aws.String(update),
		ConditionExpression:      aws.String("#st = :processing AND lease_owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#st": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":status":     ddbattr.S(string(status)),
			":processing": ddbattr.S(string(event.StatusProcessing)),
			":now":        ddbattr.Millis(now),
			":day":        ddbattr.S(statusDay(status, now)),
			":err":        ddbattr.S(truncate(cause, 1000)),
			":owner":      ddbattr.S(owner),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("store: record failure of event %s: %w", r.ID, err)
	}
	return nil
}

func truncate(v string, max int) string {
	if len(v) <= max {
		return v
	}
	return v[:max] + "…"
}

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

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
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
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
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
	// Item is the item as the failed condition found it, when the write
	// asked for it (ReturnValuesOnConditionCheckFailure ALL_OLD; the
	// mirror's writes do); nil otherwise.
	Item map[string]types.AttributeValue
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: condition of transaction item %d failed", e.Index)
}

// Events is the table of event records and their payloads.
type Events struct {
	DB    DynamoDB
	Table string
	// Retention sets the TTL of new records; zero keeps them forever.
	Retention time.Duration
	// PayloadRetention sets the TTL of new payload items; zero takes
	// Retention. A record outlives its payload: duplicates are recognised
	// by the record, and the payload serves processing, replay and
	// inspection, all within days.
	PayloadRetention time.Duration
	// BatchBackoff is the first pause of Existing before it asks again for
	// keys DynamoDB left unprocessed; DefaultBatchBackoff when zero.
	BatchBackoff time.Duration
}

func (e *Events) payloadRetention() time.Duration {
	if e.PayloadRetention > 0 {
		return e.PayloadRetention
	}
	return e.Retention
}

func (e *Events) key(provider, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(event.Key(provider, id))}
}

func (e *Events) payloadKey(provider, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: ddbattr.S(payloadKey(provider, id))}
}

// ErrNoPayload: the record has no payload item: never written (the
// writer died between the record and its payload), expired (its TTL is
// shorter than the record's) or erased.
var ErrNoPayload = errors.New("store: no stored payload")

// Create stores r unless a record with its key exists, then its payload.
//
// The record comes first, in a conditional put of the record alone
// (everything but the payload): a duplicate then costs one small write,
// and Create returns the record it lost to and a nil error, decoded from
// the failed condition check, without its payload, which a duplicate
// never needs (its status and payload hash decide). A new record's
// payload goes, gzipped, into an item of its own (StorePayload), so that
// no status transition rewrites it. When that second put fails, Create
// returns its error: the record stays received, and the sender's retry
// finds it so (event.Status.NeedsEnqueue) and stores the payload again
// before enqueueing it. When the payload is too large for an item even
// gzipped, Create stores the record without it and sets r.PayloadOmitted.
func (e *Events) Create(ctx context.Context, r *event.Record) (existing *event.Record, err error) {
	packed, err := packPayload(r)
	if err != nil {
		return nil, err
	}
	_, err = e.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(e.Table),
		Item:                                e.marshalRecord(r),
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
			old, err := e.record(ctx, r.Provider, r.ID)
			if err != nil {
				return nil, fmt.Errorf("store: read existing event %s: %w", r.ID, err)
			}
			return &old, nil
		}
		old := Unmarshal(ccf.Item)
		return &old, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: put event %s: %w", r.ID, err)
	}
	if packed == nil {
		return nil, nil
	}
	if err := e.putPayload(ctx, *r, packed); err != nil {
		return nil, err
	}
	return nil, nil
}

// StorePayload stores r's payload unless its record's payload item exists
// already: a record left received without one (its writer died between
// the two puts) gets it from the sender's retry, and a stored payload is
// never replaced by another copy of the event (the provider API's, say).
// A payload too large to store marks r.PayloadOmitted and writes nothing.
func (e *Events) StorePayload(ctx context.Context, r *event.Record) error {
	packed, err := packPayload(r)
	if err != nil || packed == nil {
		return err
	}
	return e.putPayload(ctx, *r, packed)
}

func (e *Events) putPayload(ctx context.Context, r event.Record, packed []byte) error {
	_, err := e.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(e.Table),
		Item:                e.marshalPayload(r, packed),
		ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // stored already: the first copy stays
	}
	if err != nil {
		return fmt.Errorf("store: put payload of event %s: %w", r.ID, err)
	}
	return nil
}

// Get reads a record and its payload, both strongly consistent. A record
// whose payload does not decode comes with a *PayloadError, which holds
// it; a record whose payload item is gone (expired, erased, never
// written) comes without a payload and no error.
func (e *Events) Get(ctx context.Context, provider, id string) (event.Record, error) {
	r, err := e.record(ctx, provider, id)
	if err != nil {
		return r, err
	}
	if r.PayloadOmitted || r.PayloadErased {
		return r, nil
	}
	p, err := e.Payload(ctx, r)
	switch {
	case errors.Is(err, ErrNoPayload):
		return r, nil
	case err != nil:
		return r, err
	}
	r.Payload = p
	return r, nil
}

// record reads a record alone, strongly consistent.
func (e *Events) record(ctx context.Context, provider, id string) (event.Record, error) {
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
	return Unmarshal(out.Item), nil
}

// Payload reads r's payload from its item, strongly consistent: the
// processor reads it right after the receiver wrote it, before the
// pointer was sent. ErrNoPayload when there is none; a *PayloadError
// holding r when it does not decode.
func (e *Events) Payload(ctx context.Context, r event.Record) ([]byte, error) {
	out, err := e.DB.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(e.Table),
		Key:            e.payloadKey(r.Provider, r.ID),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("store: get the payload of event %s: %w", r.ID, err)
	}
	p, ok, err := unpackPayload(out.Item)
	switch {
	case !ok:
		return nil, ErrNoPayload
	case err != nil:
		return nil, &PayloadError{Record: r, Err: err}
	}
	return p, nil
}

// Claim moves a record to processing under a lease held by owner until
// leaseUntil, and returns the claimed record, without its payload
// (Payload reads it). A record is claimable when it is received, failed
// or dead_lettered (sent back by a DLQ redrive), or processing under a
// lease that expired before now. Otherwise Claim returns a
// *NotClaimableError holding the record, or ErrNotFound. A claim whose
// answer was lost (every retry's too) is read back: a record processing
// under owner's lease is the claimed record.
//
// The record is small, so the claim is one write unit, and its lane in
// the unprocessed index stays pending: the claim changes no index (only a
// dead-lettered record moves lanes, back to pending).
func (e *Events) Claim(ctx context.Context, provider, id, owner string, now, leaseUntil time.Time) (event.Record, error) {
	out, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table),
		Key:       e.key(provider, id),
		UpdateExpression: aws.String("SET #st = :processing, status_at = :now, lane = :lane, " +
			"lease_owner = :owner, lease_until = :until, claimed_at = :now, " +
			"attempts = if_not_exists(attempts, :zero) + :one"),
		ConditionExpression:      aws.String("#st IN (:received, :failed, :dead) OR (#st = :processing AND lease_until < :now)"),
		ExpressionAttributeNames: map[string]string{"#st": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":processing": ddbattr.S(string(event.StatusProcessing)),
			":received":   ddbattr.S(string(event.StatusReceived)),
			":failed":     ddbattr.S(string(event.StatusFailed)),
			":dead":       ddbattr.S(string(event.StatusDeadLettered)),
			":now":        ddbattr.Millis(now),
			":lane":       ddbattr.S(laneKey(provider, LanePending, shard(id))),
			":owner":      ddbattr.S(owner),
			":until":      ddbattr.Millis(leaseUntil),
			":zero":       ddbattr.N(0),
			":one":        ddbattr.N(1),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	rec, err := transitioned(out, err, "claim", id)
	var nc *NotClaimableError
	switch {
	case errors.As(err, &nc) && ownLease(nc.Current, owner):
		// The SDK's retry of a claim whose answer was lost met the lease
		// the first attempt took: owners are unique per claim.
		return nc.Current, nil
	case err != nil && !errors.As(err, &nc) && !errors.Is(err, ErrNotFound):
		// No answer says whether the claim took effect: read it back.
		if cur, rerr := e.readBack(ctx, provider, id); rerr == nil && ownLease(cur, owner) {
			return cur, nil
		}
	}
	return rec, err
}

// ownLease reports whether r is processing under owner's lease.
func ownLease(r event.Record, owner string) bool {
	return r.Status == event.StatusProcessing && r.LeaseOwner == owner
}

// readBackTimeout bounds the read of a record after a write whose answer
// was lost.
const readBackTimeout = 3 * time.Second

// readBack reads a record after a write whose answer was lost (its
// connection dropped, its context ended, the SDK's retries ran out): the
// outcome of a write is read back, never guessed. It has a context of its
// own, as the caller's may be what ended the write.
func (e *Events) readBack(ctx context.Context, provider, id string) (event.Record, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
	defer cancel()
	return e.record(rctx, provider, id)
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
		return event.Record{}, &NotClaimableError{Current: Unmarshal(ccf.Item)}
	}
	if err != nil {
		return event.Record{}, fmt.Errorf("store: %s event %s: %w", verb, id, err)
	}
	return Unmarshal(out.Attributes), nil
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
// when the condition of one of c.Writes failed. The record leaves the
// unprocessed index: its one index write.
//
// The SDK retries a transaction whose answer was lost with the same
// ClientRequestToken, which DynamoDB answers with success when it had
// committed. When no answer comes back at all, or a commit of its own
// (another token) meets the condition it set, Complete reads the record
// back: processed at now is its own commit, and it returns nil.
func (e *Events) Complete(ctx context.Context, r event.Record, owner string, now time.Time, c Completion) error {
	update := "SET #st = :processed, status_at = :now, outcome = :outcome, processed_at = :now"
	values := map[string]types.AttributeValue{
		":processed":  ddbattr.S(string(event.StatusProcessed)),
		":processing": ddbattr.S(string(event.StatusProcessing)),
		":now":        ddbattr.Millis(now),
		":outcome":    ddbattr.S(string(c.Outcome)),
		":owner":      ddbattr.S(owner),
	}
	if c.MirrorKey != "" {
		update += ", mirror_key = :mk"
		values[":mk"] = ddbattr.S(c.MirrorKey)
	}
	update += " REMOVE lease_owner, lease_until, lane"
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
				if e.committed(ctx, r, now) {
					// An earlier attempt of this commit took effect.
					return nil
				}
				return ErrLeaseLost
			}
			return &ConflictError{Index: i, Item: reason.Item}
		}
	}
	if err != nil && !errors.As(err, &tce) && e.committed(ctx, r, now) {
		// No answer came back, the SDK's retries' included, but the
		// commit took effect: the record says so.
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: complete event %s: %w", r.ID, err)
	}
	return nil
}

// committed reads r back and reports whether it was marked processed by
// a commit made at now: a commit whose answer was lost. A record is
// processed once, and its processed_at is that commit's now.
func (e *Events) committed(ctx context.Context, r event.Record, now time.Time) bool {
	cur, err := e.readBack(ctx, r.Provider, r.ID)
	return err == nil && cur.Status == event.StatusProcessed && cur.ProcessedAt.Equal(now.Truncate(time.Millisecond))
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
		if pause.For(ctx, wait) != nil {
			return err
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
// stays in the pending lane), failed_permanent or dead_lettered (both
// final: the record moves to their lane). The cause is kept up to
// maxLastError bytes. A failed record keeps retryAt, when its message
// comes back (the processor's backoff, hours at its end): until then the
// stuck sweep (Stuck) leaves it alone. It is conditioned on owner holding
// the lease, and returns ErrLeaseLost if not.
//
// When its answer is lost (or the SDK's retry of it meets the record it
// wrote), Fail reads the record back: the status, time and cause it wrote
// are there, and it returns nil, so the caller counts the status it set
// (a failed_permanent must reach its alarm's metric); a lease taken by
// another is ErrLeaseLost; only a record still processing under owner's
// lease, or one that cannot be read, leaves the error as it was.
func (e *Events) Fail(ctx context.Context, r event.Record, owner string, status event.Status, cause string, now, retryAt time.Time) error {
	switch status {
	case event.StatusFailed, event.StatusFailedPermanent, event.StatusDeadLettered:
	default:
		return fmt.Errorf("store: record failure of event %s: %s is not a failed status", r.ID, status)
	}
	lane, _ := Lane(status)
	values := map[string]types.AttributeValue{
		":status":     ddbattr.S(string(status)),
		":processing": ddbattr.S(string(event.StatusProcessing)),
		":now":        ddbattr.Millis(now),
		":lane":       ddbattr.S(laneKey(r.Provider, lane, shard(r.ID))),
		":err":        ddbattr.S(truncate(cause, maxLastError)),
		":owner":      ddbattr.S(owner),
	}
	update := "SET #st = :status, status_at = :now, last_error = :err, last_error_at = :now, lane = :lane"
	remove := " REMOVE lease_owner, lease_until"
	if status == event.StatusFailed && !retryAt.IsZero() {
		update += ", " + attrRetryAt + " = :retry"
		values[":retry"] = ddbattr.Millis(retryAt)
	} else {
		remove += ", " + attrRetryAt
	}
	_, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(e.Table),
		Key:                                 e.key(r.Provider, r.ID),
		UpdateExpression:                    aws.String(update + remove),
		ConditionExpression:                 aws.String("#st = :processing AND lease_owner = :owner"),
		ExpressionAttributeNames:            map[string]string{"#st": attrStatus},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil
	}
	// The write failed, or its answer was lost: the record as it stands
	// says which. The record the condition failed on comes with the
	// failure (ALL_OLD); after no answer at all it is read back.
	var (
		ccf  *types.ConditionalCheckFailedException
		cur  event.Record
		rerr error
	)
	if errors.As(err, &ccf) && len(ccf.Item) > 0 {
		cur = Unmarshal(ccf.Item)
	} else {
		cur, rerr = e.readBack(ctx, r.Provider, r.ID)
	}
	written := rerr == nil && cur.Status == status && cur.StatusAt.Equal(now.Truncate(time.Millisecond)) &&
		cur.LastError == truncate(cause, maxLastError)
	switch {
	case written:
		// Ours: an attempt whose answer was lost took effect.
		return nil
	case errors.As(err, &ccf), rerr == nil && !ownLease(cur, owner):
		return ErrLeaseLost
	}
	return fmt.Errorf("store: record failure of event %s: %w", r.ID, err)
}

// Reopen moves a failed_permanent record back to failed, so that the
// processor claims it on the next message that points to it. It is an
// operator's decision, made after fixing what made the event fail (inboxctl
// replay --force), and the only way out of failed_permanent. It is
// conditioned on the record still being failed_permanent: otherwise it
// returns a *NotClaimableError holding the record as it stands, or
// ErrNotFound. The last error is kept for the record's history.
func (e *Events) Reopen(ctx context.Context, provider, id string, now time.Time) (event.Record, error) {
	out, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(e.Table),
		Key:                      e.key(provider, id),
		UpdateExpression:         aws.String("SET #st = :failed, status_at = :now, lane = :lane"),
		ConditionExpression:      aws.String("#st = :permanent"),
		ExpressionAttributeNames: map[string]string{"#st": attrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":failed":    ddbattr.S(string(event.StatusFailed)),
			":permanent": ddbattr.S(string(event.StatusFailedPermanent)),
			":now":       ddbattr.Millis(now),
			":lane":      ddbattr.S(laneKey(provider, LanePending, shard(id))),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return transitioned(out, err, "reopen", id)
}

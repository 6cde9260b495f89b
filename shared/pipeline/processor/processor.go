package processor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/defaults"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/metrics"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// Store is the part of *store.Events the processor uses.
type Store interface {
	Claim(ctx context.Context, provider, id, owner string, now, leaseUntil time.Time) (event.Record, error)
	// Payload reads a record's stored payload: store.ErrNoPayload when
	// there is none, a *store.PayloadError when it does not decode.
	Payload(ctx context.Context, r event.Record) ([]byte, error)
	Complete(ctx context.Context, r event.Record, owner string, now time.Time, c store.Completion) error
	// Fail records a failed attempt; retryAt is when a retryable one's
	// message comes back (zero for a final status).
	Fail(ctx context.Context, r event.Record, owner string, status event.Status, cause string, now, retryAt time.Time) error
}

// Mirror plans the snapshot writes of an event; *mirror.Mirror implements
// it.
type Mirror interface {
	Plan(r event.Record, payload []byte) (mirror.Plan, error)
}

var _ Mirror = (*mirror.Mirror)(nil)

// Settler is the part of a Mirror that settles a tie from the provider's
// API (mirror.Mirror.Settle): a Mirror that implements it, with
// Config.API set, has events of one object in the same second settled by
// the API's state rather than by their ids.
type Settler interface {
	Settle(ctx context.Context, api mirror.ObjectReader, r event.Record, payload []byte) (mirror.Plan, error)
}

var _ Settler = (*mirror.Mirror)(nil)

// Prereader reads an event's standing in the mirror before its effects
// run; mirror.Prereader implements it.
type Prereader interface {
	Standing(ctx context.Context, r event.Record, payload []byte) (mirror.Standing, error)
}

var _ Prereader = mirror.Prereader{}

// Effects runs the team's own effects; *effect.Registry implements it.
type Effects interface {
	Run(ctx context.Context, r event.Record, payload []byte) ([]types.TransactWriteItem, error)
}

// Fetcher reads an event from the provider's API, for records stored without
// their payload: too large, or their receiver died before storing it.
type Fetcher interface {
	Fetch(ctx context.Context, id string) ([]byte, error)
}

// AccountFetcher is a Fetcher that also reads a connected account's
// events (Stripe Connect: the Stripe-Account header), which Fetch, with
// the platform's key alone, does not find; *stripeapi.Client implements
// it.
type AccountFetcher interface {
	FetchOf(ctx context.Context, account, id string) ([]byte, error)
}

// Visibility is the part of *sqs.Client used to delay the retry of a failed
// message (exponential backoff instead of the queue's fixed visibility).
type Visibility interface {
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// MetricAPIReads counts, per batch, the objects read from the provider's
// API to settle events of one object in the same second (Config.API).
const MetricAPIReads = "api_reads"

// Defaults for Config. The backoff's defaults are the template's
// (RetryBackoffBase, RetryBackoffMax), so that with its MaxReceiveCount of
// 10 a failing event is retried for RetryBudget(60 s, 2 h, 10) = 6 h 7 min
// before it is dead-lettered: a downstream outage of a few hours
// dead-letters nothing.
const (
	DefaultLeaseMax    = 5 * time.Minute
	DefaultConcurrency = 8
	DefaultBackoffBase = 60 * time.Second
	DefaultBackoffMax  = 2 * time.Hour
)

// Config configures a Processor. Store and MaxReceiveCount are required.
type Config struct {
	Store   Store
	Mirror  Mirror  // nil: no mirror
	Effects Effects // nil: no effects
	// Fetcher reads events whose payload is not stored; nil: an event too
	// large to store fails permanently, one whose payload is missing
	// fails and is retried (the provider's retry stores it).
	Fetcher Fetcher
	// API reads an object's current state from the provider's API, to
	// settle an event that cannot be ordered against what the mirror
	// applied to its object (the same created second, another event: see
	// mirror.Tie); it needs a Mirror that is a Settler, with
	// mirror.Mirror.TiesByAPI set. nil: the mirror breaks ties itself.
	API mirror.ObjectReader
	// Preread reads, before an event's effects run, what the mirror holds
	// for its object (mirror.Prereader): a tie is then settled from the
	// API before any effect's outside call, and an event whose change the
	// audit already ran the effects of runs none. nil: effects run first
	// and the commit finds out.
	Preread Prereader
	// Thin reads what Stripe's thin events name (the event whole, the
	// object it is about); nil: a thin event fails, retryably
	// (ErrNoThinReader).
	Thin ThinReader
	// Visibility and QueueURL enable backoff of retries; nil keeps the
	// queue's visibility timeout.
	Visibility Visibility
	QueueURL   string
	// MaxReceiveCount is the queue's redrive maxReceiveCount: the receive on
	// which a failing event is marked dead_lettered.
	MaxReceiveCount int
	LeaseMax        time.Duration
	Concurrency     int
	BackoffBase     time.Duration
	BackoffMax      time.Duration
	// Instance names this worker in lease owners, for operators.
	Instance string
	Logger   *slog.Logger
	Now      func() time.Time
}

// Processor is the processor's Lambda handler.
type Processor struct{ cfg Config }

// New returns a Processor; zero fields of cfg take their defaults.
func New(cfg Config) (*Processor, error) {
	if cfg.Store == nil {
		return nil, errors.New("processor: no store")
	}
	if cfg.MaxReceiveCount <= 0 {
		return nil, errors.New("processor: MaxReceiveCount must be the queue's redrive maxReceiveCount")
	}
	defaults.Set(&cfg.LeaseMax, DefaultLeaseMax)
	defaults.Set(&cfg.Concurrency, DefaultConcurrency)
	defaults.Set(&cfg.BackoffBase, DefaultBackoffBase)
	defaults.Set(&cfg.BackoffMax, DefaultBackoffMax)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Instance == "" {
		cfg.Instance = "worker-" + nonce()
	}
	return &Processor{cfg: cfg}, nil
}

// Handle processes a batch and reports the messages to retry. It never fails
// the whole batch for one record.
func (p *Processor) Handle(ctx context.Context, batch events.SQSEvent) (events.SQSEventResponse, error) {
	start := p.cfg.Now()
	groups := groupByObject(batch.Records)
	results := make([]outcome.Outcome, len(batch.Records))
	var reads atomic.Int64
	sem := make(chan struct{}, p.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func(idx []int) {
			defer wg.Done()
			defer func() { <-sem }()
			// Within one object, keep the order of arrival.
			for _, i := range idx {
				results[i] = p.guarded(ctx, batch.Records[i], &reads)
			}
		}(g)
	}
	wg.Wait()

	var resp events.SQSEventResponse
	counts := map[outcome.Outcome]int{}
	for i, r := range results {
		counts[r]++
		if redelivered(r) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: batch.Records[i].MessageId})
		}
	}
	ms := []metrics.Metric{metrics.C("messages", len(batch.Records)), metrics.Ms("batch_duration", p.cfg.Now().Sub(start)),
		metrics.C(MetricAPIReads, int(reads.Load()))}
	attrs := []slog.Attr{slog.Int("batch_size", len(batch.Records)), slog.Int("failures", len(resp.BatchItemFailures))}
	// Every outcome, zero included: each metric gets a data point for
	// every batch.
	for _, o := range outcome.Processor {
		ms = append(ms, metrics.C(string(o), counts[o]))
	}
	attrs = append(attrs, metrics.Attrs(p.cfg.Now(), []metrics.Dim{{Name: "function", Value: "processor"}}, ms...)...)
	p.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "batch", attrs...)
	return resp, nil
}

// redelivered reports whether a message of outcome o is reported as a batch
// item failure, so SQS delivers it again: a retry comes back after its
// backoff, and a dead-lettered one moves to the DLQ on its next receive.
// Every other outcome deletes the message.
func redelivered(o outcome.Outcome) bool {
	return o == outcome.Failed || o == outcome.DeadLettered || o == outcome.LeaseWait
}

// groupByObject returns the indexes of records, grouped by the object their
// event is about, each group in arrival order.
func groupByObject(records []events.SQSMessage) [][]int {
	var groups [][]int
	byObject := map[string]int{}
	for i, m := range records {
		obj := ""
		if p, err := queue.Decode(m.Body); err == nil {
			obj = p.ObjectID
		}
		if obj == "" {
			groups = append(groups, []int{i})
			continue
		}
		if g, ok := byObject[obj]; ok {
			groups[g] = append(groups[g], i)
			continue
		}
		byObject[obj] = len(groups)
		groups = append(groups, []int{i})
	}
	return groups
}

// guarded runs message, turning a panic that escaped it into a retry of
// that message alone: one bad record never takes the batch, or the
// invocation, down with it. Handlers' panics are caught closer, in apply,
// where the failure can still be recorded; this is the last net.
func (p *Processor) guarded(ctx context.Context, m events.SQSMessage, reads *atomic.Int64) (result outcome.Outcome) {
	defer func() {
		if v := recover(); v != nil {
			p.cfg.Logger.ErrorContext(ctx, "processing panicked; the message will be retried",
				slog.String("message_id", m.MessageId), slog.String("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())))
			result = outcome.Failed
		}
	}()
	return p.message(ctx, m, reads)
}

// PanicError is a panic in the mirror or a team's effect, caught while
// processing one event. It is retried like any unclassified failure: a
// fixed deploy can then process the event, and the DLQ bounds the cost.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("processor: a handler panicked: %v", e.Value) }

// message processes one message and returns its outcome. reads counts
// the objects read from the provider's API (nil: not counted).
func (p *Processor) message(ctx context.Context, m events.SQSMessage, reads *atomic.Int64) outcome.Outcome {
	log := p.cfg.Logger.With(slog.String("message_id", m.MessageId))
	ptr, err := queue.Decode(m.Body)
	if err != nil {
		// Not a pointer: nothing can ever process it. It has no record to
		// lose; log it whole (a pointer holds no secret) and drop it.
		log.ErrorContext(ctx, "undecodable message dropped", slog.String("error", err.Error()), slog.String("body", truncate(m.Body, 512)))
		return outcome.BadMessage
	}
	log = log.With(slog.String("event_id", ptr.ID), slog.String("event_type", ptr.Type))
	receives, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])

	now := p.cfg.Now()
	until := now.Add(p.cfg.LeaseMax)
	if dl, ok := ctx.Deadline(); ok && dl.Before(until) {
		until = dl
	}
	owner := leaseOwner(p.cfg.Instance, m.MessageId)
	rec, err := p.cfg.Store.Claim(ctx, ptr.Provider, ptr.ID, owner, now, until)
	var nc *store.NotClaimableError
	switch {
	case errors.As(err, &nc) && nc.Current.Status == event.StatusProcessing && nc.Current.LeaseOwner == owner:
		// Our claim took effect but its answer was lost, and the SDK's retry
		// met our own lease: the claim is ours (owners are unique per claim).
		rec, err = nc.Current, nil
	case errors.As(err, &nc) && nc.Current.Status == event.StatusProcessing && fromMessage(nc.Current.LeaseOwner, m.MessageId):
		// An earlier receive of this very message holds the lease and
		// gave the message back without knowing it (its claim's answer was
		// lost): no other message may exist for the event, so this one
		// comes back when the lease ends, and claims it then.
		log.WarnContext(ctx, "event leased by an earlier receive of this message; back when the lease ends", slog.Time("lease_until", nc.Current.LeaseUntil))
		p.delay(ctx, m, untilSeconds(nc.Current.LeaseUntil.Sub(now)))
		return outcome.LeaseWait
	case errors.As(err, &nc) && nc.Current.Status == event.StatusProcessing:
		// The lease holder claimed from a message of its own, which it
		// keeps until it finishes or gives back: this one is a duplicate.
		log.InfoContext(ctx, "event leased by another worker", slog.Time("lease_until", nc.Current.LeaseUntil))
		return outcome.Leased
	case errors.As(err, &nc) && nc.Current.Status == event.StatusFailedPermanent:
		// Counted again, so its alarm sees it however it got there: a
		// failure recorded by an attempt that never learned so (its
		// answer lost, and its read-back) was counted as a retry.
		log.ErrorContext(ctx, "message for an event that failed permanently", slog.String("last_error", nc.Current.LastError))
		return outcome.FailedPermanent
	case errors.As(err, &nc):
		log.InfoContext(ctx, "duplicate message", slog.String("status", string(nc.Current.Status)))
		return outcome.Duplicate
	case errors.Is(err, store.ErrNotFound):
		log.WarnContext(ctx, "message for an event with no record")
		return outcome.Missing
	case err != nil:
		// The claim may have taken effect unseen (the store read back what
		// it could): the message comes back when the lease it may hold
		// ends, and its next receive finds it (lease_wait) or claims.
		log.ErrorContext(ctx, "claim failed", slog.String("error", err.Error()))
		p.delay(ctx, m, untilSeconds(until.Sub(now)))
		return outcome.Failed
	}

	done, err := p.apply(ctx, rec, owner, reads)
	if err == nil {
		log.InfoContext(ctx, "processed", slog.String("outcome", string(done)), slog.Int("attempts", rec.Attempts))
		return done
	}
	if errors.Is(err, store.ErrLeaseLost) {
		log.WarnContext(ctx, "lease lost before commit; the new holder finishes the event")
		return outcome.LeaseLost
	}
	return p.fail(ctx, log, m, rec, owner, receives, err)
}

// apply reads the payload, plans, runs effects and commits. It returns the
// committed outcome: outcome.Applied, outcome.Superseded, or
// outcome.Backfilled for history a backfill ingested.
func (p *Processor) apply(ctx context.Context, rec event.Record, owner string, reads *atomic.Int64) (outcome.Outcome, error) {
	payload, err := p.payload(ctx, rec)
	if err != nil {
		return "", err
	}
	rec.Payload = payload
	// History ingested by a backfill updates the mirror and runs no
	// effect: the effects of events from before this deployment were the
	// business of whatever handled them then.
	backfill := rec.Source == event.SourceBackfill
	var ev prepared
	if isStripe(rec) && event.IsThin(payload) {
		ev, err = p.thin(ctx, rec, payload, !backfill)
	} else {
		ev = prepared{outcome: outcome.Applied, settleRecord: rec, settlePayload: payload}
		run := !backfill
		if run, err = p.snapshotClaim(ctx, rec, &ev, run); err == nil {
			err = p.handlers(ctx, rec, payload, run, &ev, reads)
		}
	}
	if err != nil {
		return "", err
	}
	if backfill {
		ev.outcome = outcome.Backfilled
	}
	return p.commit(ctx, rec, owner, ev, reads)
}

// commit writes ev with the record's status processed (store.Complete)
// and returns the outcome committed. The transaction's items are the
// mirror's writes, then the effects', then a thin event's twin's record;
// a failed condition among them is resolved and the commit made again:
//
//   - the twin's record exists already, or the twin claim counts a twin
//     committed since it was read: the other of the pair is in hand and
//     has the pair's effect, so the effects are dropped (twinned; a twin
//     claim is committed in its twinned form, prepared.onTwinned);
//   - a mirror write lost to another event of the same second (a tie,
//     mirror.Tie): the API's state replaces it (Settle), once;
//   - a mirror write lost to a later event: the snapshot stays, the
//     effects still happen, exactly once (superseded);
//   - the audit's effects claim covers the event (written after the
//     pre-read): the audit ran the change's effects, so the event's are
//     dropped.
func (p *Processor) commit(ctx context.Context, rec event.Record, owner string, ev prepared, reads *atomic.Int64) (outcome.Outcome, error) {
	backfill := rec.Source == event.SourceBackfill
	writes := ev.plan.Writes
	c := store.Completion{Outcome: ev.outcome, MirrorKey: ev.plan.Key}
	settled := ev.settled
	for {
		c.Writes = slices.Concat(writes, ev.effects, ev.claim, ev.twin)
		err := p.cfg.Store.Complete(ctx, rec, owner, p.cfg.Now(), c)
		var conflict *store.ConflictError
		if !errors.As(err, &conflict) {
			if err != nil {
				return "", err
			}
			return c.Outcome, nil
		}
		switch {
		case len(ev.twin) > 0 && conflict.Index >= len(writes)+len(ev.effects)+len(ev.claim):
			var next []types.TransactWriteItem
			if ev.onTwinned != nil {
				if next, err = ev.onTwinned(); err != nil {
					return "", err
				}
			}
			ev.effects, ev.claim, ev.check, ev.twin = nil, nil, nil, next
			if !backfill {
				c.Outcome = outcome.Twinned
			}
		case len(ev.claim) > 0 && conflict.Index >= len(writes)+len(ev.effects):
			// The audit claimed this change after the pre-read: its
			// repair ran the effects, the event's are dropped.
			ev.effects, ev.claim, ev.check = nil, nil, nil
		case conflict.Index < len(writes):
			if len(ev.effects) > 0 && len(ev.claim) == 0 {
				// The event no longer wins: the audit may have claimed
				// its change since the pre-read.
				ev.claim = ev.check
			}
			settler, ok := p.cfg.Mirror.(Settler)
			if !settled && ok && p.cfg.API != nil && mirror.Tie(rec, ev.plan.Key, conflict.Item) {
				// Another event of this object in the same second was
				// applied: their created times cannot order them, so the
				// API's state replaces it, under the guard (a later event
				// still wins).
				settled = true
				if reads != nil {
					reads.Add(1)
				}
				s, err := settler.Settle(ctx, p.cfg.API, ev.settleRecord, ev.settlePayload)
				if err != nil {
					return "", err
				}
				writes = s.Writes
				continue
			}
			// A newer event of this object was applied first. The
			// snapshot stays; the event's own effects still happen,
			// exactly once.
			if !backfill && c.Outcome == outcome.Applied {
				c.Outcome = outcome.Superseded
			}
			writes = nil
		default:
			return "", err
		}
	}
}

// isStripe reports whether rec is Stripe's: the mirror and the Fetcher
// (Stripe's API) read only Stripe's events. Another provider's type may
// share a Stripe type's name ("invoice.paid" from a Standard Webhooks
// sender) without its shape.
func isStripe(rec event.Record) bool {
	return rec.Provider == "" || rec.Provider == event.ProviderStripe
}

// leaseOwner names a claim's lease: the worker, the message it claims
// from, and a nonce, so that owners are unique per claim and a later
// receive of the same message (SQS keeps a message's id across receives)
// can tell the lease is one of its own earlier receives'.
func leaseOwner(instance, messageID string) string {
	return instance + ":" + messageID + ":" + nonce()
}

// fromMessage reports whether owner is the lease of a claim from the
// message messageID.
func fromMessage(owner, messageID string) bool {
	return messageID != "" && strings.Contains(owner, ":"+messageID+":")
}

func nonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func truncate(v string, max int) string {
	if len(v) <= max {
		return v
	}
	return v[:max] + "…"
}

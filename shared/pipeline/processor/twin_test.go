package processor_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/reconcile"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/queue"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// readRecorder records the reads the processor makes of the events table
// and forwards them: whether each asked for a strongly consistent answer.
type readRecorder struct {
	store.DynamoDB
	mu    sync.Mutex
	reads []string // "BatchGetItem consistent=true", "GetItem consistent=false", ...
	table string
}

func (r *readRecorder) note(op string, consistent *bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, op+" consistent="+map[bool]string{true: "true", false: "false"}[aws.ToBool(consistent)])
}

func (r *readRecorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for table, ka := range in.RequestItems {
		if table == r.table {
			r.note("BatchGetItem", ka.ConsistentRead)
		}
	}
	return r.DynamoDB.BatchGetItem(ctx, in, optFns...)
}

func (r *readRecorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if aws.ToString(in.TableName) == r.table {
		r.note("GetItem", in.ConsistentRead)
	}
	return r.DynamoDB.GetItem(ctx, in, optFns...)
}

// TestAThinEventLooksForItsTwinWithAStronglyConsistentRead: the look for
// a thin event's snapshot twin decides whether its effects make their
// outside calls. An eventually consistent read can miss a twin committed
// a moment before, and the effect's call would be made a second time
// before the commit's condition drops it: every read the thin event makes
// of the events table is strongly consistent, and the twin processed
// first still leaves the thin event twinned, with no effect call.
func TestAThinEventLooksForItsTwinWithAStronglyConsistentRead(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	sub, cus := "sub_twin_consistent", "cus_twin_consistent"
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "active")); err != nil {
		t.Fatal(err)
	}
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	snap := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
		ID: "evt_consistent_snapshot", ObjectID: sub, Customer: cus, Created: 1796126400}))
	handleOne(t, p, snap, 1)
	r := e.storeThin(t, fake, thinEvent{ID: "evt_consistent_thin", Type: "v1.customer.subscription.updated", Created: "2026-12-01T12:00:00Z",
		Snapshot: "evt_consistent_snapshot", Related: subscriptionRef(sub)})

	rec := &readRecorder{DynamoDB: e.stack.DynamoDB, table: e.events.Table}
	handleOne(t, e.processorAt(t, rec, nil, withThin(t, fake)), r, 1)
	sawBatch := false
	for _, read := range rec.reads {
		if read == "BatchGetItem consistent=true" {
			sawBatch = true
		}
		if read != "BatchGetItem consistent=true" && read != "GetItem consistent=true" {
			t.Errorf("a read of the events table: %s; want every read strongly consistent", read)
		}
	}
	if !sawBatch {
		t.Errorf("reads %v; want the look for the twin among them", rec.reads)
	}
	if got := e.record(t, r.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Twinned {
		t.Errorf("the thin event: %s %s; want processed, twinned", got.Status, got.Outcome)
	}
	if calls, commits := len(e.effect.keys["evt_consistent_snapshot"]), e.commits(t, "evt_consistent_snapshot"); calls != 1 || commits != 1 {
		t.Errorf("the pair's effect: %d calls, %d commits; want 1 and 1", calls, commits)
	}
}

// storeAs stores body's record as source ingests it (not enqueued); a
// thin event's full form goes to the stand-in too.
func (e *env) storeAs(t *testing.T, fake *stripefake.Server, body []byte, source event.Source) event.Record {
	t.Helper()
	envl, err := event.DecodeAnyEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	if event.IsThin(body) {
		if err := fake.AddV2(envl.Account, body); err != nil {
			t.Fatal(err)
		}
	}
	r := event.NewRecord(event.ProviderStripe, envl, body, ingest.Hash(body), source, event.StatusReceived, time.Now())
	if _, err := e.events.Create(context.Background(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAThinEventWithoutItsTwinsNameHasOneEffectWithTheTwinTheReconcilerFinds:
// an event destination that sends thin events only sends them without
// snapshot_event; Stripe's v1 Events API still lists each change's
// snapshot event, which the reconciler finds missing and ingests. The
// pair is one change: one effect, whichever of the two is processed
// first (the thin event delayed by retries, the reconciler first), and
// the second twinned.
func TestAThinEventWithoutItsTwinsNameHasOneEffectWithTheTwinTheReconcilerFinds(t *testing.T) {
	for _, thinFirst := range []bool{true, false} {
		name := "thin first"
		if !thinFirst {
			name = "snapshot first"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			fake := stripefake.New()
			defer fake.Close()
			p := e.processorAt(t, nil, nil, withThin(t, fake))
			acct, sub, cus := "acct_solo", "sub_solo", "cus_solo"
			o := stripefixture.Options{ID: "evt_solo_thin", ObjectID: sub, Customer: cus, Created: 1796126400, Status: "active", Account: acct}
			thinBody, obj, err := stripefixture.Thin("customer.subscription.updated", o, stripefixture.ThinOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := fake.PutObject(acct, obj); err != nil {
				t.Fatal(err)
			}
			o.ID = "evt_solo_snapshot"
			snapBody := build(t, "customer.subscription.updated", o)

			ids := []string{"evt_solo_thin", "evt_solo_snapshot"}
			bodies := [][]byte{thinBody, snapBody}
			sources := []event.Source{event.SourceWebhook, event.SourceReconciler}
			if !thinFirst {
				ids[0], ids[1] = ids[1], ids[0]
				bodies[0], bodies[1] = bodies[1], bodies[0]
				sources[0], sources[1] = sources[1], sources[0]
			}
			for i := range ids {
				handleOne(t, p, e.storeAs(t, fake, bodies[i], sources[i]), 1)
			}
			if got := e.record(t, ids[0]); got.Status != event.StatusProcessed || got.Outcome != outcome.Applied {
				t.Errorf("the first, %s: %s %s; want processed, applied", ids[0], got.Status, got.Outcome)
			}
			if got := e.record(t, ids[1]); got.Status != event.StatusProcessed || got.Outcome != outcome.Twinned {
				t.Errorf("the second, %s: %s %s; want processed, twinned", ids[1], got.Status, got.Outcome)
			}
			// One business effect: the first's, called once and
			// committed once; the second's never called.
			e.exactlyOnce(t, ids[0])
			if calls, commits := e.effect.callsOf(ids[1]), e.commits(t, ids[1]); calls != 0 || commits != 0 {
				t.Errorf("the second's effect: %d calls, %d commits; want none", calls, commits)
			}
			if st, _ := e.status(t, mirror.Key(acct, sub)); st != "active" {
				t.Errorf("snapshot: got %q, want active", st)
			}
		})
	}
}

// staleClaim answers a read of a twin claim with claim, as a read made
// just before another event's commit would: the commit's condition must
// then decide.
type staleClaim struct {
	*store.Events
	claim store.TwinClaim
}

func (s staleClaim) ReadTwinClaim(context.Context, store.TwinKey) (store.TwinClaim, error) {
	return s.claim, nil
}

// withStaleClaim makes the processor's store read claim for every twin
// claim.
func withStaleClaim(claim store.TwinClaim) func(*processor.Config) {
	return func(cfg *processor.Config) {
		cfg.Store = staleClaim{Events: cfg.Store.(*store.Events), claim: claim}
	}
}

// TestATwinClaimRacedIsDecidedByTheCommit: the claim read before the
// effects is only a way to spare outside calls; the commit's condition
// decides. A thin event that read no claim while its twin was committing
// runs its effect's call, then commits twinned, its effect's writes
// dropped; a thin event that read its change's twin unmatched while
// another thin event of the same object, type and second was being
// paired with it commits nothing, is retried, and its retry runs the
// effect of its own change, once.
func TestATwinClaimRacedIsDecidedByTheCommit(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	sub, cus := "sub_claim_race", "cus_claim_race"
	o := stripefixture.Options{ID: "evt_race_thin_1", ObjectID: sub, Customer: cus, Created: 1796126400, Status: "active"}
	thin1, obj, err := stripefixture.Thin("customer.subscription.updated", o, stripefixture.ThinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.PutObject("", obj); err != nil {
		t.Fatal(err)
	}
	o.ID = "evt_race_snapshot_1"
	snap1 := build(t, "customer.subscription.updated", o)
	o.ID = "evt_race_thin_2"
	thin2, _, err := stripefixture.Thin("customer.subscription.updated", o, stripefixture.ThinOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The snapshot first; the thin event reads no claim.
	handleOne(t, p, e.storeAs(t, fake, snap1, event.SourceReconciler), 1)
	r1 := e.storeAs(t, fake, thin1, event.SourceWebhook)
	handleOne(t, e.processorAt(t, nil, nil, withThin(t, fake), withStaleClaim(store.TwinClaim{})), r1, 1)
	if got := e.record(t, r1.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Twinned {
		t.Errorf("the thin event that read no claim: %s %s; want processed, twinned", got.Status, got.Outcome)
	}
	if got := e.commits(t, r1.ID); got != 0 {
		t.Errorf("its effect committed %d times, want 0 (the snapshot's is the pair's)", got)
	}

	// A second change of the same second: its thin event reads the claim
	// as it stood before the first thin event's commit (one snapshot
	// unmatched).
	r2 := e.storeAs(t, fake, thin2, event.SourceWebhook)
	stale := e.processorAt(t, nil, nil, withThin(t, fake), withStaleClaim(store.TwinClaim{Thin: 0, Snapshot: 1}))
	resp, err := stale.Handle(context.Background(), batch(message(r2, 1)))
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("the thin event twinned to a twin already paired: %v %+v; want it retried", err, resp)
	}
	if got := e.record(t, r2.ID); got.Status != event.StatusFailed {
		t.Errorf("after its first attempt: %s; want failed (retryable)", got.Status)
	}
	if got := e.effect.callsOf(r2.ID); got != 0 {
		t.Errorf("its effect called %d times on the first attempt, want 0", got)
	}
	handleOne(t, p, r2, 2)
	if got := e.record(t, r2.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Applied {
		t.Errorf("its retry: %s %s; want processed, applied", got.Status, got.Outcome)
	}
	e.exactlyOnce(t, r2.ID)
	if got := e.commits(t, "evt_race_snapshot_1"); got != 1 {
		t.Errorf("the first change's effect committed %d times, want 1", got)
	}
}

// TestTheReconcilerFindsTheTwinOfAThinEventThatNamesNoneAndItRunsNoEffect:
// through the real reconciler: a thin event naming no twin is processed;
// Stripe's v1 Events API lists the snapshot event of the same change,
// which the reconciler finds missing and ingests; processed, it is
// twinned, and the change has had one effect.
func TestTheReconcilerFindsTheTwinOfAThinEventThatNamesNoneAndItRunsNoEffect(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	ctx := context.Background()
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	sub, cus := "sub_found_twin", "cus_found_twin"
	created := time.Now().Add(-time.Hour).Unix()
	o := stripefixture.Options{ID: "evt_found_thin", ObjectID: sub, Customer: cus, Created: created, Status: "active"}
	thinBody, obj, err := stripefixture.Thin("customer.subscription.updated", o, stripefixture.ThinOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.PutObject("", obj); err != nil {
		t.Fatal(err)
	}
	handleOne(t, p, e.storeAs(t, fake, thinBody, event.SourceWebhook), 1)
	o.ID = "evt_found_snapshot"
	if err := fake.Add(build(t, "customer.subscription.updated", o)); err != nil {
		t.Fatal(err)
	}

	api, err := stripeapi.New(stripeapi.Config{Key: "sk_test_found", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconcile.New(reconcile.Config{
		Stripe: api, Events: e.events, Checkpoints: &store.Checkpoints{DB: e.stack.DynamoDB, Table: e.events.Table},
		Ingester: e.ingester, Queue: e.ingester.Queue.(*queue.Queue), Types: []string{"customer.subscription.updated"},
		FirstLookback: reconcile.Retention, Logger: slog.New(slog.NewJSONHandler(e.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx, reconcile.RunOptions{Since: 24 * time.Hour})
	if err != nil || res.Missing != 1 {
		t.Fatalf("reconciler run: %+v %v; want the snapshot twin found missing", res, err)
	}
	twin := e.record(t, "evt_found_snapshot")
	if twin.Source != event.SourceReconciler {
		t.Fatalf("the twin's record: source %s, want reconciler", twin.Source)
	}
	handleOne(t, p, twin, 1)
	if got := e.record(t, twin.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Twinned {
		t.Errorf("the twin: %s %s; want processed, twinned", got.Status, got.Outcome)
	}
	e.exactlyOnce(t, "evt_found_thin")
	if calls, commits := e.effect.callsOf(twin.ID), e.commits(t, twin.ID); calls != 0 || commits != 0 {
		t.Errorf("the twin's effect: %d calls, %d commits; want none", calls, commits)
	}
}

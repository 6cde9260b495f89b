package processor_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/ingest"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/processor"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

// withThin wires the processor as processorboot does with an API key:
// thin events read from the Stripe stand-in, ties settled from it.
func withThin(t *testing.T, fake *stripefake.Server) func(*processor.Config) {
	t.Helper()
	c, err := stripeapi.New(stripeapi.Config{Key: "rk_test_thin", BaseURL: fake.URL, MaxNetworkRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	settle := withAPI(t, fake)
	return func(cfg *processor.Config) {
		settle(cfg)
		cfg.Thin = c
	}
}

// thinEvent is a thin event as an event destination delivers it, and as
// GET /v2/core/events/{id} serves it (the stand-in's copy).
type thinEvent struct {
	ID, Type, Created, Context, Snapshot string
	Related                              event.RelatedObject
}

func (te thinEvent) body(t *testing.T) []byte {
	t.Helper()
	m := map[string]any{
		"id": te.ID, "object": event.ObjectThinEvent, "type": te.Type, "created": te.Created, "livemode": false,
		"related_object": te.Related, "reason": map[string]any{"type": "request"},
	}
	if te.Context != "" {
		m["context"] = te.Context
	}
	if te.Snapshot != "" {
		m["snapshot_event"] = te.Snapshot
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storeThin stores a thin event's record as the receiver does (not
// enqueued) and gives the stand-in its full form.
func (e *env) storeThin(t *testing.T, fake *stripefake.Server, te thinEvent) event.Record {
	t.Helper()
	body := te.body(t)
	if err := fake.AddV2(te.Context, body); err != nil {
		t.Fatal(err)
	}
	envl, err := event.DecodeAnyEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	r := event.NewRecord(event.ProviderStripe, envl, body, ingest.Hash(body), event.SourceWebhook, event.StatusReceived, time.Now())
	if _, err := e.events.Create(context.Background(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func subscriptionRef(id string) event.RelatedObject {
	return event.RelatedObject{ID: id, Type: "subscription", URL: "/v1/subscriptions/" + id}
}

// status reads the mirror's snapshot of key: its status and why it is
// the API's state.
func (e *env) status(t *testing.T, key string) (status, settledBy string) {
	t.Helper()
	snap, err := e.reader.Object(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(snap.Data, &data)
	return data.Status, snap.SettledBy
}

func handleOne(t *testing.T, p *processor.Processor, r event.Record, receives int) {
	t.Helper()
	resp, err := p.Handle(context.Background(), batch(message(r, receives)))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("event %s: got %v %+v", r.ID, err, resp)
	}
}

// TestAThinSubscriptionUpdateIsFetchedAndApplied: a thin
// v1.customer.subscription.updated carries no state; the processor reads
// the event and the subscription it names, and the mirror and the
// entitlement end as the snapshot event's would; the team's effect sees
// the snapshot form.
func TestAThinSubscriptionUpdateIsFetchedAndApplied(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	ctx := context.Background()
	sub, cus := "sub_thin", "cus_thin"
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "active")); err != nil {
		t.Fatal(err)
	}
	r := e.storeThin(t, fake, thinEvent{ID: "evt_thin_1", Type: "v1.customer.subscription.updated", Created: "2026-12-01T12:00:00.500Z", Related: subscriptionRef(sub)})
	handleOne(t, p, r, 1)

	if st, by := e.status(t, sub); st != "active" || by != mirror.SourceThin {
		t.Errorf("snapshot: got %q settled by %q, want active, thin", st, by)
	}
	ent, err := e.reader.Entitlement(ctx, cus)
	if err != nil || !ent.Active {
		t.Errorf("entitlement: got %+v %v, want active", ent, err)
	}
	if got := e.record(t, r.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Applied {
		t.Errorf("record: %s %s, want processed, applied", got.Status, got.Outcome)
	}
	e.exactlyOnce(t, r.ID)
	var paths []string
	for _, q := range fake.Requests() {
		paths = append(paths, q.Method+" "+q.Path)
	}
	if want := []string{"GET /v2/core/events/evt_thin_1", "GET /v1/subscriptions/" + sub}; !slices.Equal(paths, want) {
		t.Errorf("API requests: got %v, want %v", paths, want)
	}
}

// TestAConnectedAccountsThinEventIsReadAsItsAccount: a thin event's
// account is its context; the event is read with Stripe-Context, the
// object with Stripe-Account, into that account's mirror and
// entitlement, never the platform's.
func TestAConnectedAccountsThinEventIsReadAsItsAccount(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	ctx := context.Background()
	acct, sub, cus := "acct_thin", "sub_thin_connect", "cus_thin_connect"
	if err := fake.PutObject(acct, subscriptionObject(t, sub, cus, "active")); err != nil {
		t.Fatal(err)
	}
	r := e.storeThin(t, fake, thinEvent{ID: "evt_thin_connect", Type: "v1.customer.subscription.created", Created: "2026-12-01T12:00:00Z",
		Context: acct, Related: subscriptionRef(sub)})
	if r.Account != acct {
		t.Fatalf("record account: got %q, want %q", r.Account, acct)
	}
	handleOne(t, p, r, 1)
	if st, _ := e.status(t, mirror.Key(acct, sub)); st != "active" {
		t.Errorf("the account's snapshot: got %q, want active", st)
	}
	if ent, err := e.reader.Entitlement(ctx, mirror.Key(acct, cus)); err != nil || !ent.Active {
		t.Errorf("the account's entitlement: got %+v %v, want active", ent, err)
	}
	if ent, err := e.reader.Entitlement(ctx, cus); err != nil || ent.Active {
		t.Errorf("the platform's entitlement of the same id: got %+v %v, want none", ent, err)
	}
	for _, q := range fake.Requests() {
		if q.Path == "/v2/core/events/evt_thin_connect" && q.Context != acct || q.Path == "/v1/subscriptions/"+sub && q.Account != acct {
			t.Errorf("%s: Stripe-Context %q, Stripe-Account %q; want the account %s", q.Path, q.Context, q.Account, acct)
		}
	}
}

// TestThinAndSnapshotTwinsHaveOneEffectInEitherOrder: during a migration
// Stripe sends a change as a snapshot event and as a thin event naming
// it (snapshot_event). Whichever is processed first has the business
// effect; the other updates the mirror only, and the effect's writes
// commit once, under the snapshot's idempotency key.
func TestThinAndSnapshotTwinsHaveOneEffectInEitherOrder(t *testing.T) {
	for _, thinFirst := range []bool{false, true} {
		name := "snapshot first"
		if thinFirst {
			name = "thin first"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			fake := stripefake.New()
			defer fake.Close()
			p := e.processorAt(t, nil, nil, withThin(t, fake))
			sub, cus := "sub_twin", "cus_twin"
			if err := fake.PutObject("", subscriptionObject(t, sub, cus, "past_due")); err != nil {
				t.Fatal(err)
			}
			// The same second at Stripe's v1 resolution: 12:00:00 and
			// 12:00:00.500.
			created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			snapBody := build(t, "customer.subscription.updated", stripefixture.Options{
				ID: "evt_twin_snapshot", ObjectID: sub, Customer: cus, Created: created.Unix(), Status: "past_due"})
			te := thinEvent{ID: "evt_twin_thin", Type: "v1.customer.subscription.updated", Created: "2026-12-01T12:00:00.500Z",
				Snapshot: "evt_twin_snapshot", Related: subscriptionRef(sub)}

			var snapOutcome, thinOutcome outcome.Outcome
			if thinFirst {
				r := e.storeThin(t, fake, te)
				handleOne(t, p, r, 1)
				thinOutcome = e.record(t, r.ID).Outcome
				// The snapshot twin's delivery finds its record made by
				// the thin event's commit.
				if _, got := e.ingest(t, snapBody); got != outcome.Duplicate {
					t.Errorf("the snapshot's delivery: got %s, want duplicate", got)
				}
				snap := e.record(t, "evt_twin_snapshot")
				if snap.Status != event.StatusProcessed || snap.Source != event.SourceTwin || snap.Account != "" || snap.ObjectID != sub {
					t.Errorf("the snapshot's record: %+v; want processed, source twin, of %s", snap, sub)
				}
				snapOutcome = snap.Outcome
			} else {
				s := e.store(t, snapBody)
				handleOne(t, p, s, 1)
				snapOutcome = e.record(t, s.ID).Outcome
				r := e.storeThin(t, fake, te)
				handleOne(t, p, r, 1)
				thinOutcome = e.record(t, r.ID).Outcome
			}
			wantSnap, wantThin := outcome.Applied, outcome.Twinned
			if thinFirst {
				wantSnap, wantThin = outcome.Twinned, outcome.Applied
			}
			if snapOutcome != wantSnap || thinOutcome != wantThin {
				t.Errorf("outcomes: snapshot %s, thin %s; want %s, %s", snapOutcome, thinOutcome, wantSnap, wantThin)
			}
			// One business effect, the snapshot's: its write committed
			// once, and every call made under its idempotency key.
			if got := e.commits(t, "evt_twin_snapshot"); got != 1 {
				t.Errorf("the pair's effect committed %d times, want 1", got)
			}
			if got := e.commits(t, "evt_twin_thin"); got != 0 {
				t.Errorf("an effect of the thin event's own committed %d times, want 0", got)
			}
			for _, k := range e.effect.keys["evt_twin_snapshot"] {
				if k != "evt_twin_snapshot:count" {
					t.Errorf("idempotency key %q, want the snapshot's", k)
				}
			}
			if st, _ := e.status(t, sub); st != "past_due" {
				t.Errorf("snapshot: got %q, want past_due", st)
			}
		})
	}
}

// TestAHealthEventRepairsItsObject: Stripe failed to generate an event
// for a subscription (it was canceled, and the mirror still says active);
// event_generation_failure.resolved names it, and the processor repairs
// the mirror from the API, runs no effect, and counts it.
func TestAHealthEventRepairsItsObject(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	ctx := context.Background()
	sub, cus := "sub_health", "cus_health"
	handleOne(t, p, e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{
		ID: "evt_health_before", ObjectID: sub, Customer: cus, Created: 1764590400, Status: "active"})), 1)
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "canceled")); err != nil {
		t.Fatal(err)
	}
	r := e.storeThin(t, fake, thinEvent{ID: "evt_health", Type: event.TypeEventGenerationFailureResolved, Created: "2026-12-01T13:00:00Z",
		Related: subscriptionRef(sub)})
	handleOne(t, p, r, 1)

	if st, by := e.status(t, sub); st != "canceled" || by != mirror.SourceHealth {
		t.Errorf("snapshot: got %q settled by %q, want canceled, health", st, by)
	}
	if ent, err := e.reader.Entitlement(ctx, cus); err != nil || ent.Active {
		t.Errorf("entitlement: got %+v %v, want inactive", ent, err)
	}
	if got := e.record(t, r.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Repaired {
		t.Errorf("record: %s %s, want processed, repaired", got.Status, got.Outcome)
	}
	if got := e.effect.callsOf(r.ID); got != 0 {
		t.Errorf("effect calls for the health event: %d, want 0", got)
	}
	repaired := 0
	for _, l := range e.logs.lines(map[string]string{"msg": "batch"}) {
		if v, ok := l[string(outcome.Repaired)].(float64); ok {
			repaired += int(v)
		}
	}
	if repaired != 1 {
		t.Errorf("metric %s: %d, want 1", outcome.Repaired, repaired)
	}
}

// TestAThinEventWhoseFetchFailsIsRetried: the API down while a thin event
// is read fails the event retryably; nothing is guessed, and the retry
// applies it.
func TestAThinEventWhoseFetchFailsIsRetried(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	ctx := context.Background()
	sub, cus := "sub_thin_retry", "cus_thin_retry"
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "active")); err != nil {
		t.Fatal(err)
	}
	r := e.storeThin(t, fake, thinEvent{ID: "evt_thin_retry", Type: "v1.customer.subscription.updated", Created: "2026-12-01T12:00:00Z",
		Related: subscriptionRef(sub)})
	for _, step := range []struct {
		fail int
		want event.Status
	}{{1, event.StatusFailed}, {0, event.StatusProcessed}} {
		// The second request (the object's) fails on the first attempt.
		fake.ResetRequests()
		if step.fail > 0 {
			fake.OnRequest(func(q *http.Request) {
				if q.URL.Path == "/v1/subscriptions/"+sub {
					fake.FailNext(1, http.StatusServiceUnavailable)
				}
			})
		} else {
			fake.OnRequest(nil)
		}
		resp, err := p.Handle(ctx, batch(message(r, 1+len(fake.Requests()))))
		if err != nil {
			t.Fatal(err)
		}
		if got := e.record(t, r.ID); got.Status != step.want {
			t.Errorf("after the attempt (fail %d): %s, want %s (%+v)", step.fail, got.Status, step.want, resp)
		}
	}
	if st, _ := e.status(t, sub); st != "active" {
		t.Errorf("snapshot: got %q, want active", st)
	}
	e.exactlyOnce(t, r.ID)
}

// TestAThinEventStoredWithoutItsPayloadIsReadFromTheAPI: a thin event's
// record whose payload item was never written (its receiver died between
// the two puts) is not in the API v1 Events API; the processor reads it
// from GET /v2/core/events/{id}, which serves it as it was delivered, and
// applies it, instead of failing it for good on the v1 event's 404.
func TestAThinEventStoredWithoutItsPayloadIsReadFromTheAPI(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	ctx := context.Background()
	sub, cus := "sub_thin_half", "cus_thin_half"
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "active")); err != nil {
		t.Fatal(err)
	}
	body := thinEvent{ID: "evt_thin_half", Type: "v1.customer.subscription.updated", Created: "2026-12-01T12:00:00Z", Related: subscriptionRef(sub)}.body(t)
	if err := fake.AddV2("", body); err != nil {
		t.Fatal(err)
	}
	envl, err := event.DecodeAnyEnvelope(body)
	if err != nil {
		t.Fatal(err)
	}
	r := event.NewRecord(event.ProviderStripe, envl, body, ingest.Hash(body), event.SourceWebhook, event.StatusReceived, time.Now())
	half := &store.Events{DB: &recordOnly{DynamoDB: e.stack.DynamoDB}, Table: e.events.Table}
	if _, err := half.Create(ctx, &r); err == nil {
		t.Fatal("Create: got nil error, want the lost payload put")
	}
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	handleOne(t, p, r, 1)
	if got := e.record(t, r.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Applied {
		t.Errorf("record: %s %s (%s), want processed, applied", got.Status, got.Outcome, got.LastError)
	}
	if st, by := e.status(t, sub); st != "active" || by != mirror.SourceThin {
		t.Errorf("snapshot: got %q settled by %q, want active, thin", st, by)
	}
	var paths []string
	for _, q := range fake.Requests() {
		paths = append(paths, q.Method+" "+q.Path)
	}
	if want := []string{"GET /v2/core/events/evt_thin_half", "GET /v2/core/events/evt_thin_half", "GET /v1/subscriptions/" + sub}; !slices.Equal(paths, want) {
		t.Errorf("API requests: got %v, want %v (the payload, then the event and its object)", paths, want)
	}
}

// noBatchGet fails every BatchGetItem: the look for a thin event's twin.
type noBatchGet struct{ store.DynamoDB }

func (noBatchGet) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return nil, errors.New("throttled")
}

// TestAThinEventThatCannotLookForItsTwinIsRetried: the snapshot twin is
// processed; the thin event's look for it fails, so the event fails
// retryably before any effect is called, and its retry finds the twin
// and runs none: the pair's effect stays one call, one commit.
func TestAThinEventThatCannotLookForItsTwinIsRetried(t *testing.T) {
	e := newEnv(t, nil)
	fake := stripefake.New()
	defer fake.Close()
	sub, cus := "sub_twin_look", "cus_twin_look"
	if err := fake.PutObject("", subscriptionObject(t, sub, cus, "active")); err != nil {
		t.Fatal(err)
	}
	snap := e.store(t, build(t, "customer.subscription.updated", stripefixture.Options{ID: "evt_look_snapshot", ObjectID: sub, Customer: cus, Created: 1796126400}))
	p := e.processorAt(t, nil, nil, withThin(t, fake))
	handleOne(t, p, snap, 1)
	r := e.storeThin(t, fake, thinEvent{ID: "evt_look_thin", Type: "v1.customer.subscription.updated", Created: "2026-12-01T12:00:00Z",
		Snapshot: "evt_look_snapshot", Related: subscriptionRef(sub)})

	blind := e.processorAt(t, noBatchGet{e.stack.DynamoDB}, nil, withThin(t, fake))
	resp, err := blind.Handle(context.Background(), batch(message(r, 1)))
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("the look failing: %v %+v; want the message retried", err, resp)
	}
	if got := e.record(t, r.ID); got.Status != event.StatusFailed {
		t.Errorf("the thin event: %s; want failed (retryable)", got.Status)
	}
	if got := len(e.effect.keys["evt_look_snapshot"]); got != 1 {
		t.Errorf("the pair's effect called %d times, want 1 (the snapshot's)", got)
	}

	handleOne(t, p, r, 2)
	if got := e.record(t, r.ID); got.Status != event.StatusProcessed || got.Outcome != outcome.Twinned {
		t.Errorf("the retry: %s %s; want processed, twinned", got.Status, got.Outcome)
	}
	if calls, commits := len(e.effect.keys["evt_look_snapshot"]), e.commits(t, "evt_look_snapshot"); calls != 1 || commits != 1 {
		t.Errorf("the pair's effect: %d calls, %d commits; want 1 and 1", calls, commits)
	}
}

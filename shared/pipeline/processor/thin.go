package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// ThinReader reads what a Stripe thin event names from Stripe's API, with
// the read-only key; *stripeapi.Client implements it. account is the
// event's context (Stripe Connect), "" for the platform's own. Errors
// keep their class (fault): a fetch that fails for a reason that passes
// fails the event retryably, never settles it on a guess.
type ThinReader interface {
	// ThinEvent reads the event whole (GET /v2/core/events/{id}).
	ThinEvent(ctx context.Context, account, id string) ([]byte, error)
	// Related reads the object at a thin event's related_object.url.
	Related(ctx context.Context, account, url, wantID string) (json.RawMessage, error)
}

// TwinChecker says which of ids have a record
// (store.Events.ExistingConsistent, a strongly consistent read of keys):
// a thin event asks it whether its snapshot twin is in hand before
// running effects. Strongly consistent, for an eventually consistent read
// can miss a twin committed a moment before, and the effects would make
// their outside calls a second time before the commit's condition drops
// them. A Store that does not implement it leaves the question to the
// commit's condition.
type TwinChecker interface {
	ExistingConsistent(ctx context.Context, provider string, ids []string) (map[string]bool, error)
}

// StatePlanner plans writing an object read from the provider's API under
// the ordering guard (mirror.Mirror.PlanState): a Mirror that implements
// it applies thin events' objects.
type StatePlanner interface {
	PlanState(obj json.RawMessage, v mirror.Version) (mirror.Plan, error)
}

var _ StatePlanner = (*mirror.Mirror)(nil)

// TwinWriter makes the record of a thin event's snapshot twin in the
// thin event's commit (store.Events.TwinWrite); *store.Events implements
// it.
type TwinWriter interface {
	TwinWrite(thin event.Record, twin, twinType string, now time.Time) types.TransactWriteItem
}

// TwinClaimer counts the events of one change that cannot name each
// other (store.TwinKey: a thin event without snapshot_event, and the
// snapshot event of the same change the reconciler found missing), so
// the pair has one effect; *store.Events implements it. An event reads
// the claim (strongly consistent) before its effects make any outside
// call, and commits its count with the decision it made, which the
// write's condition holds it to. A Store that does not implement it runs
// both events' effects.
type TwinClaimer interface {
	ReadTwinClaim(ctx context.Context, k store.TwinKey) (store.TwinClaim, error)
	TwinClaimWrite(k store.TwinKey, side store.TwinSide, twinned bool, id string) types.TransactWriteItem
}

var _ TwinClaimer = (*store.Events)(nil)

// ErrTwinClaimMoved: an event that found its twin had the pair's effect
// (it ran none) lost its commit to another event of its own side, which
// was paired with that twin first: its change's effect is still owed,
// and the event is retried to run it.
var ErrTwinClaimMoved = errors.New("processor: another event was paired with the twin this event found; retried to run its effects")

// ErrNoThinReader: a thin event met a processor with no API to read what
// it names. It is retried: a deployment configured with the API key
// processes it.
var ErrNoThinReader = errors.New("processor: a thin event needs Stripe's API (STRIPE_API_KEY) to read what it names")

// prepared is an event made ready to commit: the mirror's plan, the
// team's effects, the write of a thin event's snapshot twin, the outcome
// of a clean commit, and the record and payload a tie is settled from
// (mirror.Mirror.Settle).
type prepared struct {
	plan    mirror.Plan
	effects []types.TransactWriteItem
	twin    []types.TransactWriteItem
	// onTwinned returns what replaces twin when its condition fails (the
	// other of the pair had the effect): nil for a twin's record, the
	// claim's twinned form for a twin claim (claim), whose own failure
	// is ErrTwinClaimMoved.
	onTwinned     func() ([]types.TransactWriteItem, error)
	outcome       outcome.Outcome
	settleRecord  event.Record
	settlePayload []byte
	// claim is the commit's check that no effects claim of the audit
	// covers the event (mirror.Mirror.ClaimCheck), when included; check
	// is that check, included once the mirror says the event does not
	// win; settled says the pre-read settled a tie already
	// (Config.Preread).
	claim, check []types.TransactWriteItem
	settled      bool
}

// thin prepares a Stripe thin event: it reads the event whole
// (ThinReader.ThinEvent) and the object it is about (its
// related_object.url), as the event's account, then plans what its
// snapshot twin would: the object applied to the mirror under the
// ordering guard (mirror.SourceThin: read after the event, it replaces
// states of the event's second or earlier), and the team's effects of
// the snapshot type run on the snapshot form of the event
// (event.Thin.Snapshot). A thin event naming its snapshot twin runs the
// effects as the twin (its id, so their idempotency keys are the twin's)
// and commits the twin's record with them (TwinWriter): one business
// effect for the pair. A thin event naming none runs them under its own
// id, paired by a twin claim (TwinClaimer, one strongly consistent read
// before the effects and a write in the commit) with the snapshot event
// of the same change the reconciler ingests (snapshotClaim), which no
// record of the thin event's keeps out. An
// event_generation_failure.resolved event repairs the object it names
// and runs no effect.
func (p *Processor) thin(ctx context.Context, rec event.Record, payload []byte, runEffects bool) (prepared, error) {
	t, full, err := p.readThin(ctx, rec, payload)
	if err != nil {
		return prepared{}, err
	}
	health := t.Type == event.TypeEventGenerationFailureResolved
	snapshotType, v1 := event.SnapshotType(t.Type)
	out := prepared{outcome: outcome.Applied, settleRecord: rec, settlePayload: payload}
	if health {
		out.outcome = outcome.Repaired
	}
	if t.Related.URL == "" || (!v1 && !health) {
		// Nothing to read: an API v2 event of its own, whose effects (if
		// any) read the event as the API serves it.
		if runEffects && !health {
			out.effects, err = p.effects(ctx, rec, full)
		}
		return out, err
	}
	obj, err := p.cfg.Thin.Related(ctx, t.Context, t.Related.URL, t.Related.ID)
	if err != nil {
		return prepared{}, fmt.Errorf("processor: thin event %s: fetch its %s %s: %w", rec.ID, t.Related.Type, t.Related.ID, err)
	}
	if err := p.planThinState(rec, t, obj, snapshotType, health, &out); err != nil {
		return prepared{}, err
	}
	if health {
		return out, nil
	}
	effectID := rec.ID
	if t.SnapshotEvent != "" {
		effectID = t.SnapshotEvent
	}
	snapshot, err := t.Snapshot(effectID, obj)
	if err != nil {
		return prepared{}, &fault.Permanent{Err: err}
	}
	// A tie is settled from the snapshot form, as the event's own.
	out.settleRecord = rec
	out.settleRecord.Type = snapshotType
	out.settlePayload = snapshot
	// The effects see the event as its snapshot twin: its id, type and
	// body.
	as := rec
	as.ID, as.Type, as.Payload = effectID, snapshotType, snapshot
	if runEffects, err = p.pairTwin(ctx, rec, t, snapshotType, runEffects, &out); err != nil {
		return prepared{}, err
	}
	if runEffects {
		if out.effects, err = p.effects(ctx, as, snapshot); err != nil {
			return prepared{}, err
		}
	}
	return out, nil
}

// readThin decodes a delivered thin event and reads it whole as the API
// serves it (ThinReader.ThinEvent), of the delivery's account; what the
// API's leaves out of the related object and the snapshot twin comes from
// the delivery. It returns the event and the API's body.
func (p *Processor) readThin(ctx context.Context, rec event.Record, payload []byte) (event.Thin, []byte, error) {
	if p.cfg.Thin == nil {
		return event.Thin{}, nil, fmt.Errorf("event %s: %w", rec.ID, ErrNoThinReader)
	}
	delivered, err := event.DecodeThin(payload)
	if err != nil {
		return event.Thin{}, nil, &fault.Permanent{Err: fmt.Errorf("processor: thin event %s: %w", rec.ID, err)}
	}
	full, err := p.cfg.Thin.ThinEvent(ctx, delivered.Context, rec.ID)
	if err != nil {
		return event.Thin{}, nil, fmt.Errorf("processor: fetch thin event %s: %w", rec.ID, err)
	}
	t, err := event.DecodeThin(full)
	if err != nil {
		return event.Thin{}, nil, &fault.Permanent{Err: fmt.Errorf("processor: thin event %s as the API serves it: %w", rec.ID, err)}
	}
	if t.Context != delivered.Context {
		return event.Thin{}, nil, &fault.Permanent{Err: fmt.Errorf("processor: thin event %s: the API's event is of account %q, the delivery's of %q", rec.ID, t.Context, delivered.Context)}
	}
	if t.Related.ID == "" {
		t.Related = delivered.Related
	}
	if t.SnapshotEvent == "" {
		t.SnapshotEvent = delivered.SnapshotEvent
	}
	return t, full, nil
}

// planThinState plans, into out, the mirror's write of the object a thin
// event names, read after the event (mirror.SourceThin), or repaired by
// an event_generation_failure.resolved event (mirror.SourceHealth): only
// for a mirror that plans states (StatePlanner) and an object it keeps.
func (p *Processor) planThinState(rec event.Record, t event.Thin, obj []byte, snapshotType string, health bool, out *prepared) error {
	var head struct {
		Object string `json:"object"`
	}
	_ = json.Unmarshal(obj, &head) // Related checked it is an object with an id
	sp, ok := p.cfg.Mirror.(StatePlanner)
	if !ok || !slices.Contains(mirror.ObjectTypes, head.Object) {
		return nil
	}
	v := mirror.Version{
		Created: rec.Created, ID: rec.ID, Type: snapshotType, Livemode: rec.Livemode, Source: mirror.SourceThin,
		Account: t.Context, Deleted: strings.HasSuffix(snapshotType, ".deleted"),
	}
	if health {
		v.Type, v.Source, v.Deleted = t.Type, mirror.SourceHealth, false
	}
	var err error
	out.plan, err = sp.PlanState(obj, v)
	return err
}

// pairTwin pairs a thin event with its snapshot twin, so the change has
// one effect, and reports whether the thin event runs the effects: a twin
// named is written with the commit (TwinWriter), and one already stored
// has run them (TwinChecker: outcome twinned); with no twin named, the
// twin claim decides (claim).
func (p *Processor) pairTwin(ctx context.Context, rec event.Record, t event.Thin, snapshotType string, runEffects bool, out *prepared) (bool, error) {
	if t.SnapshotEvent != "" {
		tw, ok := p.cfg.Store.(TwinWriter)
		if !ok {
			return false, &fault.Permanent{Err: fmt.Errorf("processor: thin event %s names a snapshot twin and the store cannot record it", rec.ID)}
		}
		out.twin = []types.TransactWriteItem{tw.TwinWrite(rec, t.SnapshotEvent, snapshotType, p.cfg.Now())}
		// The twin in hand already (delivered first): it has the pair's
		// effect, so the thin event runs none. The commit's condition on
		// the twin's record decides it anyway; asking first keeps an
		// effect's outside call from being made a second time.
		if tc, ok := p.cfg.Store.(TwinChecker); ok && runEffects {
			have, err := tc.ExistingConsistent(ctx, rec.Provider, []string{t.SnapshotEvent})
			if err != nil {
				return false, fmt.Errorf("processor: thin event %s: look for its twin %s: %w", rec.ID, t.SnapshotEvent, err)
			}
			if have[t.SnapshotEvent] {
				runEffects, out.twin, out.outcome = false, nil, outcome.Twinned
			}
		}
		return runEffects, nil
	}
	if !runEffects {
		return false, nil
	}
	// No twin named: the snapshot event of the same change, which the
	// reconciler finds in the Events API and ingests, is paired with this
	// one by the twin claim. The thin event's created second is its
	// twin's (event.CreatedSecond: Stripe stamps both forms of a change
	// with its time; the stand-in and stripefixture.Thin make them one
	// second).
	k := store.TwinKey{Account: t.Context, ObjectID: rec.ObjectID, Type: snapshotType, Created: event.CreatedSecond(t.Created)}
	if k.ObjectID == "" {
		k.ObjectID = t.Related.ID
	}
	return p.claim(ctx, rec, k, store.TwinThin, out)
}

// snapshotClaim pairs a Stripe snapshot event the reconciler found
// missing with the thin event of the same change, if one came without
// naming it (TwinClaimer), and reports whether the event runs its
// effects. Only such an event can be the twin of a thin event that names
// none: a snapshot event delivered while thin events are sent too is
// named by its thin twin (snapshot_event, the twin's record), and other
// sources run no effect (backfill) or are no Stripe snapshot event.
func (p *Processor) snapshotClaim(ctx context.Context, rec event.Record, ev *prepared, runEffects bool) (bool, error) {
	if !runEffects || !isStripe(rec) || rec.Source != event.SourceReconciler || event.IsThinType(rec.Type) || rec.ObjectID == "" {
		return runEffects, nil
	}
	k := store.TwinKey{Account: rec.Account, ObjectID: rec.ObjectID, Type: rec.Type, Created: rec.Created}
	return p.claim(ctx, rec, k, store.TwinSnapshot, ev)
}

// claim reads k's twin claim before any effect's outside call and
// prepares the commit of rec's count under it (ev.twin); it reports
// whether rec runs its effects: not when an event of the other side is
// unmatched (it had the pair's effect: outcome twinned).
func (p *Processor) claim(ctx context.Context, rec event.Record, k store.TwinKey, side store.TwinSide, ev *prepared) (bool, error) {
	tc, ok := p.cfg.Store.(TwinClaimer)
	if !ok {
		return true, nil
	}
	c, err := tc.ReadTwinClaim(ctx, k)
	if err != nil {
		return false, fmt.Errorf("processor: event %s: read its twin claim: %w", rec.ID, err)
	}
	twinned := c.Twinned(side)
	ev.twin = []types.TransactWriteItem{tc.TwinClaimWrite(k, side, twinned, rec.ID)}
	moved := func() ([]types.TransactWriteItem, error) {
		return nil, fmt.Errorf("event %s: %w", rec.ID, ErrTwinClaimMoved)
	}
	if twinned {
		ev.outcome, ev.onTwinned = outcome.Twinned, moved
		return false, nil
	}
	ev.onTwinned = func() ([]types.TransactWriteItem, error) {
		// Its twin committed between the read and the commit: counted
		// as twinned, without its effects.
		ev.onTwinned = moved
		return []types.TransactWriteItem{tc.TwinClaimWrite(k, side, true, rec.ID)}, nil
	}
	return true, nil
}

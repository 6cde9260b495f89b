package processor

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// handlers plans the mirror's writes of rec and, with runEffects, runs
// the team's effects, into ev. With Config.Preread, for an event the
// mirror keeps and an effect handles, it first reads the object's
// standing (preread). A panic in either becomes a *PanicError, so the
// attempt is recorded as failed.
func (p *Processor) handlers(
	ctx context.Context,
	rec event.Record,
	payload []byte,
	runEffects bool,
	ev *prepared,
	reads *atomic.Int64,
) (err error) {
	defer func() {
		if v := recover(); v != nil {
			ev.plan, ev.effects, ev.claim, ev.check = mirror.Plan{}, nil, nil, nil
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	if p.cfg.Mirror != nil && isStripe(rec) {
		if ev.plan, err = p.cfg.Mirror.Plan(rec, payload); err != nil {
			return err
		}
	}
	if p.cfg.Effects == nil || !runEffects {
		return nil
	}
	if ev.plan.Key != "" && p.cfg.Preread != nil && p.effectFor(rec) {
		run, err := p.preread(ctx, rec, payload, ev, reads)
		if err != nil || !run {
			return err
		}
	}
	if ev.effects, err = p.cfg.Effects.Run(ctx, rec, payload); err != nil {
		ev.effects = nil
		return err
	}
	return nil
}

// preread reads the standing of rec's object (Config.Preread: one
// strongly consistent read) before any effect's outside call, and
// reports whether the effects are to run. A tie is settled from the API
// now (Settle), so an API read that fails fails the event before an
// effect ran, and the retry runs them once. An event that does not win
// the mirror (superseded, or a tie) and whose change the audit already
// ran the effects of (an effects claim at or after its created second)
// runs none: it commits superseded (or, a tie settled, applied) without
// them. Otherwise the claim's check goes into the commit, the backstop
// for a claim written after this read.
func (p *Processor) preread(ctx context.Context, rec event.Record, payload []byte, ev *prepared, reads *atomic.Int64) (bool, error) {
	st, err := p.cfg.Preread.Standing(ctx, rec, payload)
	if err != nil {
		return false, err
	}
	if settler, ok := p.cfg.Mirror.(Settler); ok && st.Tie && p.cfg.API != nil {
		if reads != nil {
			reads.Add(1)
		}
		s, err := settler.Settle(ctx, p.cfg.API, rec, payload)
		if err != nil {
			return false, err
		}
		ev.plan.Writes, ev.settled = s.Writes, true
	}
	if !st.Wins && !st.Tie && !ev.settled {
		// A later state is applied, and states only move forward: the
		// commit leaves the snapshot alone rather than fail on it.
		ev.plan.Writes, ev.outcome = nil, outcome.Superseded
	}
	if !st.Wins && st.Claimed {
		if !ev.settled {
			ev.outcome = outcome.Superseded
		}
		p.cfg.Logger.InfoContext(ctx, "effects run already by the audit's repair to this state",
			slog.String("event_id", rec.ID), slog.String("effects_by", "audit"))
		return false, nil
	}
	// An event that wins the guard needs no check: a repair claiming its
	// change after this read writes the snapshot at the claim's second,
	// at or after the event's, so the event's snapshot write fails and
	// the commit includes the check from then on. One that does not win
	// includes it now.
	ev.check = st.Check
	if !st.Wins {
		ev.claim = st.Check
	}
	return true, nil
}

// effectFor reports whether an effect handles rec's type, when the
// Effects can say (*effect.Registry can): the pre-read is made only for
// events whose effects would run.
func (p *Processor) effectFor(rec event.Record) bool {
	h, ok := p.cfg.Effects.(interface {
		HandlesFor(provider, eventType string) bool
	})
	if !ok {
		return true
	}
	provider := rec.Provider
	if provider == "" {
		provider = event.ProviderStripe
	}
	return h.HandlesFor(provider, rec.Type)
}

// effects runs the team's effects for rec; a panic becomes a *PanicError.
func (p *Processor) effects(ctx context.Context, rec event.Record, payload []byte) (writes []types.TransactWriteItem, err error) {
	if p.cfg.Effects == nil {
		return nil, nil
	}
	defer func() {
		if v := recover(); v != nil {
			writes, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return p.cfg.Effects.Run(ctx, rec, payload)
}

package processor

import (
	"context"
	"errors"
	"fmt"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// ErrPayloadMissing: a record's payload is not stored and no provider API is
// configured to read it from. Its receiver died between storing the
// record and its payload; the provider's retry of the delivery stores it,
// so the event is retried.
var ErrPayloadMissing = errors.New("processor: the event's payload is not stored (yet) and no provider API is configured to read it")

// payload returns rec's payload: the stored one, or the provider's copy
// for a record stored without it (too large), or whose payload item is
// missing (its receiver died between the two puts; the stuck sweep sent
// its pointer). A payload that does not decode, or one erased, fails the
// event for good: no retry can fix stored bytes.
func (p *Processor) payload(ctx context.Context, rec event.Record) ([]byte, error) {
	switch {
	case rec.PayloadErased:
		return nil, &fault.Permanent{Err: fmt.Errorf("processor: event %s: its payload was erased", rec.ID)}
	case rec.PayloadOmitted:
		if !p.canFetch(rec) {
			return nil, &fault.Permanent{Err: errors.New("payload not stored and no provider API configured")}
		}
		return p.fetch(ctx, rec)
	}
	payload, err := p.cfg.Store.Payload(ctx, rec)
	var pe *store.PayloadError
	switch {
	case errors.As(err, &pe):
		// Damaged, or inflating past store.MaxPayloadBytes.
		return nil, &fault.Permanent{Err: err}
	case errors.Is(err, store.ErrNoPayload) && p.canFetch(rec):
		return p.fetch(ctx, rec)
	case errors.Is(err, store.ErrNoPayload):
		return nil, fmt.Errorf("event %s: %w", rec.ID, ErrPayloadMissing)
	case err != nil:
		return nil, err
	}
	return payload, nil
}

// canFetch reports whether rec's payload can be read from the provider's
// API: a Stripe snapshot event's with a Fetcher (GET /v1/events/{id}), a
// thin event's with a ThinReader (GET /v2/core/events/{id}, which serves
// the thin event as it was delivered).
func (p *Processor) canFetch(rec event.Record) bool {
	if !isStripe(rec) {
		return false
	}
	if event.IsThinType(rec.Type) {
		return p.cfg.Thin != nil
	}
	return p.cfg.Fetcher != nil
}

func (p *Processor) fetch(ctx context.Context, rec event.Record) ([]byte, error) {
	var payload []byte
	var err error
	if event.IsThinType(rec.Type) {
		// A thin event is not in the v1 Events API: its v2 form is what
		// was delivered.
		if payload, err = p.cfg.Thin.ThinEvent(ctx, rec.Account, rec.ID); err != nil {
			return nil, fmt.Errorf("processor: fetch thin event %s from the provider: %w", rec.ID, err)
		}
		return payload, nil
	}
	if af, ok := p.cfg.Fetcher.(AccountFetcher); ok && rec.Account != "" {
		payload, err = af.FetchOf(ctx, rec.Account, rec.ID)
	} else {
		payload, err = p.cfg.Fetcher.Fetch(ctx, rec.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("processor: fetch event %s from the provider: %w", rec.ID, err)
	}
	return payload, nil
}

package ops

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// CustomerEventReader is what CustomerEvents reads of the events table;
// *store.Events implements it.
type CustomerEventReader interface {
	ByObject(ctx context.Context, objectID string) ([]event.Record, error)
	ByCustomer(ctx context.Context, account, customer string, limit int) (store.CustomerEvents, error)
}

// CustomerEvents are the events that concern customer of account, newest
// first by the provider's created time, whatever their status and object
// (store.Events.ByCustomer: a dead-lettered invoice.paid, never applied to
// the mirror, is one), with those of the subscriptions ent names that the
// customer index does not hold (events stored before the receiver kept
// each event's customer). At most limit (all when zero or less); more:
// older ones were left out. inboxctl entitlement and the console's
// customer page both list them.
func CustomerEvents(ctx context.Context, events CustomerEventReader, account, customer string, ent mirror.Entitlement, limit int) (recs []event.Record, more bool, err error) {
	got, err := events.ByCustomer(ctx, account, customer, limit)
	if err != nil {
		return nil, false, err
	}
	seen := map[string]bool{}
	for _, r := range got.Records {
		seen[r.ID] = true
	}
	out := got.Records
	for _, sub := range ent.Subscriptions {
		rs, err := events.ByObject(ctx, sub.ID)
		if err != nil {
			return nil, false, err
		}
		for _, r := range rs {
			if r.Account == account && !seen[r.ID] {
				seen[r.ID] = true
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b event.Record) int {
		if a.Created != b.Created {
			return cmp.Compare(b.Created, a.Created)
		}
		return strings.Compare(b.ID, a.ID)
	})
	if limit > 0 && len(out) > limit {
		out, got.More = out[:limit], true
	}
	return out, got.More, nil
}

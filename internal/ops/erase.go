package ops

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// What an erasure did with one item (ErasedItem.Action).
const (
	EraseWouldErase    = "would_erase"  // dry run: a snapshot or a payload
	EraseWouldDelete   = "would_delete" // dry run: the entitlement
	EraseErased        = "erased"
	EraseDeleted       = "deleted"
	EraseAlreadyErased = "already_erased"
	EraseGone          = "gone"    // it disappeared between the listing and the erasure
	EraseSkipped       = "skipped" // an event still pending
	EraseError         = "error"
)

// ErasurePlan is what the inbox keeps about one customer: their mirrored
// objects, their entitlement, and the events about them.
type ErasurePlan struct {
	Customer string
	// Account is the connected account the customer is of (Stripe
	// Connect), "" for the platform's own: a customer id is unique only
	// within its account.
	Account   string
	Snapshots []mirror.Snapshot
	// Entitlement: the customer has an entitlement item.
	Entitlement bool
	// Events name the customer in their payload or are about one of the
	// customer's objects, oldest first.
	Events []event.Record
}

// ErasedItem is one item an erasure found: a snapshot, the entitlement, or
// an event.
type ErasedItem struct {
	ID string
	// Object is the snapshot's type ("entitlement" for the entitlement);
	// Type the event's type.
	Object, Type string
	// State is the snapshot's (current, deleted, erased); Status the
	// event's, before the erasure.
	State, Status string
	// Action is one of the Erase constants.
	Action, Detail string
}

// Erasure is what an erasure did, or would do in a dry run.
type Erasure struct {
	Customer string
	Account  string
	DryRun   bool
	Mirror   []ErasedItem
	Events   []ErasedItem
	// Skipped counts events still pending, whose payloads were left: erase
	// again once they are settled. Failed counts errors.
	Skipped, Failed int
}

// NothingStoredError: an erasure found nothing about the customer.
type NothingStoredError struct {
	Customer, Account, MirrorTable, EventsTable string
}

func (e *NothingStoredError) Error() string {
	who := e.Customer
	if e.Account != "" {
		who += " of account " + e.Account
	}
	return fmt.Sprintf("nothing stored about %s: no snapshot in the mirror (%s), no entitlement, no event in %s that names it",
		who, e.MirrorTable, e.EventsTable)
}

// PlanErasure finds what there is about customer of account ("" for the
// platform's own; another account's customer of the same id is left
// alone): the customer's
// snapshots (the mirror's by_customer index), their entitlement, and the
// events that are about the customer: every stored payload that names the
// customer's id (a scan: no index knows an event's customer), and every
// event about the customer's mirrored objects (their payloads name the
// customer too, unless already erased). It changes nothing; a customer
// with none of these is a *NothingStoredError.
func (s *Stack) PlanErasure(ctx context.Context, customer, account string) (ErasurePlan, error) {
	mr, events := s.Mirror, s.Events
	plan := ErasurePlan{Customer: customer, Account: account}
	key := mirror.Key(account, customer)
	var err error
	if plan.Snapshots, err = mr.CustomerObjects(ctx, key, ""); err != nil {
		return plan, s.explain(mr.Table, err)
	}
	if plan.Entitlement, err = mr.HasEntitlement(ctx, key); err != nil {
		return plan, s.explain(mr.Table, err)
	}
	ent, err := mr.Entitlement(ctx, key)
	if err != nil {
		return plan, s.explain(mr.Table, err)
	}
	mentioning, err := events.Mentioning(ctx, []byte(`"`+customer+`"`))
	if err != nil {
		return plan, s.explain(events.Table, err)
	}
	// A payload names the customer's id, never its account's key: only
	// the account's own events are its customer's.
	plan.Events = ofAccount(mentioning, account)
	seen := map[string]bool{}
	for _, r := range plan.Events {
		seen[r.ID] = true
	}
	objects := map[string]bool{customer: true}
	for _, sn := range plan.Snapshots {
		objects[sn.ID] = true
	}
	for _, sub := range ent.Subscriptions {
		objects[sub.ID] = true
	}
	ids := make([]string, 0, len(objects))
	for id := range objects {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		rs, err := events.ByObject(ctx, id)
		if err != nil {
			return plan, s.explain(events.Table, err)
		}
		for _, r := range ofAccount(rs, account) {
			if !seen[r.ID] {
				seen[r.ID] = true
				plan.Events = append(plan.Events, r)
			}
		}
	}
	sort.SliceStable(plan.Events, func(i, j int) bool {
		a, b := plan.Events[i], plan.Events[j]
		if a.Created != b.Created {
			return a.Created < b.Created
		}
		return a.ID < b.ID
	})
	if len(plan.Snapshots) == 0 && !plan.Entitlement && len(plan.Events) == 0 {
		return plan, &NothingStoredError{Customer: customer, Account: account, MirrorTable: mr.Table, EventsTable: events.Table}
	}
	return plan, nil
}

// ofAccount keeps the records of account's events ("" for the platform's
// own).
func ofAccount(rs []event.Record, account string) []event.Record {
	var out []event.Record
	for _, r := range rs {
		if r.Account == account {
			out = append(out, r)
		}
	}
	return out
}

// Erase erases what plan found, or with dryRun says what it would erase.
// The mirror goes first: once its snapshots are tombstones (id, type,
// customer id and the ordering guard kept, data gone), no event still on
// its way writes the customer's data there again. Then the entitlement is
// deleted, and the stored payload of every settled event removed (the
// record stays, so a duplicate delivery is still recognised); an event
// still pending is skipped, since its processing needs its payload.
func (s *Stack) Erase(ctx context.Context, plan ErasurePlan, dryRun bool) Erasure {
	out := Erasure{Customer: plan.Customer, Account: plan.Account, DryRun: dryRun, Mirror: []ErasedItem{}, Events: []ErasedItem{}}
	for _, sn := range plan.Snapshots {
		out.Mirror = append(out.Mirror, s.eraseSnapshot(ctx, sn, dryRun))
	}
	if plan.Entitlement {
		out.Mirror = append(out.Mirror, s.eraseEntitlement(ctx, mirror.Key(plan.Account, plan.Customer), dryRun))
	}
	for _, r := range plan.Events {
		out.Events = append(out.Events, s.erasePayload(ctx, r, dryRun))
	}
	for _, it := range append(append([]ErasedItem{}, out.Mirror...), out.Events...) {
		switch it.Action {
		case EraseSkipped:
			out.Skipped++
		case EraseError:
			out.Failed++
		}
	}
	return out
}

func (s *Stack) eraseSnapshot(ctx context.Context, sn mirror.Snapshot, dryRun bool) ErasedItem {
	item := ErasedItem{ID: sn.ID, Object: sn.Object, State: snapshotState(sn)}
	switch {
	case sn.Erased:
		item.Action = EraseAlreadyErased
		return item
	case dryRun:
		item.Action = EraseWouldErase
		return item
	}
	ok, err := s.Eraser.EraseObject(ctx, sn.Key())
	switch {
	case err != nil:
		item.Action, item.Detail = EraseError, s.explain(s.Eraser.Table, err).Error()
	case !ok:
		item.Action = EraseGone
	default:
		item.Action = EraseErased
	}
	return item
}

// eraseEntitlement deletes the entitlement of customer, the mirror's key
// of the customer (mirror.Key).
func (s *Stack) eraseEntitlement(ctx context.Context, customer string, dryRun bool) ErasedItem {
	item := ErasedItem{ID: mirror.EntitlementKey(customer), Object: "entitlement", Action: EraseWouldDelete}
	if dryRun {
		return item
	}
	ok, err := s.Eraser.EraseEntitlement(ctx, customer)
	switch {
	case err != nil:
		item.Action, item.Detail = EraseError, s.explain(s.Eraser.Table, err).Error()
	case !ok:
		item.Action = EraseGone
	default:
		item.Action = EraseDeleted
	}
	return item
}

// settled statuses: the processor never needs the payload again.
func settled(st event.Status) bool {
	return st == event.StatusProcessed || st == event.StatusIgnored || st == event.StatusFailedPermanent
}

// erasePayload erases one event's payload, or says what it would do. The
// status from the index decides the dry run; the conditional write decides
// the real one.
func (s *Stack) erasePayload(ctx context.Context, r event.Record, dryRun bool) ErasedItem {
	item := ErasedItem{ID: r.ID, Type: r.Type, Status: string(r.Status)}
	pending := func(st event.Status) ErasedItem {
		item.Status, item.Action = string(st), EraseSkipped
		item.Detail = fmt.Sprintf("still %s: its processing needs the payload; erase again once it is processed", st)
		return item
	}
	if dryRun {
		if !settled(r.Status) {
			return pending(r.Status)
		}
		item.Action = EraseWouldErase
		return item
	}
	already, err := s.Events.ErasePayload(ctx, r.Provider, r.ID, s.now())
	var unsettled *store.UnsettledError
	switch {
	case errors.As(err, &unsettled):
		return pending(unsettled.Current.Status)
	case errors.Is(err, store.ErrNotFound):
		item.Action, item.Detail = EraseGone, "the record expired or was removed meanwhile"
	case err != nil:
		item.Action, item.Detail = EraseError, s.explain(s.Events.Table, err).Error()
	case already:
		item.Action = EraseAlreadyErased
	default:
		item.Action = EraseErased
	}
	return item
}

func snapshotState(sn mirror.Snapshot) string {
	switch {
	case sn.Erased:
		return "erased"
	case sn.Deleted:
		return "deleted"
	}
	return "current"
}

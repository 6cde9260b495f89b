package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
)

// What erase did with one item (EraseItemJSON.Action).
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

// EraseItemJSON is one item erase found: a snapshot, the entitlement, or
// an event.
type EraseItemJSON struct {
	ID string `json:"id"`
	// Object is the snapshot's type ("entitlement" for the entitlement);
	// Type the event's type.
	Object string `json:"object,omitempty"`
	Type   string `json:"type,omitempty"`
	// State is the snapshot's (current, deleted, erased); Status the
	// event's, before the erasure.
	State  string `json:"state,omitempty"`
	Status string `json:"status,omitempty"`
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// EraseJSON is the stable JSON shape of inboxctl erase --json.
type EraseJSON struct {
	Customer string          `json:"customer"`
	DryRun   bool            `json:"dry_run"`
	Mirror   []EraseItemJSON `json:"mirror"`
	Events   []EraseItemJSON `json:"events"`
	// Skipped counts events still pending, whose payloads were left: run
	// erase again once they are settled. Failed counts errors.
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
}

var customerID = regexp.MustCompile(`^cus_[A-Za-z0-9]+$`)

func (a *app) eraseCmd() *cobra.Command {
	var customer string
	var yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "erase --customer <customer-id> [--yes]",
		Short: "Erase a customer's personal data from the mirror and the stored payloads of their events",
		Long: `erase removes what the inbox keeps about one customer, for an erasure
request. Without --yes it only lists what it would erase.

  mirror snapshots    each of the customer's objects (found by the by_customer
                      index) becomes an erased tombstone: id, type, customer id
                      and the ordering guard stay, data goes, and no later
                      event but a deletion writes it again
  entitlement         deleted
  events              the stored payload of every event that names the
                      customer (a scan of the events table: every type, the
                      ignored ones included) or is about one of their objects
                      is removed; the record stays, so a duplicate delivery is
                      still recognised. Events still pending (received,
                      processing, failed, dead_lettered) are skipped: their
                      processing needs the payload

Exit code 1 when events were skipped or a write failed: run it again once
they are settled. Backups (point-in-time recovery, 35 days) are out of its
reach: see docs/security.md, Personal data.`,
		Example: `  inboxctl erase --customer cus_NffrFeUfNV2Hib          # dry run: what would go
  inboxctl erase --customer cus_NffrFeUfNV2Hib --yes`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !customerID.MatchString(customer) {
				return usagef("--customer %q: want a Stripe customer id, cus_...", customer)
			}
			return a.erase(cmd.Context(), customer, !yes, asJSON)
		},
	}
	cmd.Flags().StringVar(&customer, "customer", "", "the Stripe customer id (cus_...) whose data to erase")
	cmd.Flags().BoolVar(&yes, "yes", false, "erase; without it, only list what would be erased")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (EraseJSON in docs/cli.md)")
	return cmd
}

func (a *app) erase(ctx context.Context, customer string, dryRun, asJSON bool) error {
	mr, err := a.mirrorReader(ctx)
	if err != nil {
		return err
	}
	events, err := a.eventsStore(ctx)
	if err != nil {
		return err
	}
	db, err := a.dynamo(ctx)
	if err != nil {
		return err
	}
	eraser := &mirror.Eraser{DB: db, Table: mr.Table, Now: a.now}

	// What there is: the customer's snapshots, their entitlement, and the
	// events that are about the customer: every stored payload that names
	// the customer's id (a scan: no index knows an event's customer), and
	// every event about the customer's mirrored objects (their payloads
	// name the customer too, unless already erased).
	snaps, err := mr.CustomerObjects(ctx, customer, "")
	if err != nil {
		return a.tableHint(mr.Table, err)
	}
	hasEnt, err := mr.HasEntitlement(ctx, customer)
	if err != nil {
		return a.tableHint(mr.Table, err)
	}
	ent, err := mr.Entitlement(ctx, customer)
	if err != nil {
		return a.tableHint(mr.Table, err)
	}
	recs, err := events.Mentioning(ctx, []byte(`"`+customer+`"`))
	if err != nil {
		return a.tableHint(events.Table, err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[r.ID] = true
	}
	objects := map[string]bool{customer: true}
	for _, s := range snaps {
		objects[s.ID] = true
	}
	for _, s := range ent.Subscriptions {
		objects[s.ID] = true
	}
	ids := make([]string, 0, len(objects))
	for id := range objects {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		rs, err := events.ByObject(ctx, id)
		if err != nil {
			return a.tableHint(events.Table, err)
		}
		for _, r := range rs {
			if !seen[r.ID] {
				seen[r.ID] = true
				recs = append(recs, r)
			}
		}
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Created != recs[j].Created {
			return recs[i].Created < recs[j].Created
		}
		return recs[i].ID < recs[j].ID
	})
	if len(snaps) == 0 && !hasEnt && len(recs) == 0 {
		return fmt.Errorf("nothing stored about %s: no snapshot in the mirror (%s), no entitlement, no event in %s that names it: check the id, and --stage or the table flags", customer, mr.Table, events.Table)
	}

	out := EraseJSON{Customer: customer, DryRun: dryRun, Mirror: []EraseItemJSON{}, Events: []EraseItemJSON{}}
	// The mirror first: once its snapshots are tombstones, no event still
	// on its way writes the customer's data there again.
	for _, s := range snaps {
		item := EraseItemJSON{ID: s.ID, Object: s.Object, State: snapshotState(s)}
		switch {
		case s.Erased:
			item.Action = EraseAlreadyErased
		case dryRun:
			item.Action = EraseWouldErase
		default:
			ok, err := eraser.EraseObject(ctx, s.ID)
			switch {
			case err != nil:
				item.Action, item.Detail = EraseError, a.tableHint(mr.Table, err).Error()
			case !ok:
				item.Action = EraseGone
			default:
				item.Action = EraseErased
			}
		}
		out.Mirror = append(out.Mirror, item)
	}
	if hasEnt {
		item := EraseItemJSON{ID: mirror.EntitlementKey(customer), Object: "entitlement", Action: EraseWouldDelete}
		if !dryRun {
			ok, err := eraser.EraseEntitlement(ctx, customer)
			switch {
			case err != nil:
				item.Action, item.Detail = EraseError, a.tableHint(mr.Table, err).Error()
			case !ok:
				item.Action = EraseGone
			default:
				item.Action = EraseDeleted
			}
		}
		out.Mirror = append(out.Mirror, item)
	}
	for _, r := range recs {
		out.Events = append(out.Events, a.erasePayload(ctx, events, r, dryRun))
	}
	for _, it := range append(append([]EraseItemJSON{}, out.Mirror...), out.Events...) {
		switch it.Action {
		case EraseSkipped:
			out.Skipped++
		case EraseError:
			out.Failed++
		}
	}

	if asJSON {
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	} else if err := a.printErase(out); err != nil {
		return err
	}
	if out.Skipped+out.Failed > 0 && !dryRun {
		return failedError{fmt.Sprintf("erasure of %s incomplete: %d event(s) skipped, %d error(s) (see above); run `inboxctl erase --customer %s --yes` again once they are settled", customer, out.Skipped, out.Failed, customer)}
	}
	return nil
}

// settled statuses: the processor never needs the payload again.
func settled(st event.Status) bool {
	return st == event.StatusProcessed || st == event.StatusIgnored || st == event.StatusFailedPermanent
}

// erasePayload erases one event's payload, or says what it would do. The
// status from the index decides the dry run; the conditional write decides
// the real one.
func (a *app) erasePayload(ctx context.Context, events *store.Events, r event.Record, dryRun bool) EraseItemJSON {
	item := EraseItemJSON{ID: r.ID, Type: r.Type, Status: string(r.Status)}
	pending := func(st event.Status) EraseItemJSON {
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
	already, err := events.ErasePayload(ctx, r.Provider, r.ID, a.now())
	var unsettled *store.UnsettledError
	switch {
	case errors.As(err, &unsettled):
		return pending(unsettled.Current.Status)
	case errors.Is(err, store.ErrNotFound):
		item.Action, item.Detail = EraseGone, "the record expired or was removed meanwhile"
	case err != nil:
		item.Action, item.Detail = EraseError, a.tableHint(events.Table, err).Error()
	case already:
		item.Action = EraseAlreadyErased
	default:
		item.Action = EraseErased
	}
	return item
}

func snapshotState(s mirror.Snapshot) string {
	switch {
	case s.Erased:
		return "erased"
	case s.Deleted:
		return "deleted"
	}
	return "current"
}

func (a *app) eraseAction(act string) string {
	switch act {
	case EraseErased, EraseDeleted, EraseWouldErase, EraseWouldDelete, EraseAlreadyErased, EraseGone:
		return a.paint(green, act)
	case EraseSkipped:
		return a.paint(yellow, act)
	}
	return a.paint(red, act)
}

func (a *app) printErase(out EraseJSON) error {
	if out.DryRun {
		fmt.Fprintf(a.stdout, "dry run: nothing was changed; run again with --yes to erase what is listed\n\n")
	}
	fmt.Fprintf(a.stdout, "mirror of %s (snapshots become erased tombstones: ids and ordering kept, data removed)\n", out.Customer)
	if len(out.Mirror) == 0 {
		fmt.Fprintln(a.stdout, "nothing")
	} else {
		var rows [][]string
		for _, it := range out.Mirror {
			rows = append(rows, []string{it.ID, it.Object, it.State, a.eraseAction(it.Action), it.Detail})
		}
		if err := a.table([]string{"ID", "OBJECT", "STATE", "ACTION", "DETAIL"}, rows); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stdout, "\nevents that name it or its objects (payloads removed; records kept, so duplicates are still recognised)\n")
	if len(out.Events) == 0 {
		fmt.Fprintln(a.stdout, "none stored")
	} else {
		var rows [][]string
		for _, it := range out.Events {
			rows = append(rows, []string{it.ID, it.Type, a.status(it.Status), a.eraseAction(it.Action), it.Detail})
		}
		if err := a.table([]string{"ID", "TYPE", "STATUS", "ACTION", "DETAIL"}, rows); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stdout, "\n%d mirror item(s), %d event(s); skipped %d, failed %d\n", len(out.Mirror), len(out.Events), out.Skipped, out.Failed)
	return nil
}

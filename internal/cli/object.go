package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// ObjectEventJSON is one event that shaped an object, as the by_object index
// holds it.
type ObjectEventJSON struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
	Status  string `json:"status"`
	Outcome string `json:"outcome,omitempty"`
	// ObjectID is the object the event is about.
	ObjectID string `json:"object_id"`
}

// ObjectJSON is the stable JSON shape of inboxctl object --json: the
// mirrored snapshot's fields at the top level (id, object, deleted,
// last_event_id, last_event_created, data, ...; only id when the mirror has
// none, with mirrored false) and every stored event about the object,
// oldest first by Stripe's created time.
type ObjectJSON struct {
	// ID is the object asked about (the snapshot's own id when mirrored).
	ID string `json:"id"`
	// Account is the connected account asked about (--account; Stripe
	// Connect); omitted for the platform's own objects.
	Account  string `json:"account,omitempty"`
	Mirrored bool   `json:"mirrored"`
	*mirror.Snapshot
	Events []ObjectEventJSON `json:"events"`
}

// EntitlementJSON is the stable JSON shape of inboxctl entitlement --json:
// the derived entitlement, whether the customer's own object is mirrored,
// and every event that concerns the customer (its own, its
// subscriptions', its invoices', ...), whatever its status, newest first.
type EntitlementJSON struct {
	mirror.Entitlement
	// Mirrored: the mirror has a snapshot of the customer itself (from its
	// customer.* events); the entitlement comes from its subscriptions'
	// snapshots either way.
	Mirrored bool              `json:"mirrored"`
	Events   []ObjectEventJSON `json:"events"`
}

func objectEvents(rs []event.Record) []ObjectEventJSON {
	out := []ObjectEventJSON{}
	for _, r := range rs {
		out = append(
			out,
			ObjectEventJSON{ID: r.ID, Type: r.Type, Created: r.Created, Status: string(r.Status), Outcome: string(r.Outcome), ObjectID: r.ObjectID},
		)
	}
	return out
}

// ofAccount keeps the records of account's events ("" for the
// platform's own): an object id is unique only within its account.
func ofAccount(rs []event.Record, account string) []event.Record {
	out := rs[:0:0]
	for _, r := range rs {
		if r.Account == account {
			out = append(out, r)
		}
	}
	return out
}

// accountFlag adds --account to cmd.
func accountFlag(cmd *cobra.Command, account *string, what string) {
	cmd.Flags().StringVar(account, "account", "", "the connected account (acct_...) "+what+" is of, for a Stripe Connect platform; none: the platform's own")
}

func (a *app) objectCmd() *cobra.Command {
	var asJSON, data bool
	var account string
	cmd := &cobra.Command{
		Use:   "object <object-id>",
		Short: "Show a mirrored Stripe object and the events that shaped it",
		Long: `object shows the mirror's snapshot of a Stripe object (customer,
subscription, invoice, checkout session, product, price): the event it
reflects, whether it is deleted, its status; with --data its whole data
(the fields of the object the mirror's allowlist keeps).
Then every stored event about the object, oldest first, with what
processing did with each: applied, or superseded by a later event.`,
		Example: `  inboxctl object sub_1MowQVLkdIwHu7ixeRlqHVzs
  inboxctl object cus_NffrFeUfNV2Hib --data
  inboxctl object sub_1MowQVLkdIwHu7ixeRlqHVzs --json | jq .data.status
  inboxctl object sub_1MowQVLkdIwHu7ixeRlqHVzs --account acct_1Nv0FGQ9RKHgCVdK`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, v []string) error {
			return a.object(cmd.Context(), v[0], account, asJSON, data)
		},
	}
	accountFlag(cmd, &account, "the object")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (ObjectJSON in docs/cli.md), data included")
	cmd.Flags().BoolVar(&data, "data", false, "print the object's whole data, as mirrored (the allowlisted fields)")
	return cmd
}

func (a *app) object(ctx context.Context, id, account string, asJSON, data bool) error {
	s, err := a.open(ctx, withEvents|withMirror)
	if err != nil {
		return err
	}
	mr, events := s.Mirror, s.Events
	out := ObjectJSON{ID: id, Account: account}
	snap, err := mr.Object(ctx, mirror.Key(account, id))
	switch {
	case errors.Is(err, mirror.ErrNotFound):
	case err != nil:
		return a.tableHint(mr.Table, err)
	default:
		out.Snapshot, out.Mirrored = &snap, true
	}
	recs, err := events.ByObject(ctx, id)
	if err != nil {
		return a.tableHint(events.Table, err)
	}
	out.Events = objectEvents(ofAccount(recs, account))
	if out.Snapshot == nil && len(out.Events) == 0 {
		if account != "" {
			id += " of account " + account
		}
		if strings.HasPrefix(id, "cus_") {
			// A customer's access comes from its subscriptions'
			// snapshots, which object does not read.
			return fmt.Errorf("no object %s in the mirror (%s) and no event about it in %s: a customer's access and subscriptions are inboxctl entitlement %s",
				id, mr.Table, events.Table, strings.Replace(id, " of account ", " --account ", 1))
		}
		return fmt.Errorf(
			"no object %s in the mirror (%s) and no event about it in %s: check the id (sub_..., cus_..., in_...), --account, and --stage or the table flags",
			id,
			mr.Table,
			events.Table,
		)
	}
	if asJSON {
		return writeJSON(a.stdout, out)
	}
	if strings.HasPrefix(id, "cus_") {
		defer fmt.Fprintf(a.stdout, "\n(the customer's access and subscriptions: inboxctl entitlement %s)\n", id)
	}
	if out.Snapshot == nil {
		fmt.Fprintf(a.stdout, "%s is not in the mirror: none of its events has been applied yet\n", mirror.Key(account, id))
	} else {
		s := out.Snapshot
		var fields struct {
			Status           string `json:"status"`
			CurrentPeriodEnd int64  `json:"current_period_end"`
		}
		_ = json.Unmarshal(s.Data, &fields)
		deleted := fmt.Sprint(s.Deleted)
		if s.Erased {
			deleted += " (erased: inboxctl erase)"
		}
		if err := a.rows([][2]string{
			{"id", s.ID}, {"account", s.Account}, {"object", s.Object}, {"status", fields.Status}, {"customer", s.Customer},
			{"current_period_end", unix(fields.CurrentPeriodEnd)},
			{"deleted", deleted}, {"livemode", fmt.Sprint(s.Livemode)},
			{"last_event", fmt.Sprintf("%s %s (created %s)", s.LastEventID, s.LastEventType, unix(s.LastEventCreated))},
		}); err != nil {
			return err
		}
		var pretty bytes.Buffer
		if data && json.Indent(&pretty, s.Data, "", "  ") == nil {
			fmt.Fprintf(a.stdout, "data\n%s\n", pretty.String())
		}
	}
	last := ""
	if out.Snapshot != nil {
		last = out.Snapshot.LastEventID
	}
	return a.eventTable(out.Events, last)
}

// eventTable lists an object's events; the one the mirror reflects is
// marked with *.
func (a *app) eventTable(evs []ObjectEventJSON, reflected string) error {
	fmt.Fprintf(a.stdout, "\nevents (oldest first, * = the one the mirror reflects)\n")
	if len(evs) == 0 {
		fmt.Fprintln(a.stdout, "none stored (older than the retention, or it arrived before the inbox)")
		return nil
	}
	var rows [][]string
	for _, e := range evs {
		mark := " "
		if e.ID == reflected {
			mark = "*"
		}
		rows = append(rows, []string{mark, unix(e.Created), e.ID, e.Type, e.ObjectID, a.status(e.Status), e.Outcome})
	}
	return a.table([]string{" ", "CREATED", "ID", "TYPE", "OBJECT", "STATUS", "OUTCOME"}, rows)
}

func (a *app) entitlementCmd() *cobra.Command {
	var asJSON bool
	var account string
	cmd := &cobra.Command{
		Use:   "entitlement <customer-id>",
		Short: "Show what a customer is entitled to, why, and the events behind it",
		Long: `entitlement derives a customer's access from the mirrored states of all
their subscriptions (active or trialing grants access; otherwise the most
recent subscription's status says why not), and lists every event that
concerns the customer, newest first, whatever its status and object: its
own, its subscriptions', its invoices' (a failed or dead-lettered
invoice.paid, never applied to the mirror, included): the answer to "I
paid but my account is locked".`,
		Example: `  inboxctl entitlement cus_NffrFeUfNV2Hib
  inboxctl entitlement cus_NffrFeUfNV2Hib --json | jq .active
  inboxctl entitlement cus_NffrFeUfNV2Hib --account acct_1Nv0FGQ9RKHgCVdK`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, v []string) error {
			return a.entitlement(cmd.Context(), v[0], account, asJSON)
		},
	}
	accountFlag(cmd, &account, "the customer")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (EntitlementJSON in docs/cli.md)")
	return cmd
}

func (a *app) entitlement(ctx context.Context, customer, account string, asJSON bool) error {
	if err := checkCustomerID(customer); err != nil {
		return err
	}
	s, err := a.open(ctx, withEvents|withMirror)
	if err != nil {
		return err
	}
	mr, events := s.Mirror, s.Events
	ent, err := mr.Entitlement(ctx, mirror.Key(account, customer))
	if err != nil {
		return a.tableHint(mr.Table, err)
	}
	out := EntitlementJSON{Entitlement: ent, Events: []ObjectEventJSON{}}
	switch _, err := mr.Object(ctx, mirror.Key(account, customer)); {
	case err == nil:
		out.Mirrored = true
	case !errors.Is(err, mirror.ErrNotFound):
		return a.tableHint(mr.Table, err)
	}
	recs, _, err := ops.CustomerEvents(ctx, events, account, customer, ent, 0)
	if err != nil {
		return a.tableHint(events.Table, err)
	}
	out.Events = objectEvents(recs)
	if !out.Mirrored && len(recs) == 0 && len(ent.Subscriptions) == 0 {
		return neverSeen(customer, account)
	}
	if asJSON {
		return writeJSON(a.stdout, out)
	}
	access := a.paint(red, "no")
	if ent.Active {
		access = a.paint(green, "yes")
	}
	if err := a.rows([][2]string{
		{"customer", ent.Customer}, {"account", ent.Account}, {"active", access}, {"reason", ent.Reason},
		{"price", ent.Price}, {"product", ent.Product}, {"until", unix(ent.Until)},
	}); err != nil {
		return err
	}
	if len(ent.Subscriptions) > 0 {
		fmt.Fprintln(a.stdout, "\nsubscriptions (most recent first)")
		var rows [][]string
		for _, s := range ent.Subscriptions {
			rows = append(rows, []string{s.ID, s.Status, fmt.Sprint(s.Deleted), s.Price, unix(s.CurrentPeriodEnd), unix(s.TrialEnd),
				fmt.Sprint(s.CancelAtPeriodEnd), s.EventID})
		}
		if err := a.table([]string{"ID", "STATUS", "DELETED", "PRICE", "PERIOD_END", "TRIAL_END", "CANCEL_AT_END", "LAST_EVENT"}, rows); err != nil {
			return err
		}
	}
	reflected := map[string]bool{}
	for _, s := range ent.Subscriptions {
		reflected[s.EventID] = true
	}
	if !out.Mirrored {
		fmt.Fprintf(a.stdout, "\n%s has no snapshot in the mirror: none of its own events (customer.*) has been applied; ", mirror.Key(account, customer))
		if len(ent.Subscriptions) > 0 {
			fmt.Fprintln(a.stdout, "the entitlement above comes from the snapshots of the subscriptions that name it")
		} else {
			fmt.Fprintln(a.stdout, "no subscription that names it is in the mirror either, so it has no entitlement")
		}
	}
	fmt.Fprintf(a.stdout, "\nevery event that concerns the customer (newest first, * = reflected in the entitlement)\n")
	if len(out.Events) == 0 {
		fmt.Fprintln(a.stdout, "none stored (older than the retention, or they arrived before the inbox)")
		return nil
	}
	var rows [][]string
	for _, e := range out.Events {
		mark := " "
		if reflected[e.ID] {
			mark = "*"
		}
		rows = append(rows, []string{mark, unix(e.Created), e.ID, e.Type, e.ObjectID, a.status(e.Status), e.Outcome})
	}
	return a.table([]string{" ", "CREATED", "ID", "TYPE", "OBJECT", "STATUS", "OUTCOME"}, rows)
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
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
	// Action is internal/ops's: would_erase, would_delete, erased,
	// deleted, already_erased, gone, skipped or error.
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// EraseJSON is the stable JSON shape of inboxctl erase --json.
type EraseJSON struct {
	Customer string `json:"customer"`
	// Account is the connected account the customer is of (--account),
	// absent for the platform's own.
	Account string          `json:"account,omitempty"`
	DryRun  bool            `json:"dry_run"`
	Mirror  []EraseItemJSON `json:"mirror"`
	Events  []EraseItemJSON `json:"events"`
	// Skipped counts events still pending, whose payloads were left: run
	// erase again once they are settled. Failed counts errors.
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
}

var (
	customerID = regexp.MustCompile(`^cus_[A-Za-z0-9]+$`)
	accountID  = regexp.MustCompile(`^acct_[A-Za-z0-9]+$`)
)

func (a *app) eraseCmd() *cobra.Command {
	var customer, account string
	var yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "erase --customer <customer-id> [--account <account-id>] [--yes]",
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

For a Stripe Connect platform, --account names the connected account the
customer is of: a customer id is unique only within its account, so only
that account's snapshots, entitlement and events are erased (without it,
the platform's own customer).

Exit code 1 when events were skipped or a write failed: run it again once
they are settled. Backups (point-in-time recovery, 35 days) are out of its
reach: see docs/security.md, Personal data.`,
		Example: `  inboxctl erase --customer cus_NffrFeUfNV2Hib          # dry run: what would go
  inboxctl erase --customer cus_NffrFeUfNV2Hib --yes
  inboxctl erase --customer cus_NffrFeUfNV2Hib --account acct_1Nv0FGQ9RKHgCVdK --yes`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !customerID.MatchString(customer) {
				return usagef("--customer %q: want a Stripe customer id, cus_...", customer)
			}
			if account != "" && !accountID.MatchString(account) {
				return usagef("--account %q: want a connected account's id, acct_...", account)
			}
			return a.erase(cmd.Context(), customer, account, !yes, asJSON)
		},
	}
	accountFlag(cmd, &account, "the customer")
	cmd.Flags().StringVar(&customer, "customer", "", "the Stripe customer id (cus_...) whose data to erase")
	cmd.Flags().BoolVar(&yes, "yes", false, "erase; without it, only list what would be erased")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (EraseJSON in docs/cli.md)")
	return cmd
}

func (a *app) erase(ctx context.Context, customer, account string, dryRun, asJSON bool) error {
	s, err := a.open(ctx, withEvents|withMirror)
	if err != nil {
		return err
	}
	plan, err := s.PlanErasure(ctx, customer, account)
	var nothing *ops.NothingStoredError
	if errors.As(err, &nothing) {
		return fmt.Errorf("%w: check the id, and --stage or the table flags", err)
	}
	if err != nil {
		return err
	}
	out := eraseJSON(s.Erase(ctx, plan, dryRun))
	if asJSON {
		if err := writeJSON(a.stdout, out); err != nil {
			return err
		}
	} else if err := a.printErase(out); err != nil {
		return err
	}
	if out.Skipped+out.Failed > 0 && !dryRun {
		again := "--customer " + customer
		if account != "" {
			again += " --account " + account
		}
		return failedError{fmt.Sprintf("erasure of %s incomplete: %d event(s) skipped, %d error(s) (see above); "+
			"run `inboxctl erase %s --yes` again once they are settled", customer, out.Skipped, out.Failed, again)}
	}
	return nil
}

func eraseJSON(e ops.Erasure) EraseJSON {
	items := func(in []ops.ErasedItem) []EraseItemJSON {
		out := []EraseItemJSON{}
		for _, it := range in {
			out = append(
				out,
				EraseItemJSON{ID: it.ID, Object: it.Object, Type: it.Type, State: it.State, Status: it.Status, Action: it.Action, Detail: it.Detail},
			)
		}
		return out
	}
	return EraseJSON{Customer: e.Customer, Account: e.Account, DryRun: e.DryRun, Mirror: items(e.Mirror), Events: items(e.Events), Skipped: e.Skipped, Failed: e.Failed}
}

func (a *app) eraseAction(act string) string {
	switch act {
	case ops.EraseErased, ops.EraseDeleted, ops.EraseWouldErase, ops.EraseWouldDelete, ops.EraseAlreadyErased, ops.EraseGone:
		return a.paint(green, act)
	case ops.EraseSkipped:
		return a.paint(yellow, act)
	}
	return a.paint(red, act)
}

func (a *app) printErase(out EraseJSON) error {
	if out.DryRun {
		fmt.Fprintf(a.stdout, "dry run: nothing was changed; run again with --yes to erase what is listed\n\n")
	}
	who := out.Customer
	if out.Account != "" {
		who += " of account " + out.Account
	}
	fmt.Fprintf(a.stdout, "mirror of %s (snapshots become erased tombstones: ids and ordering kept, data removed)\n", who)
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

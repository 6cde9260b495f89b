package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// AccountsCursor names the checkpoint that keeps, across runs, where the
// reading of provider's accounts seen resumes (its Cursor: the last
// account reached, "" for the first).
func AccountsCursor(provider string) string { return provider + "#accounts_cursor" }

// accounts returns the run's first groups: the configured ones, then
// those of every connected account listed at its start (the accounts seen
// come a page at a time: seenPage). A source that fails is noted in rn and
// leaves the others' accounts listed.
func (r *Reconciler) accounts(ctx context.Context, rn *run) []Group {
	if r.cfg.ListAccounts == nil {
		accounts := uniqueAccounts(r.cfg.ConnectAccounts)
		rn.res.Accounts = len(accounts)
		rn.known = accounts
		return r.groups
	}
	accounts := slices.Clone(r.cfg.ConnectAccounts)
	if r.cfg.ListAccounts != nil {
		listed, err := r.cfg.ListAccounts.ListAccounts(ctx)
		if err != nil {
			rn.accountErrs = append(rn.accountErrs, fmt.Errorf("reconcile: accounts listed: %w", err))
		}
		accounts = append(accounts, listed...)
	}
	rn.res.AccountFailures = len(rn.accountErrs)
	accounts = uniqueAccounts(accounts)
	rn.res.Accounts = len(accounts)
	rn.known = accounts
	return AccountGroups(r.cfg.Provider, r.cfg.Types, accounts)
}

// seenPage reads the next page of accounts seen from the run's cursor and
// returns the groups of those the run does not list already, with the
// accounts and next (the page's, "" when the list ended). ok is false when
// the page cannot be read (noted in rn).
func (rn *run) seenPage(ctx context.Context) (groups []Group, accounts []string, next string, ok bool) {
	r := rn.r
	accounts, next, err := r.cfg.SeenAccounts.Page(ctx, r.cfg.Provider, rn.cursor.Cursor, r.cfg.AccountsPage)
	if err != nil {
		rn.accountErrs = append(rn.accountErrs, fmt.Errorf("reconcile: accounts seen: %w", err))
		rn.res.AccountFailures = len(rn.accountErrs)
		return nil, nil, "", false
	}
	var fresh []string
	for _, a := range accounts {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(rn.known, a) {
			fresh = append(fresh, a)
		}
	}
	rn.res.Accounts += len(fresh)
	for _, g := range AccountGroups(r.cfg.Provider, r.cfg.Types, fresh) {
		if g.Account != "" {
			groups = append(groups, g)
		}
	}
	return groups, accounts, next, true
}

// uniqueAccounts returns accounts without blanks or repeats, in order.
func uniqueAccounts(accounts []string) []string {
	var out []string
	for _, a := range accounts {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// seen lists the run's groups with the first page of accounts seen, then
// the following pages while the budget lasts, and moves the cursor past
// the accounts reached.
func (rn *run) seen(ctx context.Context) error {
	cursor, err := rn.r.cfg.Checkpoints.Load(ctx, AccountsCursor(rn.r.cfg.Provider))
	if err != nil {
		return err
	}
	rn.cursor = cursor
	base := rn.groups
	for {
		page, accounts, next, ok := rn.seenPage(ctx)
		groups := append(slices.Clone(base), page...)
		rn.groups = append(rn.groups, page...)
		rn.progress.Groups = len(rn.groups)
		reached, err := rn.pass(ctx, groups)
		if err != nil || !ok {
			return err
		}
		// The cursor moves past the longest run of the page's accounts
		// whose every group had its turn.
		missed := map[string]bool{}
		for i, g := range groups {
			if g.Account != "" && !reached[i] {
				missed[g.Account] = true
			}
		}
		last, all := rn.cursor.Cursor, true
		for _, a := range accounts {
			if missed[a] {
				all = false
				break
			}
			last = a
		}
		if all && next == "" {
			last = "" // the list ended: the next run starts over
		}
		switch {
		case last == rn.cursor.Cursor:
		case rn.opts.Since > 0:
			// An operator's sweep leaves the checkpoints untouched.
			rn.cursor.Cursor = last
		default:
			saved, err := rn.save(ctx, rn.cursor, store.Checkpoint{Name: rn.cursor.Name, Cursor: last})
			if errors.Is(err, store.ErrCheckpointMoved) {
				rn.res.Stopped = outcome.StopCheckpointMoved
				return nil
			}
			if err != nil {
				return err
			}
			rn.cursor = saved
		}
		if !all || next == "" || !rn.mayContinue(ctx) {
			return nil
		}
		base = nil
	}
}

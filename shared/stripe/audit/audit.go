package audit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/stripeapi"
)

// Lister lists Stripe's subscriptions; *stripeapi.Client implements it.
type Lister interface {
	ListSubscriptions(ctx context.Context, q stripeapi.SubscriptionQuery, page func(stripeapi.SubscriptionPage) (bool, error)) error
}

// Writer commits a repair's writes; *dynamodb.Client implements it.
type Writer interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// Auditor audits the mirror against Stripe's API.
type Auditor struct {
	API    Lister
	Mirror *mirror.Mirror
	Reader *mirror.Reader
	DB     Writer
	// Scan lists the mirror's subscriptions for UnknownThere; nil leaves
	// it uncounted.
	Scan mirror.ScanDB
	// Effects, when set, are the team's effects, run by each repair as an
	// event applying the object would run them (RepairEvent); nil, the
	// default, runs none. A dry run runs none either.
	Effects Effects
	// Runs, when set, keeps each run's summary and repairs for operators
	// (the console's audit page, inboxctl status).
	Runs Runs
	// ConnectAccounts are connected accounts (Stripe Connect) audited
	// after the platform's own subscriptions, each under its own keys;
	// ListAccounts, when set, adds every account the platform lists;
	// SeenAccounts, when set, every account the inbox has stored an event
	// of.
	ConnectAccounts []string
	ListAccounts    AccountLister
	SeenAccounts    AccountPager
	// Provider names the runs' provider for Runs; Stripe's when empty.
	Provider string
	Now      func() time.Time
}

// AccountLister lists the platform's connected accounts;
// *stripeapi.Client implements it.
type AccountLister interface {
	ListAccounts(ctx context.Context) ([]string, error)
}

// AccountPager pages the connected accounts the inbox has stored an event
// of, sorted; *store.Accounts implements it.
type AccountPager interface {
	Page(ctx context.Context, provider, after string, limit int) (accounts []string, next string, err error)
}

// Effects runs the team's effects for an event; *effect.Registry
// implements it.
type Effects interface {
	Run(ctx context.Context, rec event.Record, payload []byte) ([]types.TransactWriteItem, error)
}

// Runs keeps audit runs; *store.Runs implements it.
type Runs interface {
	RecordAudit(ctx context.Context, provider string, run store.AuditRun) error
}

// Options configure one run.
type Options struct {
	// DryRun writes nothing: the result says what would be repaired.
	DryRun bool
	// MaxPages stops the run after this many pages (zero: the whole list);
	// Result.Cursor says where the next run resumes.
	MaxPages int
	// StartingAfter resumes a stopped run after this subscription id.
	StartingAfter string
	// StopAt, when set, stops the run after the first page handled at or
	// after it, as MaxPages does (Result.Cursor): a scheduled run ends
	// before its function's timeout.
	StopAt time.Time
	// Account audits a connected account's subscriptions; "" the
	// platform's own.
	Account string
}

// Result is what a run found. Its JSON is inboxctl audit --json's.
type Result struct {
	RunID string `json:"run_id"`
	// Listed counts the subscriptions Stripe listed; Matched those the
	// mirror agrees with; Repaired those it differed on (with DryRun:
	// would be repaired); MissingHere those the mirror lacked (repaired as
	// a backfill is, counted in Repaired too).
	Listed      int `json:"listed"`
	Matched     int `json:"matched"`
	Repaired    int `json:"repaired"`
	MissingHere int `json:"missing_here"`
	// UnknownThere counts the subscriptions the mirror has that Stripe did
	// not list (Unknown, the first 100 of them); counted only by a run
	// that lists from the start to the end.
	UnknownThere int      `json:"unknown_there"`
	Unknown      []string `json:"unknown,omitempty"`
	Pages        int      `json:"pages"`
	DryRun       bool     `json:"dry_run"`
	// Raced counts repairs a newer event beat: the event's state stands.
	Raced int `json:"raced"`
	// Cursor is where a run stopped by MaxPages resumes; "" when the list
	// ended.
	Cursor  string   `json:"cursor,omitempty"`
	Repairs []Repair `json:"repairs"`
	// Effects counts the repairs that ran the team's effects (only with
	// Auditor.Effects set).
	Effects int `json:"effects,omitempty"`
	// NotRecorded says why the run's record (Auditor.Runs) could not be
	// written; the run itself stands.
	NotRecorded string `json:"not_recorded,omitempty"`
}

// Repair is one subscription the run repaired (or, with DryRun, would).
type Repair struct {
	ID       string   `json:"id"`
	Account  string   `json:"account,omitempty"`
	Customer string   `json:"customer,omitempty"`
	Missing  bool     `json:"missing_here,omitempty"`
	Changes  []string `json:"changes"`
	// At is when the page was asked for: the API's state is at least
	// that recent.
	At time.Time `json:"at"`
}

// Run audits the mirror's subscriptions.
func (a *Auditor) Run(ctx context.Context, o Options) (Result, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	started := now()
	res, err := a.run(ctx, o, now)
	a.record(ctx, o, started, now(), &res, err)
	return res, err
}

// record keeps the run's summary (Runs), when set.
func (a *Auditor) record(ctx context.Context, o Options, started, finished time.Time, res *Result, runErr error) {
	if a.Runs == nil {
		return
	}
	provider := a.Provider
	if provider == "" {
		provider = event.ProviderStripe
	}
	if err := a.Runs.RecordAudit(ctx, provider, res.Summary(started, finished, o.StartingAfter, runErr)); err != nil {
		res.NotRecorded = err.Error()
	}
}

// Summary is the run as store.Runs keeps it.
func (r Result) Summary(started, finished time.Time, resumedAfter string, err error) store.AuditRun {
	run := store.AuditRun{
		ID: r.RunID, StartedAt: started, FinishedAt: finished, DryRun: r.DryRun, ResumedAfter: resumedAfter, Cursor: r.Cursor,
		Listed: r.Listed, Matched: r.Matched, Repaired: r.Repaired, MissingHere: r.MissingHere, UnknownThere: r.UnknownThere,
		Raced: r.Raced, Pages: r.Pages,
	}
	if err != nil {
		run.Error = err.Error()
	}
	for _, rp := range r.Repairs {
		run.Repairs = append(run.Repairs, store.AuditRepair{
			ID: rp.ID, Account: rp.Account, Customer: rp.Customer, Missing: rp.Missing, Changes: rp.Changes, At: rp.At,
		})
	}
	return run
}

func (a *Auditor) run(ctx context.Context, o Options, now func() time.Time) (Result, error) {
	res := Result{RunID: "audit_" + nonce(), DryRun: o.DryRun, Repairs: []Repair{}}
	// The platform's own first, then each connected account, sorted: a
	// cursor (Key(account, id)) says where in that order to resume.
	accounts := []string{o.Account}
	if o.Account == "" {
		more, err := a.accounts(ctx)
		if err != nil {
			return res, fmt.Errorf("audit: %w", err)
		}
		accounts = append(accounts, more...)
	}
	fromAccount, after := mirror.SplitKey(o.StartingAfter)
	first := 0
	if o.Account == "" && fromAccount != "" {
		first = len(accounts)
		for i := 1; i < len(accounts); i++ {
			if accounts[i] >= fromAccount {
				first = i
				break
			}
		}
		if first < len(accounts) && accounts[first] != fromAccount {
			after = "" // the cursor's account is gone: the next one from its start
		}
	}
	listed := map[string]bool{}
	audited := map[string]bool{}
	for i := first; i < len(accounts); i++ {
		acct := accounts[i]
		if i > first {
			after = ""
		}
		spent, err := a.account(ctx, acct, after, o, now, &res, listed)
		audited[acct] = true
		if err != nil {
			return res, fmt.Errorf("audit: %w", err)
		}
		if res.Cursor != "" {
			return res, nil
		}
		if spent && i+1 < len(accounts) {
			// The budget ran out with this account's list: the next run
			// starts the next account.
			res.Cursor = mirror.Key(accounts[i+1], "")
			return res, nil
		}
	}
	if a.Scan != nil && o.StartingAfter == "" {
		keys, err := a.Reader.SubscriptionIDs(ctx, a.Scan)
		if err != nil {
			return res, fmt.Errorf("audit: %w", err)
		}
		for _, key := range keys {
			// Only the accounts this run listed: their subscriptions
			// Stripe did not list are unknown there.
			if acct, _ := mirror.SplitKey(key); audited[acct] && !listed[key] {
				res.UnknownThere++
				if len(res.Unknown) < 100 {
					res.Unknown = append(res.Unknown, key)
				}
			}
		}
	}
	return res, nil
}

// account audits one account's subscriptions ("" the platform's own)
// after the subscription after, adding to res and listed (their keys).
// It reports whether the run's budget (MaxPages, StopAt) is spent; when
// it is spent before the account's list ends, res.Cursor says where to
// resume, as it does when the list fails.
func (a *Auditor) account(ctx context.Context, acct, after string, o Options, now func() time.Time, res *Result, listed map[string]bool) (bool, error) {
	spent := false
	// Each page's repairs are stamped with the time before it was
	// requested: the API's state is at least that recent.
	asked := now()
	err := a.API.ListSubscriptions(
		ctx,
		stripeapi.SubscriptionQuery{StartingAfter: after, Account: acct},
		func(p stripeapi.SubscriptionPage) (bool, error) {
			res.Pages++
			if err := a.page(ctx, p, asked, acct, o, res); err != nil {
				return false, err
			}
			for _, raw := range p.Subscriptions {
				after = idOf(raw)
				listed[mirror.Key(acct, after)] = true
			}
			asked = now()
			budget := o.MaxPages > 0 && res.Pages >= o.MaxPages
			late := !o.StopAt.IsZero() && !asked.Before(o.StopAt)
			spent = budget || late
			if spent && p.HasMore {
				res.Cursor = mirror.Key(acct, after)
				return false, nil
			}
			return true, nil
		},
	)
	if err != nil {
		// Where it got to: the next run resumes there.
		res.Cursor = mirror.Key(acct, after)
		if after == "" && acct != "" {
			res.Cursor = mirror.Key(acct, "")
		}
		return spent, err
	}
	return spent, nil
}

// accounts lists the connected accounts to audit, sorted, once each: the
// configured ones, the ones the platform lists (ListAccounts) and the ones
// the inbox has seen (SeenAccounts, paged).
func (a *Auditor) accounts(ctx context.Context) ([]string, error) {
	set := map[string]bool{}
	for _, acct := range a.ConnectAccounts {
		set[acct] = true
	}
	if a.ListAccounts != nil {
		ids, err := a.ListAccounts.ListAccounts(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the platform's accounts: %w", err)
		}
		for _, acct := range ids {
			set[acct] = true
		}
	}
	if a.SeenAccounts != nil {
		provider := a.Provider
		if provider == "" {
			provider = event.ProviderStripe
		}
		for after := ""; ; {
			ids, next, err := a.SeenAccounts.Page(ctx, provider, after, 1000)
			if err != nil {
				return nil, fmt.Errorf("read the accounts seen: %w", err)
			}
			for _, acct := range ids {
				set[acct] = true
			}
			if next == "" {
				break
			}
			after = next
		}
	}
	delete(set, "")
	out := make([]string, 0, len(set))
	for acct := range set {
		out = append(out, acct)
	}
	slices.Sort(out)
	return out, nil
}

// page compares and repairs one page.
func (a *Auditor) page(ctx context.Context, p stripeapi.SubscriptionPage, asked time.Time, acct string, o Options, res *Result) error {
	ids := make([]string, 0, len(p.Subscriptions))
	keys := make([]string, 0, len(p.Subscriptions))
	for _, raw := range p.Subscriptions {
		ids = append(ids, idOf(raw))
		keys = append(keys, mirror.Key(acct, ids[len(ids)-1]))
	}
	// One account's page: the snapshots come back by id.
	snaps, err := a.Reader.Objects(ctx, keys)
	if err != nil {
		return err
	}
	for i, raw := range p.Subscriptions {
		res.Listed++
		snap, here := snaps[ids[i]]
		var changes []string
		if here {
			if changes, err = mirror.Differences(snap, raw); err != nil {
				return err
			}
			if len(changes) == 0 {
				res.Matched++
				continue
			}
			if snap.LastEventCreated >= asked.Unix() {
				// The mirror holds a state of the page's second or
				// later: the page may be the older of the two. The next
				// run compares again.
				res.Raced++
				continue
			}
		} else {
			res.MissingHere++
			changes = []string{"missing here"}
		}
		rep := Repair{ID: ids[i], Account: acct, Customer: customerOf(raw), Missing: !here, Changes: changes, At: asked.UTC()}
		if !o.DryRun {
			var seen *mirror.Snapshot
			if here {
				seen = &snap
			}
			won, ran, err := a.repair(ctx, raw, asked, res.RunID, acct, seen, changes)
			if err != nil {
				return err
			}
			if !won {
				res.Raced++
				continue
			}
			if ran {
				res.Effects++
			}
		}
		res.Repaired++
		res.Repairs = append(res.Repairs, rep)
	}
	return nil
}

// repair writes the API's object in place of seen (the snapshot the page's
// read found, nil when there was none) and, with Effects, the effects'
// writes and their claim (mirror.ClaimPut) in the same transaction. It
// reports false when the mirror no longer holds what was read (an event
// was applied since: its state stands), and whether effects ran.
//
// Everything that can be known is checked before an effect's outside
// call: the snapshot is read again, strongly consistent, just before the
// effects run. What remains is the moment between that read and the
// transaction: an event applied then makes the transaction fail after the
// effects ran (raced). Their idempotency keys are the object's and the
// state's (RepairEvent), so the next repair to that state reuses them.
func (a *Auditor) repair(ctx context.Context, raw json.RawMessage, asked time.Time, runID, account string, seen *mirror.Snapshot, changes []string) (won, ran bool, err error) {
	plan, err := a.Mirror.PlanRepair(raw, mirror.Version{
		Created: asked.Unix(), ID: runID, Type: "audit", Source: mirror.SourceAudit, Changes: changes, Account: account,
	}, seen)
	if err != nil {
		return false, false, err
	}
	writes := plan.Writes
	if a.Effects != nil && !History(raw, seen == nil) {
		if same, err := a.unchanged(ctx, plan.Key, seen); err != nil || !same {
			return false, false, err
		}
		rec, payload, err := RepairEvent(raw, account, seen == nil, asked)
		if err != nil {
			return false, false, err
		}
		claim, err := mirror.ClaimKey(account, raw)
		if err != nil {
			return false, false, err
		}
		w, err := a.Effects.Run(ctx, rec, payload)
		if err != nil {
			return false, false, fmt.Errorf("repair %s: %w", plan.Key, err)
		}
		writes = slices.Concat(writes, w, []types.TransactWriteItem{a.Mirror.ClaimPut(claim, asked.Unix(), rec.ID)})
		ran = true
	}
	_, err = a.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: writes})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return false, false, nil
			}
		}
	}
	if err != nil {
		return false, false, fmt.Errorf("repair %s: %w", plan.Key, err)
	}
	return true, ran, nil
}

// unchanged reads the snapshot of key again, strongly consistent (the
// batched read the page used, for one key: no other permission), and
// reports whether it is still seen (nil: still none).
func (a *Auditor) unchanged(ctx context.Context, key string, seen *mirror.Snapshot) (bool, error) {
	snaps, err := a.Reader.Objects(ctx, []string{key})
	if err != nil {
		return false, fmt.Errorf("repair %s: %w", key, err)
	}
	_, id := mirror.SplitKey(key)
	now, here := snaps[id]
	if !here {
		return seen == nil, nil
	}
	return seen != nil && now.LastEventID == seen.LastEventID && now.LastEventCreated == seen.LastEventCreated, nil
}

// History reports whether a repair of the subscription obj is history,
// which runs no effect (as a backfilled event runs none in the
// processor): one the mirror lacked (missing) that is in a final state,
// canceled or incomplete_expired. Such a subscription ended with no event
// of it ever applied here; its end was the business of whatever handled
// it then. A subscription the mirror lacks that is still live is not
// history: its effects run (as customer.subscription.created).
func History(obj json.RawMessage, missing bool) bool {
	if !missing {
		return false
	}
	var o struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(obj, &o)
	return o.Status == "canceled" || o.Status == "incomplete_expired"
}

// RepairEvent is the event a repair runs the team's effects as: the type
// an event applying the object would have (customer.subscription.created
// for one the mirror lacked, .deleted for a canceled one, .updated
// otherwise), the API's object as its data.object, and an id derived
// from the object and the state the repair writes (mirror.State), so its
// effects' idempotency keys (effect.Key) are the same for every run that
// repairs the object to that state: an audit run again after a failure
// does not run an effect twice, while a later drift to another state is
// an effect of its own.
func RepairEvent(raw json.RawMessage, account string, missing bool, asked time.Time) (event.Record, []byte, error) {
	var o struct {
		ID       string `json:"id"`
		Object   string `json:"object"`
		Status   string `json:"status"`
		Livemode bool   `json:"livemode"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.ID == "" {
		return event.Record{}, nil, fmt.Errorf("audit: the API's object has no id")
	}
	state, err := mirror.State(raw)
	if err != nil {
		return event.Record{}, nil, err
	}
	sum := sha256.Sum256([]byte(account + "\x00" + o.ID + "\x00" + state))
	typ := "customer.subscription.updated"
	switch {
	case missing:
		typ = "customer.subscription.created"
	case o.Status == "canceled":
		typ = "customer.subscription.deleted"
	}
	rec := event.Record{
		Provider: event.ProviderStripe, ID: "audit_" + hex.EncodeToString(sum[:12]), Type: typ, Created: asked.Unix(),
		Livemode: o.Livemode, Account: account, ObjectID: o.ID, ObjectType: o.Object, Source: event.SourceAudit,
	}
	env := map[string]any{
		"id": rec.ID, "object": "event", "type": typ, "created": rec.Created, "livemode": o.Livemode,
		"data": map[string]json.RawMessage{"object": raw},
	}
	if account != "" {
		env["account"] = account
	}
	payload, err := json.Marshal(env)
	if err != nil {
		return event.Record{}, nil, err
	}
	return rec, payload, nil
}

func idOf(raw json.RawMessage) string {
	var o struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.ID
}

func customerOf(raw json.RawMessage) string {
	var o struct {
		Customer json.RawMessage `json:"customer"`
	}
	if json.Unmarshal(raw, &o) != nil || len(o.Customer) == 0 {
		return ""
	}
	var id string
	if json.Unmarshal(o.Customer, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(o.Customer, &obj)
	return obj.ID
}

func nonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/mirror"
	"github.com/webhook-inbox/webhook-inbox/shared/stripeapi"
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
	Now  func() time.Time
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
}

// Repair is one subscription the run repaired (or, with DryRun, would).
type Repair struct {
	ID       string   `json:"id"`
	Customer string   `json:"customer,omitempty"`
	Missing  bool     `json:"missing_here,omitempty"`
	Changes  []string `json:"changes"`
}

// Run audits the mirror's subscriptions.
func (a *Auditor) Run(ctx context.Context, o Options) (Result, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	res := Result{RunID: "audit_" + nonce(), DryRun: o.DryRun, Repairs: []Repair{}}
	listed := map[string]bool{}
	after := o.StartingAfter
	// Each page's repairs are stamped with the time before it was
	// requested: the API's state is at least that recent.
	asked := now()
	err := a.API.ListSubscriptions(
		ctx,
		stripeapi.SubscriptionQuery{StartingAfter: o.StartingAfter, Account: o.Account},
		func(p stripeapi.SubscriptionPage) (bool, error) {
			res.Pages++
			if err := a.page(ctx, p, asked, o, &res); err != nil {
				return false, err
			}
			for _, raw := range p.Subscriptions {
				after = idOf(raw)
				listed[after] = true
			}
			asked = now()
			budget := o.MaxPages > 0 && res.Pages >= o.MaxPages
			late := !o.StopAt.IsZero() && !asked.Before(o.StopAt)
			if (budget || late) && p.HasMore {
				res.Cursor = after
				return false, nil
			}
			return true, nil
		},
	)
	if err != nil {
		// Where it got to: the next run resumes there.
		res.Cursor = after
		return res, fmt.Errorf("audit: %w", err)
	}
	if a.Scan != nil && o.StartingAfter == "" && res.Cursor == "" {
		ids, err := a.Reader.SubscriptionIDs(ctx, a.Scan)
		if err != nil {
			return res, fmt.Errorf("audit: %w", err)
		}
		for _, id := range ids {
			if !listed[id] {
				res.UnknownThere++
				if len(res.Unknown) < 100 {
					res.Unknown = append(res.Unknown, id)
				}
			}
		}
	}
	return res, nil
}

// page compares and repairs one page.
func (a *Auditor) page(ctx context.Context, p stripeapi.SubscriptionPage, asked time.Time, o Options, res *Result) error {
	ids := make([]string, 0, len(p.Subscriptions))
	for _, raw := range p.Subscriptions {
		ids = append(ids, idOf(raw))
	}
	snaps, err := a.Reader.Objects(ctx, ids)
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
		} else {
			res.MissingHere++
			changes = []string{"missing here"}
		}
		rep := Repair{ID: ids[i], Customer: customerOf(raw), Missing: !here, Changes: changes}
		if !o.DryRun {
			won, err := a.repair(ctx, raw, asked, res.RunID, changes)
			if err != nil {
				return err
			}
			if !won {
				res.Raced++
				continue
			}
		}
		res.Repaired++
		res.Repairs = append(res.Repairs, rep)
	}
	return nil
}

// repair writes the API's object through the mirror's guarded write; it
// reports false when a newer event won the guard.
func (a *Auditor) repair(ctx context.Context, raw json.RawMessage, asked time.Time, runID string, changes []string) (bool, error) {
	plan, err := a.Mirror.PlanState(raw, mirror.Version{
		Created: asked.Unix(), ID: runID, Type: "audit", Source: mirror.SourceAudit, Changes: changes,
	})
	if err != nil {
		return false, err
	}
	_, err = a.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: plan.Writes})
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return false, nil
			}
		}
	}
	if err != nil {
		return false, fmt.Errorf("repair %s: %w", plan.Key, err)
	}
	return true, nil
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

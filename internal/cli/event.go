package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// EventJSON is the stable JSON shape of an event record (inboxctl event
// --json). Times are RFC 3339 in UTC, empty when not set.
type EventJSON struct {
	ID             string `json:"id"`
	Provider       string `json:"provider"`
	Type           string `json:"type"`
	Status         string `json:"status"`
	Outcome        string `json:"outcome,omitempty"`
	Source         string `json:"source"`
	Attempts       int    `json:"attempts"`
	Created        int64  `json:"created"`
	Livemode       bool   `json:"livemode"`
	APIVersion     string `json:"api_version,omitempty"`
	Account        string `json:"account,omitempty"`
	ObjectID       string `json:"object_id,omitempty"`
	ObjectType     string `json:"object_type,omitempty"`
	ReceivedAt     string `json:"received_at"`
	ClaimedAt      string `json:"claimed_at,omitempty"`
	ProcessedAt    string `json:"processed_at,omitempty"`
	StatusAt       string `json:"status_at"`
	LeaseOwner     string `json:"lease_owner,omitempty"`
	LeaseUntil     string `json:"lease_until,omitempty"`
	LastError      string `json:"last_error,omitempty"`
	LastErrorAt    string `json:"last_error_at,omitempty"`
	PayloadHash    string `json:"payload_hash"`
	PayloadOmitted bool   `json:"payload_omitted"`
	MirrorKey      string `json:"mirror_key,omitempty"`
	// DiscardedAt and DiscardReason: an operator dropped the event's
	// dead-letter message (inboxctl dlq discard), when and why.
	DiscardedAt   string `json:"discarded_at,omitempty"`
	DiscardReason string `json:"discard_reason,omitempty"`
	// Mirror is the snapshot of the object the event touched (MirrorKey)
	// as it stands now; absent when the event touched none.
	Mirror *mirror.Snapshot `json:"mirror,omitempty"`
}

// ToJSON converts a record to its JSON shape.
func ToJSON(r event.Record) EventJSON {
	return EventJSON{
		ID: r.ID, Provider: r.Provider, Type: r.Type, Status: string(r.Status), Outcome: string(r.Outcome),
		Source: string(r.Source), Attempts: r.Attempts, Created: r.Created, Livemode: r.Livemode,
		APIVersion: r.APIVersion, Account: r.Account, ObjectID: r.ObjectID, ObjectType: r.ObjectType,
		ReceivedAt: ts(r.ReceivedAt), ClaimedAt: ts(r.ClaimedAt), ProcessedAt: ts(r.ProcessedAt), StatusAt: ts(r.StatusAt),
		LeaseOwner: r.LeaseOwner, LeaseUntil: ts(r.LeaseUntil), LastError: r.LastError, LastErrorAt: ts(r.LastErrorAt),
		PayloadHash: r.PayloadHash, PayloadOmitted: r.PayloadOmitted, MirrorKey: r.MirrorKey,
		DiscardedAt: ts(r.DiscardedAt), DiscardReason: r.DiscardReason,
	}
}

func (a *app) eventCmd() *cobra.Command {
	var asJSON, payload bool
	prov := event.ProviderStripe
	cmd := &cobra.Command{
		Use:   "event <event-id>",
		Short: "Show one event: status, source, attempts, times, last error, outcome, and the object it touched",
		Example: `  inboxctl event evt_1Q2w3e4r5t6y7u8i
  inboxctl event evt_1Q2w3e4r5t6y7u8i --json | jq .status
  inboxctl event evt_1Q2w3e4r5t6y7u8i --payload > captured.json`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, v []string) error {
			if asJSON && payload {
				return usagef("--json and --payload exclude each other")
			}
			if err := a.checkProvider(prov); err != nil {
				return err
			}
			return a.event(cmd.Context(), prov, v[0], asJSON, payload)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the record as JSON (EventJSON in docs/cli.md)")
	cmd.Flags().BoolVar(&payload, "payload", false, "print only the raw payload, exactly as it was signed and stored")
	cmd.Flags().StringVar(&prov, "provider", event.ProviderStripe, "the provider whose event id this is: stripe, github, shopify or standard")
	return cmd
}

func (a *app) event(ctx context.Context, prov, id string, asJSON, payload bool) error {
	s, err := a.open(ctx, withEvents)
	if err != nil {
		return err
	}
	events := s.Events
	rec, err := events.Get(ctx, prov, id)
	if errors.Is(err, store.ErrNotFound) {
		if prov != event.ProviderStripe {
			return fmt.Errorf("no %s event %s in table %s: check the id, and --stage or --events-table", prov, id, events.Table)
		}
		return fmt.Errorf("no event %s in table %s: check the id, and --stage or --events-table", id, events.Table)
	}
	var pe *store.PayloadError
	if errors.As(err, &pe) && !payload {
		// The record itself (its status and last error) is what the
		// operator came for; only --payload needs the payload.
		rec, err = pe.Record, nil
	}
	if err != nil {
		return a.tableHint(events.Table, err)
	}
	if payload {
		return a.writePayload(prov, id, rec)
	}
	j := ToJSON(rec)
	if err := a.addMirror(ctx, rec, &j); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.stdout, j)
	}
	return a.rows(a.eventRows(prov, rec, j))
}

func sinceText(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return " (since " + when(t) + ", " + ago(now, t) + ")"
}

// mirrorRows describe a snapshot, and whether eventID is the event it
// reflects.
func mirrorRows(s *mirror.Snapshot, eventID string) [][2]string {
	state := "current"
	switch {
	case s.Erased:
		state = "erased"
	case s.Deleted:
		state = "deleted"
	}
	latest := fmt.Sprintf("%s %s (created %s)", s.LastEventID, s.LastEventType, unix(s.LastEventCreated))
	rows := [][2]string{
		{"mirror", fmt.Sprintf("%s %s, %s", s.Object, s.ID, state)},
		{"mirror_customer", s.Customer},
		{"mirror_last_event", latest},
	}
	if eventID != "" {
		if s.LastEventID == eventID {
			rows = append(rows, [2]string{"mirror_reflects", "this event"})
		} else {
			rows = append(rows, [2]string{"mirror_reflects", "a later event: " + s.LastEventID})
		}
	}
	return rows
}

// writePayload writes an event's payload exactly as it was signed and
// stored, or says why there is none to write.
func (a *app) writePayload(prov, id string, rec event.Record) error {
	if prov != event.ProviderStripe && (rec.PayloadOmitted || len(rec.Payload) == 0) && !rec.PayloadErased {
		// Only Stripe has an API to read an event back from.
		return fmt.Errorf("%s event %s has no stored payload (too large to store, or past the stack's PayloadRetentionDays), and %s has no API to read it from",
			prov, id, prov)
	}
	if rec.PayloadOmitted {
		return fmt.Errorf("event %s was stored without its payload (too large even compressed): read it from Stripe's API (GET /v1/events/%s)", id, id)
	}
	if rec.PayloadErased {
		return fmt.Errorf("event %s has no stored payload: it was erased (inboxctl erase)", id)
	}
	if len(rec.Payload) == 0 {
		// Kept for PAYLOAD_RETENTION_DAYS, shorter than the record.
		return fmt.Errorf("event %s has no stored payload any more: a payload is kept for the stack's PayloadRetentionDays after it was received; "+
			"read it from Stripe's API (GET /v1/events/%s) while Stripe keeps it", id, id)
	}
	_, err := a.stdout.Write(rec.Payload)
	return err
}

// addMirror adds to j the mirror's object the event was applied to, if
// the record names one and the mirror still holds it.
func (a *app) addMirror(ctx context.Context, rec event.Record, j *EventJSON) error {
	if rec.MirrorKey != "" {
		ms, err := a.open(ctx, withMirror)
		if err != nil {
			return err
		}
		mr := ms.Mirror
		snap, err := mr.Object(ctx, rec.MirrorKey)
		switch {
		case errors.Is(err, mirror.ErrNotFound):
		case err != nil:
			return a.tableHint(mr.Table, err)
		default:
			j.Mirror = &snap
		}
	}
	return nil
}

// eventRows are an event's rows, as inboxctl event prints them.
func (a *app) eventRows(prov string, rec event.Record, j EventJSON) [][2]string {
	now := a.now()
	lease := ""
	if j.LeaseOwner != "" {
		lease = fmt.Sprintf("%s until %s", j.LeaseOwner, when(rec.LeaseUntil))
	}
	object := j.ObjectID
	if j.ObjectType != "" {
		object = j.ObjectType + " " + j.ObjectID
	}
	pairs := [][2]string{}
	if prov != event.ProviderStripe {
		pairs = append(pairs, [2]string{"provider", prov})
	}
	pairs = append(pairs, [][2]string{
		{"id", j.ID}, {"type", j.Type}, {"status", a.status(j.Status) + sinceText(now, rec.StatusAt)},
		{"outcome", j.Outcome}, {"source", j.Source}, {"attempts", fmt.Sprint(j.Attempts)},
		{"created", unix(j.Created)}, {"livemode", fmt.Sprint(j.Livemode)}, {"api_version", j.APIVersion},
		{"account", j.Account}, {"object", object},
		{"received_at", when(rec.ReceivedAt)}, {"claimed_at", when(rec.ClaimedAt)}, {"processed_at", when(rec.ProcessedAt)},
		{"lease", lease}, {"last_error", a.paint(red, j.LastError)}, {"last_error_at", when(rec.LastErrorAt)},
		{"payload_hash", j.PayloadHash},
	}...)
	switch {
	case rec.PayloadOmitted && prov != event.ProviderStripe:
		pairs = append(pairs, [2]string{"payload", "not stored (too large); " + prov + " has no API to read it from"})
	case rec.PayloadOmitted:
		pairs = append(pairs, [2]string{"payload", "not stored (too large); the processor reads it from Stripe's API"})
	}
	if !rec.DiscardedAt.IsZero() {
		pairs = append(pairs, [2]string{"discarded",
			fmt.Sprintf("%s: %s (its dead-letter message was deleted: inboxctl dlq discard)", when(rec.DiscardedAt), rec.DiscardReason)})
	}
	switch {
	case rec.MirrorKey == "":
	case j.Mirror == nil:
		pairs = append(pairs, [2]string{"mirror", rec.MirrorKey + " (no longer in the mirror)"})
	default:
		pairs = append(pairs, mirrorRows(j.Mirror, rec.ID)...)
	}
	return pairs
}

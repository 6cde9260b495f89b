package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
	"github.com/webhook-inbox/webhook-inbox/shared/store"
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
	}
}

func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (a *app) eventCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "event <event-id>",
		Short: "Show one event's record: status, attempts, times, last error, outcome",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.event(cmd.Context(), args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the record as JSON")
	return cmd
}

func (a *app) event(ctx context.Context, id string, asJSON bool) error {
	db, err := a.dynamo(ctx)
	if err != nil {
		return err
	}
	table, _, _, err := a.resources(ctx)
	if err != nil {
		return err
	}
	events := &store.Events{DB: db, Table: table}
	rec, err := events.Get(ctx, event.ProviderStripe, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no event %s in table %s (check the id, or --stage/--events-table)", id, table)
	}
	if err != nil {
		return hint(err)
	}
	j := ToJSON(rec)
	if asJSON {
		return writeJSON(a.stdout, j)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"id", j.ID}, {"type", j.Type}, {"status", j.Status}, {"outcome", j.Outcome}, {"source", j.Source},
		{"attempts", fmt.Sprint(j.Attempts)}, {"created", time.Unix(j.Created, 0).UTC().Format(time.RFC3339)},
		{"livemode", fmt.Sprint(j.Livemode)}, {"api_version", j.APIVersion}, {"object", j.ObjectType + " " + j.ObjectID},
		{"received_at", j.ReceivedAt}, {"claimed_at", j.ClaimedAt}, {"processed_at", j.ProcessedAt},
		{"lease", j.LeaseOwner + " " + j.LeaseUntil}, {"last_error", j.LastError}, {"last_error_at", j.LastErrorAt},
		{"payload_hash", j.PayloadHash}, {"payload_omitted", fmt.Sprint(j.PayloadOmitted)}, {"mirror", j.MirrorKey},
	}
	for _, r := range rows {
		if r[1] == "" || r[1] == " " {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

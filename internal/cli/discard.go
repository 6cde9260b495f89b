package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// DiscardResultJSON is what dlq discard did about one event.
type DiscardResultJSON struct {
	ID string `json:"id"`
	// Provider is the provider whose event it is, when it was found.
	Provider string `json:"provider,omitempty"`
	// Status is the record's status before the discard, StatusAfter after
	// it (dead_lettered for a record that was still pending).
	Status      string `json:"status,omitempty"`
	StatusAfter string `json:"status_after,omitempty"`
	// Action: discarded, not_found (no record), no_message (nothing in
	// the DLQ points to it), error.
	Action   string `json:"action"`
	Messages int    `json:"messages"`
	Detail   string `json:"detail,omitempty"`
}

// DiscardJSON is the stable JSON shape of inboxctl dlq discard --json.
type DiscardJSON struct {
	Reason    string              `json:"reason"`
	Results   []DiscardResultJSON `json:"results"`
	Discarded int                 `json:"discarded"`
	Failed    int                 `json:"failed"`
}

func (a *app) dlqDiscardCmd() *cobra.Command {
	var reason, prov string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "discard <event-id>... --reason TEXT",
		Short: "Remove an event's messages from the dead-letter queue, recording why on the event",
		Long: `discard removes the messages that point to each event from the dead-letter
queue, for an event nobody should process again (a poison message, a test
event, one already handled by hand). The decision is recorded on the event's
record first, with --reason and the time (inboxctl event shows them), then
the messages are deleted: a discard is never silent.

A record still pending (received, failed, or processing with no live worker)
becomes dead_lettered, so the reconciler's stuck sweep does not send it
through again; any other status is kept. The event stays replayable:
inboxctl replay processes it if you change your mind.

An event of any provider is found by its id alone; an id that two
providers' events share is refused until --provider names one. An event
with no record (expired by its TTL) is refused: there is nothing to record
the decision on. Redrive it instead (dlq redrive --event): the processor
acknowledges a pointer to no record as missing, in its log.`,
		Example: `  inboxctl dlq discard evt_1Nq7 --reason "test event sent to live by mistake"`,
		Args:    args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, ids []string) error {
			if strings.TrimSpace(reason) == "" {
				return usagef("--reason is required: say why the event is not processed; it is kept on the event's record")
			}
			if prov != "" && !slices.Contains(event.Providers, prov) {
				return usagef("--provider %q: want one of %s", prov, strings.Join(event.Providers, ", "))
			}
			return a.discard(cmd.Context(), prov, slices.Compact(slices.Sorted(slices.Values(ids))), strings.TrimSpace(reason), asJSON)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the event is not processed (required; kept on its record)")
	cmd.Flags().StringVar(&prov, "provider", "", "the provider whose events these are (default: whichever has an event of that id)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON (DiscardJSON in docs/cli.md)")
	return cmd
}

func (a *app) discard(ctx context.Context, prov string, ids []string, reason string, asJSON bool) error {
	s, err := a.open(ctx, withEvents|withDLQ)
	if err != nil {
		return err
	}
	results, err := s.Discard(ctx, prov, ids, reason)
	if err != nil {
		return err
	}
	res := DiscardJSON{Reason: reason, Results: []DiscardResultJSON{}}
	for _, r := range results {
		res.Results = append(res.Results, DiscardResultJSON{ID: r.ID, Provider: r.Provider, Status: r.Status, StatusAfter: r.StatusAfter,
			Action: r.Action, Messages: r.Messages, Detail: r.Detail})
		if r.Action == ops.DiscardDiscarded {
			res.Discarded++
		} else {
			res.Failed++
		}
	}
	if asJSON {
		if err := writeJSON(a.stdout, res); err != nil {
			return err
		}
	} else {
		var rows [][]string
		for _, r := range res.Results {
			st := a.status(r.Status)
			if r.StatusAfter != "" && r.StatusAfter != r.Status {
				st += " -> " + a.status(r.StatusAfter)
			}
			rows = append(rows, []string{r.ID, st, r.Action + ": " + r.Detail})
		}
		if err := a.table([]string{"EVENT_ID", "STATUS", "RESULT"}, rows); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "\n%d discarded, %d not; reason: %s\n", res.Discarded, res.Failed, reason)
	}
	if res.Failed > 0 {
		return failedError{fmt.Sprintf("%d of %d event(s) not discarded", res.Failed, len(ids))}
	}
	return nil
}

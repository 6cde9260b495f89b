package console

import (
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// TestTimelineSaysHowTheEventCame: an event's first step names the way it
// reached the store.
func TestTimelineSaysHowTheEventCame(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for source, want := range map[event.Source]string{
		event.SourceWebhook:     "by webhook",
		event.SourceReconciler:  "by the reconciler: its webhook never arrived",
		event.SourceEventBridge: "by Stripe's EventBridge destination",
	} {
		got := transitions(event.Record{Source: source, ReceivedAt: at})
		if len(got) == 0 || got[0].What != "received" || got[0].Detail != want {
			t.Errorf("%s: got %+v, want received %q", source, got, want)
		}
	}
}

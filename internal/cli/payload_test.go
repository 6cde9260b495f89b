package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// TestEventWhosePayloadInflatesPastTheLimit: the record of an event whose
// stored payload is a gzip bomb still shows; only --payload fails, naming
// the event and the limit.
func TestEventWhosePayloadInflatesPastTheLimit(t *testing.T) {
	w := newWorld(t, false)
	ctx := context.Background()
	b := body(t, "invoice.paid", stripefixture.Options{ID: "evt_cli_bomb", Created: time.Now().Unix()})
	padded := append(append([]byte("{"), bytes.Repeat([]byte(" "), 2*store.MaxPayloadBytes)...), b[1:]...)
	w.store(padded, event.SourceWebhook, event.StatusFailedPermanent, time.Now())

	c := w.cli()
	r := c.run(ctx, "event", "evt_cli_bomb", "--json").must(t, 0)
	var got EventJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Status != "failed_permanent" {
		t.Errorf("event --json: got %s (%v), want the record", r.stdout, err)
	}
	r = c.run(ctx, "event", "evt_cli_bomb", "--payload").must(t, 1)
	if !strings.Contains(r.stderr, "evt_cli_bomb") || !strings.Contains(r.stderr, strconv.Itoa(store.MaxPayloadBytes)) || r.stdout != "" {
		t.Errorf("event --payload: stdout %d bytes, stderr %q; want nothing printed and an error naming the event and the limit", len(r.stdout), r.stderr)
	}
}

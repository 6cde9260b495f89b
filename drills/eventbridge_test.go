package drills

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/bridge"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/faultproxy"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/testenv"
)

// Drill: the bridge killed mid-batch. A SIGKILL of the local stack while
// an ingress batch is half stored (every DynamoDB put slowed, so the kill
// finds records written and messages unacknowledged), then a restart:
// nothing is lost, each event is processed and applied once, and nothing
// is dead-lettered. The messages come back after the ingress queue's
// visibility timeout and the bridge finds the half-stored records
// (received, so requeued).
func TestEventBridgeIngestKillsLoseNothing(t *testing.T) {
	if !testenv.RunsEventBridge(t) {
		return
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	src := bridge.PartnerSourcePrefix + "/ed_test_" + hex.EncodeToString(b[:])
	// A visibility timeout no shorter than the bridge's timeout (10 s), as
	// AWS requires of an event source, and no longer: the killed batch
	// comes back within the drill.
	p := newPipeline(t, nil, map[string]string{
		"ProcessorTimeout":       "5",
		"QueueVisibilityTimeout": "10",
		"MaxReceiveCount":        "10",
		"StripeEventSourceName":  src,
	})
	const n = 10
	var ids []string
	var entries []ebtypes.PutEventsRequestEntry
	for range n {
		body, env := build(t, "invoice.paid", stripefixture.Options{})
		ids = append(ids, env.ID)
		entries = append(
			entries,
			ebtypes.PutEventsRequestEntry{
				EventBusName: aws.String(src),
				Source:       aws.String(src),
				DetailType:   aws.String(env.Type),
				Detail:       aws.String(string(body)),
			},
		)
	}
	p.proxy.Set(faultproxy.Rule{Service: "dynamodb", Operation: "PutItem", Action: faultproxy.Delay, Delay: 300 * time.Millisecond})
	eb := eventbridge.NewFromConfig(testenv.AWS(t))
	out, err := eb.PutEvents(context.Background(), &eventbridge.PutEventsInput{Entries: entries})
	if err != nil || out.FailedEntryCount != 0 {
		t.Fatalf("PutEvents: %v, %d failed", err, out.FailedEntryCount)
	}
	// Mid-batch: the proxy counts a put when it arrives, and each event's
	// payload put follows its record's, so past n puts some records are
	// stored, their payloads on the way, and no pointer has been sent for
	// most.
	testenv.Eventually(t, 60*time.Second, "the bridge to be storing the batch", func() bool {
		req, _ := p.proxy.Stats()
		return req["dynamodb.PutItem"] >= n+n/2
	})
	p.stack.Kill()
	stored, processed := 0, 0
	for _, id := range ids {
		r, err := p.record(id)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			t.Fatal(err)
		default:
			stored++
			if r.Status == event.StatusProcessed {
				processed++
			}
		}
	}
	if stored == 0 || processed == n || p.queueDepth("IngressQueue") == 0 {
		t.Fatalf("the kill was not mid-batch: %d of %d stored, %d processed, %d messages left", stored, n, processed, p.queueDepth("IngressQueue"))
	}
	t.Logf("killed with %d of %d records stored, %d processed", stored, n, processed)

	p.proxy.Clear()
	p.stack.Restart(t)
	for _, id := range ids {
		p.waitStatus(id, event.StatusProcessed, 90*time.Second)
		if calls, ok := p.down.counts(id); ok != 1 {
			t.Errorf("%s: applied downstream %d times (%d calls), want once", id, ok, calls)
		}
		if n := len(p.stack.Lines(map[string]string{"msg": "processed", "event_id": id})); n != 1 {
			t.Errorf("%s: processed %d times, want once", id, n)
		}
	}
	// The operator's view is the same as for any event.
	shown, err := p.inboxctl("event", ids[0], "--json")
	if err != nil {
		t.Fatalf("inboxctl event: %v\n%s", err, shown)
	}
	var ev struct{ Status, Source, Outcome string }
	decodeJSON(t, shown, &ev)
	// The events are about one invoice (the fixture's), so an older one
	// processed after a newer is superseded: its effects ran all the same.
	if ev.Status != "processed" || ev.Source != string(event.SourceEventBridge) || (ev.Outcome != "applied" && ev.Outcome != "superseded") {
		t.Errorf("inboxctl event %s: got %+v, want processed (applied or superseded), source eventbridge", ids[0], ev)
	}
	testenv.Eventually(t, 30*time.Second, "the ingress queue to be empty", func() bool { return p.queueDepth("IngressQueue") == 0 })
	if d := p.queueDepth("IngressDeadLetterQueue"); d != 0 {
		t.Errorf("ingress dead-letter queue: %d messages, want none", d)
	}
}

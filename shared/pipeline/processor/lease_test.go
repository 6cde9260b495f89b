package processor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// message is one SQS message of evt_1 on its receives-th receive: the same
// message id on every receive, as SQS keeps it.
func message(id string, receives int) events.SQSMessage {
	m := msg("evt_1", receives)
	m.MessageId, m.ReceiptHandle = id, "rh-"+fmt.Sprint(receives)
	return m
}

// batchLine returns the last "batch" log line's metrics.
func batchLine(t *testing.T, logs *bytes.Buffer) map[string]any {
	t.Helper()
	var batch map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "batch" {
			batch = m
		}
	}
	if batch == nil {
		t.Fatalf("no batch log line in:\n%s", logs.String())
	}
	return batch
}

// TestAMessageWhoseOwnEarlierReceiveHoldsTheLeaseIsNotDeleted: an earlier
// receive of this same message claimed the event and never knew it (the
// claim's answer was lost, and so was its read-back), so it gave the
// message back; the lease is live, and no other message may exist for the
// event. The message must come back when the lease ends, not be deleted
// as a duplicate of a worker that is gone.
func TestAMessageWhoseOwnEarlierReceiveHoldsTheLeaseIsNotDeleted(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	r := rec("evt_1", event.StatusProcessing)
	r.LeaseOwner, r.LeaseUntil = "worker-gone:m-own:5a5a5a", now.Add(20*time.Second)
	st := newFakeStore(r)
	vis := &visibility{}
	var logs bytes.Buffer
	p, err := New(Config{Store: st, MaxReceiveCount: 5, Visibility: vis, QueueURL: "https://queue",
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m-own", 2)}})
	if f := failures(resp); len(f) != 1 {
		t.Fatalf("failures: got %v, want the message back (it may be the lease holder's only one)", f)
	}
	if got := fmt.Sprint(vis.timeout); got != "[21]" {
		t.Errorf("visibility: got %s, want [21] (back 1 s after the lease ends)", got)
	}
	if got, _ := batchLine(t, &logs)["lease_wait"].(float64); got != 1 {
		t.Errorf("lease_wait: got %v, want 1", got)
	}
}

// TestAMessageLeasedByAnotherMessagesClaimIsDeleted: the lease names
// another message, which its holder still has (or gave back), so this one
// is a duplicate and goes.
func TestAMessageLeasedByAnotherMessagesClaimIsDeleted(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	r := rec("evt_1", event.StatusProcessing)
	r.LeaseOwner, r.LeaseUntil = "worker-1:m-other:5a5a5a", now.Add(20*time.Second)
	st := newFakeStore(r)
	vis := &visibility{}
	p, err := New(Config{Store: st, MaxReceiveCount: 5, Visibility: vis, QueueURL: "https://queue",
		Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m-dup", 1)}})
	if f := failures(resp); len(f) != 0 {
		t.Errorf("failures: got %v, want none (the holder has its own message)", f)
	}
}

// TestALeaseOwnerNamesItsMessage: the lease a claim takes names the
// message it came from, which is how a later receive of that message
// knows the lease may be its own.
func TestALeaseOwnerNamesItsMessage(t *testing.T) {
	st := newFakeStore(rec("evt_1", event.StatusReceived))
	p := newProcessor(t, st, &effects{err: errors.New("downstream 500")})
	p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m-named", 1)}})
	var owner string
	for _, c := range st.claims {
		owner = c
	}
	if !strings.Contains(owner, ":m-named:") {
		t.Errorf("lease owner %q does not name its message m-named", owner)
	}
}

// TestAClaimWithNoAnswerComesBackWhenItsLeaseWouldEnd: a claim that got
// no answer may have taken the lease; the message comes back when that
// lease would end, not the queue's whole visibility timeout later.
func TestAClaimWithNoAnswerComesBackWhenItsLeaseWouldEnd(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	st := newFakeStore(rec("evt_1", event.StatusReceived))
	st.claimErr = errors.New("connection reset")
	vis := &visibility{}
	p, err := New(Config{Store: st, MaxReceiveCount: 5, Visibility: vis, QueueURL: "https://queue", LeaseMax: 30 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m-1", 1)}})
	if f := failures(resp); len(f) != 1 {
		t.Fatalf("failures: got %v, want the message back", f)
	}
	if got := fmt.Sprint(vis.timeout); got != "[31]" {
		t.Errorf("visibility: got %s, want [31] (1 s after the lease it may hold)", got)
	}
}

// TestAMessageMeetingAPermanentFailureCountsIt: the failure was recorded
// but its answer lost (and its read-back failed), so the attempt that
// recorded it could not count it; the next receive of its message finds
// the record failed_permanent and counts it, so the alarm on the
// permanent metric fires whichever way the record got there.
func TestAMessageMeetingAPermanentFailureCountsIt(t *testing.T) {
	st := newFakeStore(rec("evt_1", event.StatusFailedPermanent))
	var logs bytes.Buffer
	p, err := New(Config{Store: st, MaxReceiveCount: 5, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message("m-1", 2)}})
	if f := failures(resp); len(f) != 0 {
		t.Errorf("failures: got %v, want none: nothing more to do", f)
	}
	b := batchLine(t, &logs)
	if got, _ := b["failed_permanent"].(float64); got != 1 {
		t.Errorf("failed_permanent: got %v, want 1", b["failed_permanent"])
	}
}

package processor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/outcome"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// fakeStore keeps records in memory with the store's transition rules.
type fakeStore struct {
	mu       sync.Mutex
	records  map[string]*event.Record
	claimErr error
	failed   map[string]event.Status
	// lostAnswer makes the next claim take effect, then fail as the SDK's
	// retry of a claim whose answer was lost does: on our own lease.
	lostAnswer bool
	// claims holds each claim's owner, by event id.
	claims map[string]string
}

func newFakeStore(recs ...event.Record) *fakeStore {
	f := &fakeStore{records: map[string]*event.Record{}, failed: map[string]event.Status{}}
	for i := range recs {
		r := recs[i]
		f.records[r.ID] = &r
	}
	return f
}

func (f *fakeStore) Claim(_ context.Context, _, id, owner string, now, until time.Time) (event.Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimErr != nil {
		return event.Record{}, f.claimErr
	}
	r, ok := f.records[id]
	if !ok {
		return event.Record{}, store.ErrNotFound
	}
	switch {
	case r.Status == event.StatusReceived || r.Status == event.StatusFailed || r.Status == event.StatusDeadLettered:
	case r.Status == event.StatusProcessing && r.LeaseUntil.Before(now):
	default:
		return event.Record{}, &store.NotClaimableError{Current: *r}
	}
	r.Status, r.LeaseOwner, r.LeaseUntil = event.StatusProcessing, owner, until
	r.Attempts++
	if f.claims == nil {
		f.claims = map[string]string{}
	}
	f.claims[id] = owner
	if f.lostAnswer {
		f.lostAnswer = false
		return event.Record{}, &store.NotClaimableError{Current: *r}
	}
	return *r, nil
}

func (f *fakeStore) Payload(_ context.Context, rec event.Record) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.records[rec.ID]
	if !ok || r.Payload == nil {
		return nil, store.ErrNoPayload
	}
	return r.Payload, nil
}

func (f *fakeStore) Complete(_ context.Context, rec event.Record, owner string, _ time.Time, c store.Completion) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.records[rec.ID]
	if r.Status != event.StatusProcessing || r.LeaseOwner != owner {
		return store.ErrLeaseLost
	}
	r.Status, r.Outcome, r.LeaseOwner, r.MirrorKey = event.StatusProcessed, c.Outcome, "", c.MirrorKey
	return nil
}

func (f *fakeStore) Fail(_ context.Context, rec event.Record, owner string, st event.Status, cause string, _, retryAt time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.records[rec.ID]
	if r.Status != event.StatusProcessing || r.LeaseOwner != owner {
		return store.ErrLeaseLost
	}
	r.Status, r.LastError, r.LeaseOwner, r.RetryAt = st, cause, "", retryAt
	f.failed[rec.ID] = st
	return nil
}

type effects struct {
	mu    sync.Mutex
	calls map[string]int
	err   error
}

func (e *effects) Run(_ context.Context, r event.Record, _ []byte) ([]types.TransactWriteItem, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.calls == nil {
		e.calls = map[string]int{}
	}
	e.calls[r.ID]++
	return nil, e.err
}

func msg(id string, receives int) events.SQSMessage {
	return events.SQSMessage{
		MessageId:  "m-" + id + "-" + strconv.Itoa(receives),
		Body:       `{"provider":"stripe","id":"` + id + `","type":"invoice.paid","created":1,"object_id":"in_1"}`,
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives)},
	}
}

func rec(id string, st event.Status) event.Record {
	return event.Record{Provider: "stripe", ID: id, Type: "invoice.paid", Status: st, Payload: []byte(`{}`)}
}

func newProcessor(t *testing.T, st Store, eff Effects) *Processor {
	t.Helper()
	p, err := New(Config{Store: st, Effects: eff, MaxReceiveCount: 3, Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func failures(resp events.SQSEventResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func TestBatchOutcomes(t *testing.T) {
	st := newFakeStore(
		rec("evt_new", event.StatusReceived),
		rec("evt_done", event.StatusProcessed),
		rec("evt_ignored", event.StatusIgnored),
		event.Record{Provider: "stripe", ID: "evt_leased", Status: event.StatusProcessing, LeaseOwner: "other", LeaseUntil: time.Now().Add(time.Hour)},
		event.Record{
			Provider:   "stripe",
			ID:         "evt_expired",
			Status:     event.StatusProcessing,
			LeaseOwner: "dead",
			LeaseUntil: time.Now().Add(-time.Second),
			Payload:    []byte(`{}`),
		},
	)
	eff := &effects{}
	p := newProcessor(t, st, eff)
	batch := events.SQSEvent{Records: []events.SQSMessage{
		msg("evt_new", 1), msg("evt_done", 1), msg("evt_ignored", 1), msg("evt_leased", 1), msg("evt_expired", 1), msg("evt_missing", 1),
		{MessageId: "garbage", Body: "not json"},
	}}
	resp, err := p.Handle(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(resp); len(f) != 0 {
		t.Errorf("failures: got %v, want none", f)
	}
	for id, want := range map[string]int{"evt_new": 1, "evt_expired": 1, "evt_done": 0, "evt_ignored": 0, "evt_leased": 0} {
		if got := eff.calls[id]; got != want {
			t.Errorf("effects of %s: got %d, want %d", id, got, want)
		}
	}
	if st.records["evt_new"].Status != event.StatusProcessed || st.records["evt_expired"].Status != event.StatusProcessed {
		t.Errorf("statuses: new %s, expired-lease %s; want processed", st.records["evt_new"].Status, st.records["evt_expired"].Status)
	}
}

func TestFailuresAreRetriedThenDeadLettered(t *testing.T) {
	st := newFakeStore(rec("evt_1", event.StatusReceived))
	p := newProcessor(t, st, &effects{err: errors.New("downstream 500")})
	for receive := 1; receive <= 3; receive++ {
		resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_1", receive)}})
		if f := failures(resp); len(f) != 1 {
			t.Fatalf("receive %d: failures %v, want the message", receive, f)
		}
		want := event.StatusFailed
		if receive == 3 {
			want = event.StatusDeadLettered
		}
		if got := st.records["evt_1"].Status; got != want {
			t.Fatalf("receive %d: status %s, want %s", receive, got, want)
		}
	}
}

func TestPermanentFailureIsAcknowledged(t *testing.T) {
	st := newFakeStore(rec("evt_1", event.StatusReceived))
	p := newProcessor(t, st, &effects{err: &fault.Permanent{Err: errors.New("unprocessable")}})
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_1", 1)}})
	if f := failures(resp); len(f) != 0 {
		t.Errorf("failures: got %v, want none (no pointless retries)", f)
	}
	if got := st.records["evt_1"].Status; got != event.StatusFailedPermanent {
		t.Errorf("status: got %s, want failed_permanent", got)
	}
}

func TestClaimErrorRetriesOnlyThatMessage(t *testing.T) {
	st := newFakeStore(rec("evt_1", event.StatusReceived))
	st.claimErr = errors.New("throttled")
	p := newProcessor(t, st, nil)
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_1", 1)}})
	if f := failures(resp); len(f) != 1 {
		t.Errorf("failures: got %v, want the message", f)
	}
}

// leaseStore records the lease a claim asks for.
type leaseStore struct {
	*fakeStore
	until time.Time
}

func (l *leaseStore) Claim(ctx context.Context, provider, id, owner string, now, until time.Time) (event.Record, error) {
	l.until = until
	return l.fakeStore.Claim(ctx, provider, id, owner, now, until)
}

func TestLeaseEndsByTheInvocationDeadline(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		deadline time.Duration // from now; 0 for none
		want     time.Duration
	}{
		{"deadline sooner than LeaseMax", 30 * time.Second, 30 * time.Second},
		{"LeaseMax sooner than the deadline", time.Hour, DefaultLeaseMax},
		{"no deadline", 0, DefaultLeaseMax},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &leaseStore{fakeStore: newFakeStore(rec("evt_1", event.StatusReceived))}
			p, err := New(
				Config{Store: st, MaxReceiveCount: 3, Now: func() time.Time { return now }, Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))},
			)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, now.Add(tc.deadline))
				defer cancel()
			}
			p.message(ctx, msg("evt_1", 1), nil)
			if got := st.until.Sub(now); got != tc.want {
				t.Errorf("lease: got %v from now, want %v", got, tc.want)
			}
		})
	}
}

// visibility records the delays asked for.
type visibility struct {
	mu      sync.Mutex
	timeout []int32
}

func (v *visibility) ChangeMessageVisibility(
	_ context.Context,
	in *sqs.ChangeMessageVisibilityInput,
	_ ...func(*sqs.Options),
) (*sqs.ChangeMessageVisibilityOutput, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.timeout = append(v.timeout, in.VisibilityTimeout)
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

func TestRetriesBackOffExponentiallyAndTheLastReceiveGoesStraightToTheDLQ(t *testing.T) {
	st := newFakeStore(rec("evt_1", event.StatusReceived))
	vis := &visibility{}
	now := time.Unix(1_800_000_000, 0)
	p, err := New(Config{
		Store: st, Effects: &effects{err: errors.New("downstream 500")}, MaxReceiveCount: 5,
		Visibility: vis, QueueURL: "https://queue", BackoffBase: 2 * time.Second, BackoffMax: 10 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil)),
		Now:    func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	var retryAt []string
	for receive := 1; receive <= 5; receive++ {
		m := msg("evt_1", receive)
		m.ReceiptHandle = "rh"
		p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
		st.mu.Lock()
		if at := st.records["evt_1"].RetryAt; at.IsZero() {
			retryAt = append(retryAt, "none")
		} else {
			retryAt = append(retryAt, at.Sub(now).String())
		}
		st.mu.Unlock()
	}
	// The record says when its message comes back (the stuck sweep waits
	// for it); a dead-lettered one waits for nothing.
	if got, want := fmt.Sprint(retryAt), "[2s 4s 8s 10s none]"; got != want {
		t.Errorf("retry_at after each receive: got %s, want %s", got, want)
	}
	// 2 s doubled per receive up to the 10 s cap; then 0 on the last receive,
	// so SQS moves the message to the DLQ on the next receive.
	if got, want := fmt.Sprint(vis.timeout), "[2 4 8 10 0]"; got != want {
		t.Errorf("visibility timeouts: got %s, want %s", got, want)
	}
	if got := st.records["evt_1"].Status; got != event.StatusDeadLettered {
		t.Errorf("status: got %s, want dead_lettered", got)
	}
}

// statusError is an HTTP response error as the SDK's retryer sees one.
type statusError int

func (s statusError) Error() string       { return fmt.Sprintf("http %d", int(s)) }
func (s statusError) HTTPStatusCode() int { return int(s) }

func TestClass(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&fault.Permanent{Err: errors.New("bad payload")}, "permanent"},
		{fmt.Errorf("effect x: %w", &fault.Permanent{Err: errors.New("bad")}), "permanent"},
		{fmt.Errorf("call: %w", context.DeadlineExceeded), "timeout"},
		{fmt.Errorf("claim: %w", &smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"}), "throttled"},
		{fmt.Errorf("commit: %w", statusError(503)), "transient"},
		{fmt.Errorf("apply: %w", &PanicError{Value: "boom"}), "panic"},
		{errors.New("something else"), "other"},
	}
	for _, tc := range tests {
		if got := Class(tc.err); got != tc.want {
			t.Errorf("Class(%v): got %s, want %s", tc.err, got, tc.want)
		}
	}
}

func TestAClaimWhoseAnswerWasLostIsStillOurs(t *testing.T) {
	st := newFakeStore(rec("evt_1", event.StatusReceived))
	st.lostAnswer = true
	eff := &effects{}
	p := newProcessor(t, st, eff)
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_1", 1)}})
	if f := failures(resp); len(f) != 0 {
		t.Errorf("failures: got %v, want none", f)
	}
	if st.records["evt_1"].Status != event.StatusProcessed || eff.calls["evt_1"] != 1 {
		t.Errorf(
			"got status %s and %d effects; want processed once (not acknowledged as leased by another worker)",
			st.records["evt_1"].Status,
			eff.calls["evt_1"],
		)
	}
}

// panicky panics for one event and applies the others.
type panicky struct {
	effects
	on string
}

func (e *panicky) Run(ctx context.Context, r event.Record, payload []byte) ([]types.TransactWriteItem, error) {
	if r.ID == e.on {
		panic("a handler's bug")
	}
	return e.effects.Run(ctx, r, payload)
}

func TestAPanickingHandlerFailsItsEventAloneAndIsRetried(t *testing.T) {
	st := newFakeStore(rec("evt_bad", event.StatusReceived), rec("evt_good", event.StatusReceived))
	var logs bytes.Buffer
	eff := &panicky{on: "evt_bad"}
	p, err := New(Config{Store: st, Effects: eff, MaxReceiveCount: 3, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	good := msg("evt_good", 1)
	good.Body = strings.Replace(good.Body, `"in_1"`, `"in_2"`, 1) // another object: another group
	resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_bad", 1), good}})
	if err != nil {
		t.Fatalf("the batch failed as a whole: %v", err)
	}
	if f := failures(resp); len(f) != 1 || f[0] != "m-evt_bad-1" {
		t.Errorf("failures: got %v, want only the panicking event's message", f)
	}
	if r := st.records["evt_bad"]; r.Status != event.StatusFailed || !strings.Contains(r.LastError, "panicked") {
		t.Errorf("panicking event: got %s %q, want failed with the panic as its error", r.Status, r.LastError)
	}
	if r := st.records["evt_good"]; r.Status != event.StatusProcessed {
		t.Errorf("the other event: got %s, want processed", r.Status)
	}
	if !strings.Contains(logs.String(), `"error_class":"panic"`) || !strings.Contains(logs.String(), "processor_test.go") {
		t.Errorf("log: want the failure classed as a panic, with the handler's stack:\n%s", logs.String())
	}
}

// panickingStore panics in Claim: a bug in our own code, caught by the
// last net around each message.
type panickingStore struct{ *fakeStore }

func (panickingStore) Claim(context.Context, string, string, string, time.Time, time.Time) (event.Record, error) {
	panic("store bug")
}

func TestAPanicOutsideTheHandlersRetriesThatMessageOnly(t *testing.T) {
	p := newProcessor(t, panickingStore{newFakeStore()}, nil)
	resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_1", 1), {MessageId: "garbage", Body: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(resp); len(f) != 1 || f[0] != "m-evt_1-1" {
		t.Errorf("failures: got %v, want the panicking message only", f)
	}
}

// TestBatchLogCarriesTheResultMetrics: each batch's log line is an EMF
// record whose counters are the results of its messages, so CloudWatch
// metrics (and the template's alarms) see them without an API call.
func TestBatchLogCarriesTheResultMetrics(t *testing.T) {
	st := newFakeStore(rec("evt_new", event.StatusReceived), rec("evt_done", event.StatusProcessed), rec("evt_perm", event.StatusReceived))
	var logs bytes.Buffer
	eff := &effectsBy{err: map[string]error{"evt_perm": &fault.Permanent{Err: errors.New("unprocessable")}}}
	p, err := New(Config{Store: st, Effects: eff, MaxReceiveCount: 3, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_new", 1), msg("evt_done", 1), msg("evt_perm", 1)}}); err != nil {
		t.Fatal(err)
	}
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
	for name, want := range map[string]float64{"messages": 3, "applied": 1, "duplicate": 1, "failed_permanent": 1, "failed": 0, "dead_lettered": 0} {
		if got, _ := batch[name].(float64); got != want {
			t.Errorf("%s: got %v, want %v", name, batch[name], want)
		}
	}
	emf, _ := batch["_aws"].(map[string]any)
	directives, _ := emf["CloudWatchMetrics"].([]any)
	if len(directives) != 1 {
		t.Fatalf("EMF directive: got %v", batch["_aws"])
	}
	d := directives[0].(map[string]any)
	var names []string
	for _, m := range d["Metrics"].([]any) {
		names = append(names, m.(map[string]any)["Name"].(string))
	}
	if d["Namespace"] != "WebhookInbox" || !slices.Contains(names, "failed_permanent") || !slices.Contains(names, "dead_lettered") {
		t.Errorf("EMF directive: namespace %v, metrics %v", d["Namespace"], names)
	}
}

// effectsBy fails the events it has an error for.
type effectsBy struct{ err map[string]error }

func (e *effectsBy) Run(_ context.Context, r event.Record, _ []byte) ([]types.TransactWriteItem, error) {
	return nil, e.err[r.ID]
}

// TestARedirectingForwardTargetDoesNotCompleteTheEvent wires the forward
// effect as boot does: a target answering 302 or 307 leaves the event
// failed_permanent, never processed, and the host Location names gets
// nothing.
func TestARedirectingForwardTargetDoesNotCompleteTheEvent(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/collect", status)
			}))
			defer target.Close()
			var reg effect.Registry
			reg.On(&effect.Forward{URL: target.URL, Secret: "fwd_secret", Client: &http.Client{Timeout: 10 * time.Second}}, "*")
			st := newFakeStore(rec("evt_redirect", event.StatusReceived))
			resp, _ := newProcessor(t, st, &reg).Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_redirect", 1)}})
			if got := st.records["evt_redirect"].Status; got != event.StatusFailedPermanent {
				t.Errorf("status: got %s, want failed_permanent (a redirect is not a delivery)", got)
			}
			if f := failures(resp); len(f) != 0 {
				t.Errorf("failures: got %v, want none (retrying cannot help)", f)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("the Location's host got %d requests, want none", n)
			}
		})
	}
}

// undecodableStore answers as fakeStore does, with every payload reported
// undecodable, as store.Events does for a gzip bomb.
type undecodableStore struct{ *fakeStore }

func (s undecodableStore) Payload(_ context.Context, r event.Record) ([]byte, error) {
	return nil, &store.PayloadError{Record: r, Err: errors.New("gunzip: inflates past the limit")}
}

func TestAnUndecodablePayloadFailsItsEventForGood(t *testing.T) {
	st := newFakeStore(rec("evt_bomb", event.StatusReceived), rec("evt_done", event.StatusProcessed))
	eff := &effects{}
	p := newProcessor(t, undecodableStore{st}, eff)
	resp, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_bomb", 1), msg("evt_done", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(resp); len(f) != 0 {
		t.Errorf("failures: got %v, want none", f)
	}
	if got := st.records["evt_bomb"].Status; got != event.StatusFailedPermanent {
		t.Errorf("claimed event with an undecodable payload: %s, want failed_permanent", got)
	}
	// A claim that lost is a duplicate, whatever its payload.
	if got := st.records["evt_done"].Status; got != event.StatusProcessed {
		t.Errorf("processed event: %s, want it left processed", got)
	}
	if len(eff.calls) != 0 {
		t.Errorf("effects ran: %v, want none", eff.calls)
	}
}

// planner counts the mirror's plans.
type planner struct{ plans atomic.Int32 }

func (p *planner) Plan(event.Record, []byte) (mirror.Plan, error) {
	p.plans.Add(1)
	return mirror.Plan{}, nil
}

// TestOnlyStripeEventsReachTheMirror: a Standard Webhooks sender's
// "invoice.paid" is no Stripe invoice; its effects run, the mirror never
// sees it.
func TestOnlyStripeEventsReachTheMirror(t *testing.T) {
	std := rec("msg_1", event.StatusReceived)
	std.Provider = "standard"
	st := newFakeStore(rec("evt_1", event.StatusReceived), std)
	eff := &effects{}
	m := &planner{}
	p, err := New(Config{Store: st, Mirror: m, Effects: eff, MaxReceiveCount: 3, Logger: slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	stdMsg := msg("msg_1", 1)
	stdMsg.Body = `{"provider":"standard","id":"msg_1","type":"invoice.paid","created":1}`
	resp, _ := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_1", 1), stdMsg}})
	if f := failures(resp); len(f) != 0 {
		t.Fatalf("failures: got %v, want none", f)
	}
	if got := m.plans.Load(); got != 1 {
		t.Errorf("mirror plans: got %d, want 1 (Stripe's event only)", got)
	}
	if eff.calls["msg_1"] != 1 || eff.calls["evt_1"] != 1 {
		t.Errorf("effects: got %v, want each event once", eff.calls)
	}
}

// TestTheDefaultRetryBudgetIsOverSixHours: with the template's defaults
// (RetryBackoffBase 60, RetryBackoffMax 7200, MaxReceiveCount 10) a
// failing event is retried for over six hours before it is dead-lettered,
// where 5 receives after 2 s doubling gave 30 s.
func TestTheDefaultRetryBudgetIsOverSixHours(t *testing.T) {
	got := RetryBudget(DefaultBackoffBase, DefaultBackoffMax, 10)
	if got < 6*time.Hour || got != 6*time.Hour+7*time.Minute {
		t.Errorf("budget: got %v, want 6h7m0s (at least 6 h)", got)
	}
	// The backoffs: 1, 2, 4, ... 64 minutes, then the 2-hour cap.
	var waits []string
	for r := 1; r < 10; r++ {
		waits = append(waits, backoff(DefaultBackoffBase, DefaultBackoffMax, r).String())
	}
	if want := "[1m0s 2m0s 4m0s 8m0s 16m0s 32m0s 1h4m0s 2h0m0s 2h0m0s]"; fmt.Sprint(waits) != want {
		t.Errorf("backoffs: got %v, want %s", waits, want)
	}
	if RetryBudget(time.Second, 24*time.Hour, 100) > 100*MaxBackoff || backoff(time.Hour, 24*time.Hour, 10) != MaxBackoff {
		t.Errorf("a backoff past SQS's 12-hour visibility limit: want MaxBackoff")
	}
}

// keyMirror plans a snapshot write for every event, keyed by its id.
type keyMirror struct{}

func (keyMirror) Plan(r event.Record, _ []byte) (mirror.Plan, error) {
	return mirror.Plan{Key: "obj_" + r.ID}, nil
}

// TestBackfilledHistoryRunsNoEffect: an event a backfill ingested (source
// backfill: history from before the deployment) is applied to the mirror
// and processed with outcome backfilled, and none of the team's effects
// runs; the same event as a lost webhook runs them.
func TestBackfilledHistoryRunsNoEffect(t *testing.T) {
	history := rec("evt_history", event.StatusReceived)
	history.Source = event.SourceBackfill
	lost := rec("evt_lost", event.StatusReceived)
	lost.Source = event.SourceReconciler
	st := newFakeStore(history, lost)
	eff := &effects{}
	p, err := New(Config{Store: st, Mirror: keyMirror{}, Effects: eff, MaxReceiveCount: 3, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg("evt_history", 1), msg("evt_lost", 1)}}); err != nil {
		t.Fatal(err)
	}
	h, l := st.records["evt_history"], st.records["evt_lost"]
	if h.Status != event.StatusProcessed || h.Outcome != outcome.Backfilled || h.MirrorKey != "obj_evt_history" || eff.calls["evt_history"] != 0 {
		t.Errorf("history: %s, outcome %s, mirror key %q, effects %d; want processed, backfilled, applied to the mirror, no effect",
			h.Status, h.Outcome, h.MirrorKey, eff.calls["evt_history"])
	}
	if l.Outcome != outcome.Applied || eff.calls["evt_lost"] != 1 {
		t.Errorf("lost webhook: outcome %s, effects %d; want applied, 1", l.Outcome, eff.calls["evt_lost"])
	}
}

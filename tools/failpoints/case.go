package failpoints

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/githubfake"
)

// Limit bounds one case: longer than the processor's whole retry budget,
// the stuck sweep's delay and a few reconciler periods together, so an
// event the pipeline can still finish is finished within it.
var Limit = 100 * time.Second

// Spec is one case: a world and the faults injected into it.
type Spec struct {
	World  World   `json:"world"`
	Faults []Fault `json:"faults"`
	// Second: a second event of the same object is delivered by its
	// courier as the first fault strikes (second.go), and the invariants
	// are checked for each event, and for the object's mirror.
	Second bool `json:"second_event,omitempty"`
	// Order, in an Audit world, settles the race between the audit run as
	// the case starts and the event in flight (discover): "" leaves it a
	// race, as every case does.
	Order Order `json:"order,omitempty"`
}

// Order is who goes first in an Audit world's fault-free run.
type Order string

const (
	// OrderAuditFirst: the courier sends the event once the audit run as
	// the case starts has ended.
	OrderAuditFirst Order = "audit first"
	// OrderEventFirst: no audit runs as the case starts; the first runs
	// with the first reconciliation, a reconciler period later (the event
	// is processed within a tenth of it).
	OrderEventFirst Order = "event first"
)

// Result is what one case did.
type Result struct {
	Spec
	// Outcome is where the event ended (Outcome*); SecondOutcome where
	// the second event did (Spec.Second), "" when it was never sent (the
	// fault's point was not reached).
	Outcome       string `json:"outcome"`
	SecondOutcome string `json:"second_outcome,omitempty"`
	// Lost, Doubled, Silent and Disagree say which invariant broke.
	Lost     bool `json:"lost,omitempty"`
	Doubled  bool `json:"doubled,omitempty"`
	Silent   bool `json:"silent,omitempty"`
	Disagree bool `json:"disagree,omitempty"`
	// Why explains a broken invariant.
	Why string `json:"why,omitempty"`
	// Calls are the calls the case's functions made, in order.
	Calls []Call `json:"-"`
	// CallCount is len(Calls), in the report's JSON.
	CallCount int `json:"calls"`
	// RaceSites: of a world's fault-free run, the sites its other
	// fault-free runs called and it did not (discover).
	RaceSites []Site `json:"race_sites,omitempty"`
	// Unfired are faults whose point the case never reached.
	Unfired []Fault       `json:"unfired,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
	Err     string        `json:"error,omitempty"`
}

// OK reports whether every invariant held.
func (r Result) OK() bool { return !r.Lost && !r.Doubled && !r.Silent && !r.Disagree && r.Err == "" }

// The outcomes of a case whose invariants held.
const (
	// OutcomeProcessed: the event ended processed.
	OutcomeProcessed = "processed"
	// OutcomePerson: it ended failed_permanent or dead_lettered, with its
	// payload readable and a metric an alarm watches counting it.
	OutcomePerson = "needs a person"
	// OutcomeUnacked: the courier gave up without a 2xx, no record exists
	// and nothing in the world would repair it: the courier's own log shows
	// the failure (not the pipeline's loss).
	OutcomeUnacked = "unacknowledged"
)

// run runs one case.
func (e *env) run(ctx context.Context, spec Spec) Result {
	start := time.Now()
	res := Result{Spec: spec}
	w := spec.World
	d, err := w.sample(e.root, newEventID(w.Provider), time.Now())
	if err != nil {
		res.Err = err.Error()
		return res
	}
	s, err := e.start(ctx, w, d.typ, spec.Faults, spec.Order)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	snds, err := e.couriers(ctx, spec, s, d)
	if err != nil {
		s.stop()
		res.Err = err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(ctx, Limit)
	defer cancel()
	l := &launcher{ctx: ctx, e: e, s: s, d: d, snds: snds}
	if spec.Second {
		// The second event is sent as the first fault strikes, by its own
		// courier, while the fault's call goes on.
		s.tap.whenFault(func() { l.launch(snds[1]) })
	}
	if spec.Order == OrderAuditFirst && s.auditEnded != nil {
		select {
		case <-s.auditEnded:
		case <-ctx.Done():
		}
	}
	l.launch(snds[0])
	e.settle(ctx, s, snds)
	cancel()
	l.close()
	s.halt()
	res.Calls = s.tap.recorded()
	res.CallCount = len(res.Calls)
	res.Unfired = s.tap.unfired()
	e.check(&res, s, snds)
	s.remove()
	res.Elapsed = time.Since(start)
	return res
}

// couriers are a case's couriers: of its event d, and of the second
// (Second cases); in Tie worlds, the mirror holds another event of the
// object, and second, first.
func (e *env) couriers(ctx context.Context, spec Spec, s *stack, d delivery) ([]*courier, error) {
	w := spec.World
	url := s.gateway.URL + "/webhooks/" + w.Provider
	snds := []*courier{{w: w, d: d, url: url, github: s.github}}
	if spec.Second {
		d2, err := w.second(e.root, d, newEventID(w.Provider), time.Now())
		if err != nil {
			return nil, err
		}
		snds = append(snds, &courier{w: w, d: d2, url: url, github: s.github})
	}
	if w.Bridge {
		for _, snd := range snds {
			snd.put = s.putEvent
		}
	}
	if w.Tie {
		if err := e.tie(ctx, s, d); err != nil {
			return nil, err
		}
	}
	return snds, nil
}

// launcher starts a case's couriers, each once, until closed.
type launcher struct {
	ctx  context.Context
	e    *env
	s    *stack
	d    delivery
	snds []*courier

	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// launch starts snd: its event published to Stripe's API, then sent.
func (l *launcher) launch(snd *courier) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	w := l.s.w
	var notBefore time.Time
	if len(l.snds) > 1 && snd == l.snds[1] && w.Provider == event.ProviderStripe {
		// Created as it is sent (second): its state is Stripe's from
		// its created second on, not before.
		d2, err := w.second(l.e.root, l.d, snd.d.id, time.Now())
		if err == nil {
			snd.d = d2
			if h, err := stripeHeadOf(d2.body); err == nil {
				notBefore = time.Unix(h.Created, 0)
			}
		}
	}
	snd.begin()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if wait := time.Until(notBefore); wait > 0 {
			select {
			case <-time.After(wait):
			case <-l.ctx.Done():
			}
		}
		if err := l.s.publish(snd.d); err != nil {
			snd.fail(err)
			return
		}
		snd.run(l.ctx)
	}()
}

// close launches no more couriers and waits for those launched.
func (l *launcher) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wg.Wait()
}

// publish makes an event Stripe's API serves before its courier sends it:
// a thin event whole and its object (the object's state is the newest
// event's from then on; no thin event is listed), a snapshot event in the
// event list.
func (s *stack) publish(d delivery) error {
	switch {
	case s.w.Thin:
		if err := s.stripe.AddV2("", d.body); err != nil {
			return err
		}
		return s.stripe.PutObject("", d.object)
	case s.w.Provider == event.ProviderStripe:
		if err := s.stripe.Add(d.body); err != nil {
			return err
		}
		if s.w.Audit || s.w.Tie {
			// The API serves the object in the newest event's state: the
			// audit compares with it, a tie is settled from it.
			return s.stripe.PutObject("", objectOf(d.body))
		}
	}
	return nil
}

// settle waits until the world is quiet for the events sent, or the
// case's time is up: each courier done, each record finished, the queue
// empty, and a reconciler run since, which finds nothing more to do. (A
// GitHub delivery whose attempt failed after the receiver stored it whole
// stays failed in GitHub's log, and needs no redelivery: its record is
// what settles it.) A second event not sent (its fault not yet struck) is
// not waited for; once sent, it is.
func (e *env) settle(ctx context.Context, s *stack, snds []*courier) {
	events := &store.Events{DB: dynamodb.NewFromConfig(e.direct), Table: s.res.Tables["EventsTable"]}
	q := sqs.NewFromConfig(e.direct)
	queue := s.res.Queues["WebhookQueue"].URL
	// quietFrom is the count of runs started when the world went quiet;
	// -1 while it is not. Each look costs the emulator two requests at
	// most, and none while a courier is still at work.
	quietFrom, faults := -1, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(settlePoll):
		}
		var ids []string
		busy := false
		for _, snd := range snds {
			busy = busy || !snd.done()
			if snd.sent() {
				ids = append(ids, snd.d.id)
			}
		}
		if busy {
			quietFrom = -1
			continue
		}
		if n, err := depth(ctx, q, queue); err != nil || n > 0 {
			quietFrom = -1
			continue
		}
		if s.ingress != "" {
			if n, err := depth(ctx, q, s.ingress); err != nil || n > 0 {
				quietFrom = -1
				continue
			}
		}
		held, err := events.Held(ctx, s.w.Provider, ids)
		pending := err != nil
		for _, id := range ids {
			if h, ok := held[id]; !ok || h.Status.Pending() {
				pending = true
			}
		}
		if pending {
			quietFrom = -1
			continue
		}
		started, ended := s.reconcilerRuns()
		switch {
		case quietFrom < 0 || s.tap.injected() != faults:
			// Quiet (again, after a fault since: the world goes on after
			// it): nothing is due before the reconciler's next run, so the
			// world's time runs on to it at once.
			quietFrom, faults = started, s.tap.injected()
			s.runSoon()
		case ended > quietFrom:
			// A run that started after the world went quiet has ended,
			// and found nothing to do.
			return
		}
	}
}

// depth counts a queue's messages, visible, in flight or delayed.
func depth(ctx context.Context, q *sqs.Client, url string) (int, error) {
	out, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	}})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range out.Attributes {
		var x int
		fmt.Sscan(v, &x)
		n += x
	}
	return n, nil
}

// courier is the provider's side of one delivery: its attempts and what
// they were answered.
type courier struct {
	w      World
	d      delivery
	url    string
	github *githubfake.Server
	// put, when set, is the courier's attempt instead of an HTTP post:
	// EventBridge's put on the ingress queue (World.Bridge).
	put func(ctx context.Context, typ string, body []byte) int

	mu       sync.Mutex
	answers  []int
	started  bool
	finished bool
	err      error
}

// begin marks the courier started: from now on the case waits for it.
func (s *courier) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
}

// fail ends a courier that could not send: the case's error.
func (s *courier) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err, s.finished = err, true
}

// sent reports whether the courier was started (a second event is sent
// only once its fault strikes).
func (s *courier) sent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

func (s *courier) run(ctx context.Context) {
	defer func() {
		s.mu.Lock()
		s.finished = true
		s.mu.Unlock()
	}()
	if s.github != nil {
		ev, action, _ := strings.Cut(s.d.typ, ".")
		dl := s.github.Send(ctx, githubfake.RepoHook("acme", "shop", 1), s.d.id, ev, action, s.d.body)
		s.answer(dl.StatusCode)
		return
	}
	for i := 0; ; i++ {
		status := s.post(ctx)
		s.answer(status)
		if status >= 200 && status < 300 || i >= len(s.w.Retry.Retries) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(scaled(s.w.Retry.Retries[i])):
		}
	}
}

func (s *courier) answer(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = append(s.answers, status)
}

// post makes one attempt, signed anew as the provider signs each, and
// returns its status (0 for no answer).
func (s *courier) post(ctx context.Context) int {
	if s.put != nil {
		return s.put(ctx, s.d.typ, s.d.body)
	}
	now := time.Now()
	headers := map[string]string{}
	if s.w.Provider == event.ProviderStripe {
		secret := stripeSecret
		if s.w.Connect != "" {
			secret = connectSecret
		}
		headers["Stripe-Signature"] = provider.SignStripe(s.d.body, secret, now)
	} else {
		h, err := s.w.sign(secretOf(s.w.Provider), provider.Delivery{ID: s.d.id, Type: s.d.typ, Shop: "failpoints.myshopify.com", URL: signedURL(s.w.Provider), Body: s.d.body, Now: now})
		if err != nil {
			return 0
		}
		headers = h
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(s.d.body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// done reports whether the courier has nothing more to send by itself:
// it finished, or it was never started.
func (s *courier) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished || !s.started
}

// acked reports whether any attempt was answered 2xx: for GitHub, any
// attempt GitHub made, redeliveries included.
func (s *courier) acked() bool {
	if s.github != nil {
		s.github.Flush()
		for _, d := range s.github.Deliveries(githubfake.RepoHook("acme", "shop", 1)) {
			if d.GUID == s.d.id && d.StatusCode >= 200 && d.StatusCode < 300 {
				return true
			}
		}
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.answers {
		if a >= 200 && a < 300 {
			return true
		}
	}
	return false
}

// attempts is how many attempts the provider made.
func (s *courier) attempts() int {
	if s.github != nil {
		n := 0
		for _, d := range s.github.Deliveries(githubfake.RepoHook("acme", "shop", 1)) {
			if d.GUID == s.d.id {
				n++
			}
		}
		return n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.answers)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newEventID is a fresh id shaped like the provider's.
func newEventID(p string) string {
	id := newID()
	switch p {
	case event.ProviderStripe:
		return "evt_fp" + id
	case provider.GitHub:
		return id[:8] + "-" + id[8:12] + "-4" + id[13:16] + "-a" + newID()[:3] + "-" + newID()[:12]
	}
	return "msg_fp" + id
}

// settlePoll is how often settle looks at the world: each look costs the
// emulator a few requests, and with a dozen cases at once the looks were
// a good part of what the emulator served.
const settlePoll = time.Second

// Package demo is the local stack's demo day (make demo, devstack -demo):
// a downstream that fails on purpose for chosen customers, and a script
// of a realistic day of Stripe events sent to the stack, signed as Stripe
// signs them (inboxctl send's delivery, cli.Deliver): new customers with
// ids of their own, an upgrade, a failed payment, an event dead-lettered
// by its failing downstream, one rejected for good, a webhook that never
// arrived and that the reconciler finds in the Stripe stand-in, a
// duplicate delivery and an out-of-order pair. The console then shows
// every status.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/cli"
	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/fault"
)

// The day's customers, each with a story.
const (
	Ada = "cus_demo_ada" // a trial, then paid
	Ben = "cus_demo_ben" // an upgrade, its two updates delivered out of order
	Cy  = "cus_demo_cy"  // a failed payment: past_due
	Dee = "cus_demo_dee" // her invoice.paid: the downstream keeps failing, dead-lettered
	Fay = "cus_demo_fay" // her invoice.finalized: the downstream refuses it, failed_permanent
	Gus = "cus_demo_gus" // his subscription's webhook never arrived: the reconciler finds it
)

// Overrides are the template parameters of the demo's stack: a failing
// message is dead-lettered on its second receive.
var Overrides = map[string]string{"MaxReceiveCount": "2"}

// Env is the functions' environment of the demo's stack, beside
// STRIPE_API_BASE: a failed attempt comes back after a second, and the
// reconciler looks back an hour, listing events older than a second.
var Env = map[string]string{"RETRY_BACKOFF_BASE": "1s", "RETRY_BACKOFF_MAX": "2s", "RECONCILE_SETTLE": "1s", "RECONCILE_SINCE": "1h"}

// ReconcileEvery is how often the demo's reconciler runs.
const ReconcileEvery = 3 * time.Second

// Downstream is the demo's downstream, an effect on every event: it keeps
// failing (retryably) for Dee's invoices and refuses Fay's for good
// (fault.Permanent); every other event goes through.
func Downstream() effect.Handler {
	return effect.Func{HandlerName: "demo-downstream", Fn: func(_ context.Context, ev effect.Event) ([]types.TransactWriteItem, error) {
		if ev.Record.ObjectType != "invoice" {
			return nil, nil
		}
		switch c := ev.Record.Customer; {
		case strings.HasPrefix(c, Dee):
			return nil, errors.New("demo downstream: ledger unavailable (503) for " + Dee + ", on purpose")
		case strings.HasPrefix(c, Fay):
			return nil, &fault.Permanent{Err: errors.New("demo downstream: invoice refused (422) for " + Fay + ", on purpose")}
		}
		return nil, nil
	}}
}

// Registry registers Downstream in r, on every event type.
func Registry(r *effect.Registry) *effect.Registry {
	r.On(Downstream(), "*")
	return r
}

// Expect is what the day leaves in the events table, event by event.
type Expect struct {
	ID     string
	Type   string
	Status event.Status
	Source event.Source
	// Why says what the event shows.
	Why string
}

// Day is what Send did: each event's expected end, the duplicate's
// answer, and the id of the missed webhook the reconciler must find.
type Day struct {
	Events    []Expect
	Duplicate string // the receiver's answer to the duplicate delivery
	Missed    string // the event only the Stripe stand-in holds
}

// Stand is where the missed webhook is put: the Stripe stand-in's Add
// (tools/testing/stripefake), whose events the reconciler lists.
type Stand interface {
	Add(payloads ...[]byte) error
}

// step is one event of the demo day.
type step struct {
	name, typ, customer, status string
	at                          int64 // seconds after start
	want                        event.Status
	source                      event.Source
	why                         string
	repeat                      int
	missed                      bool
}

// daySteps are the demo day's events, in the order sent.
func daySteps() []step {
	processed := event.StatusProcessed
	return []step{
		{name: "ada_customer", typ: "customer.created", customer: Ada, at: 0, want: processed, why: "a new customer"},
		{name: "ada_trial", typ: "customer.subscription.created", customer: Ada, status: "trialing", at: 10, want: processed, why: "her trial"},
		{name: "ada_paid", typ: "invoice.paid", customer: Ada, at: 600, want: processed, why: "paid; delivered twice (a duplicate)", repeat: 2},
		{name: "ben_customer", typ: "customer.created", customer: Ben, at: 60, want: processed, why: "a new customer"},
		{name: "ben_sub", typ: "customer.subscription.created", customer: Ben, status: "active", at: 70, want: processed, why: "his subscription"},
		// The out-of-order pair: the later update (the upgrade) arrives
		// first; the earlier one, arriving second, is superseded.
		{name: "ben_upgrade", typ: "customer.subscription.updated", customer: Ben, status: "active", at: 1200, want: processed, why: "the upgrade, delivered first"},
		{name: "ben_update_late", typ: "customer.subscription.updated", customer: Ben, status: "active", at: 1100, want: processed,
			why: "an earlier update, delivered after the upgrade: superseded"},
		{name: "cy_customer", typ: "customer.created", customer: Cy, at: 120, want: processed, why: "a new customer"},
		{name: "cy_sub", typ: "customer.subscription.created", customer: Cy, status: "active", at: 130, want: processed, why: "her subscription"},
		{name: "cy_payment_failed", typ: "invoice.payment_failed", customer: Cy, at: 1800, want: processed, why: "a failed payment"},
		{name: "cy_past_due", typ: "customer.subscription.updated", customer: Cy, status: "past_due", at: 1810, want: processed, why: "past due: no access"},
		{name: "dee_customer", typ: "customer.created", customer: Dee, at: 180, want: processed, why: "a new customer"},
		{name: "dee_sub", typ: "customer.subscription.created", customer: Dee, status: "active", at: 190, want: processed, why: "her subscription"},
		{name: "dee_paid", typ: "invoice.paid", customer: Dee, at: 2400, want: event.StatusDeadLettered, why: "the downstream keeps failing: dead-lettered"},
		{name: "fay_customer", typ: "customer.created", customer: Fay, at: 240, want: processed, why: "a new customer"},
		{name: "fay_finalized", typ: "invoice.finalized", customer: Fay, at: 2500, want: event.StatusFailedPermanent, why: "the downstream refuses it: failed for good"},
		{name: "gus_customer", typ: "customer.created", customer: Gus, at: 300, want: processed, why: "a new customer"},
		{name: "gus_sub", typ: "customer.subscription.created", customer: Gus, status: "active", at: 310, want: processed, source: event.SourceReconciler,
			why: "its webhook never arrived: the reconciler found it", missed: true},
	}
}

// Send sends the demo day to the stack's Stripe endpoint webhookURL,
// signed with secret, and puts the missed webhook in stand. Times are
// the hour before now; every id is fresh.
func Send(ctx context.Context, webhookURL, secret string, stand Stand, now time.Time, out io.Writer) (Day, error) {
	r := &dayRun{
		webhookURL: webhookURL, secret: secret, out: out, client: &http.Client{Timeout: 35 * time.Second},
		start: now.Add(-time.Hour).Unix(),
		run:   strings.ToLower(stripefixture.NewID("")[:6]), // ids of this run: a second demo on the same stack is a day of its own
	}
	var day Day
	type delivery struct {
		name string
		body []byte
	}
	var later []delivery // Stripe's retries of a delivery, at the end of the day
	for _, s := range daySteps() {
		c := r.cus(s.customer)
		body, err := r.body(s)
		if err != nil {
			return day, err
		}
		source := s.source
		if source == "" {
			source = event.SourceWebhook
		}
		day.Events = append(day.Events, Expect{ID: r.id(s.name), Type: s.typ, Status: s.want, Source: source, Why: s.why})
		if s.missed {
			if err := stand.Add(body); err != nil {
				return day, fmt.Errorf("demo: %s: the Stripe stand-in: %w", s.name, err)
			}
			day.Missed = r.id(s.name)
			fmt.Fprintf(out, "%-40s %-32s %s (not sent: only Stripe has it)\n", r.id(s.name), s.typ, c)
			continue
		}
		if _, err := r.send(ctx, s.name, s.typ, c, body); err != nil {
			return day, err
		}
		for range s.repeat - 1 {
			later = append(later, delivery{s.name, body})
		}
	}
	for _, d := range later {
		answer, err := r.send(ctx, d.name, "(again: a duplicate)", "", d.body)
		if err != nil {
			return day, err
		}
		day.Duplicate = answer
	}
	return day, nil
}

// dayRun is one sending of the demo day.
type dayRun struct {
	webhookURL, secret string
	out                io.Writer
	client             *http.Client
	start              int64
	run                string
}

func (r *dayRun) id(name string) string { return "evt_demo_" + r.run + "_" + name }
func (r *dayRun) sub(c string) string   { return "sub_" + c[len("cus_"):] + "_" + r.run }
func (r *dayRun) cus(c string) string   { return c + "_" + r.run }

// body is step s's event.
func (r *dayRun) body(s step) ([]byte, error) {
	prefix, err := stripefixture.ObjectPrefix(s.typ)
	if err != nil {
		return nil, fmt.Errorf("demo: %s: %w", s.name, err)
	}
	objectID := "" // a customer's own events: the customer
	switch prefix {
	case "sub_":
		objectID = r.sub(s.customer)
	case "cus_":
	default:
		objectID = stripefixture.NewID(prefix)
	}
	body, err := stripefixture.Build(s.typ, stripefixture.Options{ID: r.id(s.name), ObjectID: objectID, Customer: r.cus(s.customer), Created: r.start + s.at, Status: s.status})
	if err != nil {
		return nil, fmt.Errorf("demo: %s: %w", s.name, err)
	}
	return body, nil
}

// send delivers body, signed, and returns the stack's answer.
func (r *dayRun) send(ctx context.Context, name, typ, customer string, body []byte) (string, error) {
	status, answer, err := cli.Deliver(ctx, r.client, r.webhookURL, body, r.secret, time.Now())
	if err != nil {
		return "", fmt.Errorf("demo: POST %s: %w", r.webhookURL, err)
	}
	if status/100 != 2 {
		return "", fmt.Errorf("demo: %s: the stack answered %d %s", name, status, answer)
	}
	fmt.Fprintf(r.out, "%-40s %-32s %s %d %s\n", r.id(name), typ, customer, status, answer)
	return answer, nil
}

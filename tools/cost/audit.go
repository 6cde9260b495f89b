package cost

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/audit"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/testing/stripefake"
)

const labelAudit = "audit run"

// auditSubscriptions is how many subscriptions the metered audit lists:
// two pages, the second partial.
const auditSubscriptions = 150

// AuditCost is what one audit run that finds no drift costs, measured
// over auditSubscriptions and scaled per subscription.
type AuditCost struct {
	Subscriptions int
	// Lists is the list requests to Stripe's API; Pages the pages.
	Lists, Pages int
	// BatchRRU is the batched reads of the mirror's snapshots; ScanRRU
	// the keys-only scan for unknown_there, over the subscriptions'
	// snapshots and entitlements (ItemBytes a subscription).
	BatchRRU, ScanRRU float64
	ItemBytes         int
	// RateLimit is the list's request rate (the reconciler's, test mode).
	RateLimit int
}

// At scales the measured run to n subscriptions: list requests, read
// units, dollars, and the time the list takes at the rate limit.
func (a AuditCost) At(n float64) (lists, rru, usd float64, took time.Duration) {
	lists = math.Ceil(n / 100)
	perSub := a.BatchRRU / float64(a.Subscriptions)
	// The scan reads every subscription's items, eventually consistent:
	// half a unit per 4 KB of them.
	scan := math.Ceil(n*float64(a.ItemBytes)/4096) / 2
	rru = n*perSub + scan
	usd = rru * price("ddb.read") / 1e6
	took = time.Duration(lists / float64(a.RateLimit) * float64(time.Second))
	return lists, rru, usd, took
}

// audit measures an audit run over auditSubscriptions that the mirror
// already agrees with: the daily run's usual case (drift writes only
// what differs, as an event would).
func (m *meter) audit(ctx context.Context) (AuditCost, error) {
	fake := stripefake.New()
	defer fake.Close()
	for i := range auditSubscriptions {
		body, err := stripefixture.Build("customer.subscription.updated", stripefixture.Options{
			ObjectID: fmt.Sprintf("sub_audit%03d", i), Customer: fmt.Sprintf("cus_audit%03d", i)})
		if err != nil {
			return AuditCost{}, err
		}
		if err := fake.PutObject("", dataObject(body)); err != nil {
			return AuditCost{}, err
		}
	}
	// The reconciler's environment, as the template gives it, over the
	// stand-in.
	c, err := reconcilerboot.AuditConfigFromEnv(envOf(m.env[devstack.ReconcilerID]), m.base, nil)
	if err != nil {
		return AuditCost{}, err
	}
	c.APIBase, c.Key = fake.URL, secrets.Fixed("the stand-in's key", "rk_test_cost_meter")
	aud, err := reconcilerboot.NewAuditor(ctx, c, m.rec.Instrument(m.base, "reconciler"), nil)
	if err != nil {
		return AuditCost{}, err
	}
	m.label(labelSetup)
	if _, err := aud.Run(ctx, audit.Options{}); err != nil { // the mirror learns them
		return AuditCost{}, fmt.Errorf("audit: first run: %w", err)
	}
	fake.ResetRequests()
	m.label(labelAudit)
	res, err := aud.Run(ctx, audit.Options{})
	m.label("")
	if err != nil {
		return AuditCost{}, fmt.Errorf("audit: %w", err)
	}
	if res.Matched != auditSubscriptions || res.Repaired != 0 {
		return AuditCost{}, fmt.Errorf("audit: matched %d, repaired %d; want all %d matched", res.Matched, res.Repaired, auditSubscriptions)
	}
	ac := AuditCost{Subscriptions: auditSubscriptions, Lists: len(fake.SubscriptionLists()), Pages: res.Pages, RateLimit: 20}
	for _, c := range m.rec.Calls(labelAudit) {
		for _, r := range c.Reads {
			switch c.Operation {
			case "BatchGetItem":
				ac.BatchRRU += r.Units
			}
		}
	}
	// A subscription's items: its snapshot and its customer's
	// entitlement, read unrecorded.
	db := dynamodb.NewFromConfig(m.base)
	table, hash := m.res.Tables["MirrorTable"], m.schema.Tables["MirrorTable"].Hash
	for _, key := range []string{"sub_audit000", mirror.EntitlementKey("cus_audit000")} {
		out, err := db.GetItem(
			ctx,
			&dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{hash: &types.AttributeValueMemberS{Value: key}}},
		)
		if err != nil {
			return AuditCost{}, err
		}
		ac.ItemBytes += ItemSize(out.Item)
	}
	ac.ScanRRU = math.Ceil(float64(auditSubscriptions*ac.ItemBytes)/4096) / 2
	return ac, nil
}

// printAudit prints the audit's cost at 10,000 and 1,000,000
// subscriptions.
func (r *Report) printAudit(out io.Writer) {
	a := r.Audit
	fmt.Fprintf(out, "\n== the audit (inboxctl audit), a run that finds no drift\n")
	fmt.Fprintf(
		out,
		"measured: %d subscriptions, %d list requests (%d pages), %.0f RRU of batched snapshot reads, a scan of %d B a subscription (snapshot and entitlement)\n",
		a.Subscriptions,
		a.Lists,
		a.Pages,
		a.BatchRRU,
		a.ItemBytes,
	)
	for _, n := range []float64{1e4, 1e6} {
		lists, rru, usd, took := a.At(n)
		fmt.Fprintf(out, "%.0f subscriptions: %.0f list requests (%v at %d/s), %.0f RRU, $%.4f a run, $%.2f a month daily; writes only on drift\n",
			n, lists, took.Round(time.Second), a.RateLimit, rru, usd, usd*30)
	}
}

// dataObject is an event's data.object.
func dataObject(body []byte) json.RawMessage {
	var ev struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	return ev.Data.Object
}

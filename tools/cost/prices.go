package cost

import (
	"fmt"
	"strconv"
	"strings"
)

// PricesRead is when the prices below were read. Check them before relying
// on the figures: list prices change.
const PricesRead = "2026-11-30"

// Price is one list price.
type Price struct {
	Key   string // how the meter refers to it
	What  string
	USD   float64
	Per   string
	Where string // where it was read
}

// Prices are AWS us-east-1 on-demand list prices, without free tiers, as
// published on AWS's pricing pages (DynamoDB after its November 2024
// on-demand reduction), read on PricesRead. docs/performance.md prints this
// table (TestDocsPriceTable keeps the two the same).
var Prices = []Price{
	{"httpapi", "API Gateway HTTP API requests", 1.00, "million requests (first 300 million a month; 512 KB each)", "aws.amazon.com/api-gateway/pricing"},
	{"lambda.requests", "Lambda requests", 0.20, "million requests", "aws.amazon.com/lambda/pricing"},
	{"lambda.arm64", "Lambda duration, arm64", 0.0000133334, "GB-second", "aws.amazon.com/lambda/pricing"},
	{"lambda.x86_64", "Lambda duration, x86_64", 0.0000166667, "GB-second", "aws.amazon.com/lambda/pricing"},
	{"sqs", "SQS standard queue requests", 0.40, "million requests (64 KB chunks)", "aws.amazon.com/sqs/pricing"},
	{"ddb.write", "DynamoDB on-demand write request units", 0.625, "million WRU", "aws.amazon.com/dynamodb/pricing/on-demand"},
	{"ddb.read", "DynamoDB on-demand read request units", 0.125, "million RRU", "aws.amazon.com/dynamodb/pricing/on-demand"},
	{"ddb.storage", "DynamoDB standard table storage", 0.25, "GB-month", "aws.amazon.com/dynamodb/pricing/on-demand"},
	{"ddb.pitr", "DynamoDB point-in-time recovery", 0.20, "GB-month of table size", "aws.amazon.com/dynamodb/pricing/on-demand"},
	{"logs.ingest", "CloudWatch Logs ingestion (standard)", 0.50, "GB", "aws.amazon.com/cloudwatch/pricing"},
	{"cw.metric", "CloudWatch custom metrics", 0.30, "metric-month (first 10,000)", "aws.amazon.com/cloudwatch/pricing"},
	{"cw.alarm", "CloudWatch alarm, standard resolution", 0.10, "alarm-month", "aws.amazon.com/cloudwatch/pricing"},
	{"cw.alarm.hires", "CloudWatch alarm, high resolution", 0.30, "alarm-month", "aws.amazon.com/cloudwatch/pricing"},
	{"cw.dashboard", "CloudWatch dashboard", 3.00, "dashboard-month", "aws.amazon.com/cloudwatch/pricing"},
	{"xray.traces", "X-Ray traces recorded", 5.00, "million traces", "aws.amazon.com/xray/pricing"},
	{"eventbridge.partner", "EventBridge partner (SaaS) events", 1.00, "million events (64 KB chunks)", "aws.amazon.com/eventbridge/pricing"},
}

// price returns the price named key; an unknown key is a programming
// error.
func price(key string) float64 {
	for _, p := range Prices {
		if p.Key == key {
			return p.USD
		}
	}
	panic("cost: no price " + key)
}

// Hosted is a hosted webhook gateway's published plan, priced at a monthly
// volume.
type Hosted struct {
	Name string
	// Base is the plan's monthly price, Included the events it includes,
	// PerMillion the price of each further million ("metered").
	Base, PerMillion float64
	Included         float64
	// Max is the most events a month the plan takes (0: no limit).
	Max float64
	// Note says where the figures come from.
	Note string
}

// Monthly is the plan's price at events a month, and false when the plan
// publishes no price for that volume.
func (h Hosted) Monthly(events float64) (float64, bool) {
	if h.Max > 0 && events > h.Max {
		return 0, false
	}
	return h.Base + max(0, events-h.Included)/1e6*h.PerMillion, true
}

// HostedPlans are the hosted alternatives compared, as published: each
// note says where and when the plan was transcribed. Where a figure is not
// published, Monthly says so rather than guess.
var HostedPlans = []Hosted{
	{Name: "Hookdeck Team", Base: 39, Included: 10_000, PerMillion: 10,
		Note: "$39/month with 10,000 events, metered beyond (transcribed from hookdeck.com/pricing on 2026-09-20); the metered rate, $10/M, gives $48.90 at 1M"},
	{Name: "Hookbase Business", Base: 79, Included: 2_000_000, Max: 2_000_000,
		Note: "$79/month for up to 2M events, $39.50/M when full (transcribed from hookbase.app/pricing on 2026-10-18); above 2M: not published"},
	{Name: "Svix Free", Base: 0, Included: 50_000, PerMillion: 100,
		Note: "50,000 messages free, then $0.0001 a message, 99.9% SLA (transcribed from svix.com/pricing on 2026-09-20)"},
	{Name: "Svix Professional", Base: 490, Included: 50_000, PerMillion: 100,
		Note: "$490/month with 50,000 messages, then $0.0001 a message, 99.99% SLA (transcribed from svix.com/pricing on 2026-09-20)"},
}

// PriceTableMarkdown is the price table as docs/performance.md prints it.
func PriceTableMarkdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "| price (read %s) | USD | per | source |\n|---|---|---|---|\n", PricesRead)
	for _, p := range Prices {
		fmt.Fprintf(&sb, "| %s | %s | %s | %s |\n", p.What, dollars(p.USD), p.Per, p.Where)
	}
	for _, h := range HostedPlans {
		fmt.Fprintf(&sb, "| %s | %s | month | %s |\n", h.Name, dollars(h.Base), h.Note)
	}
	return sb.String()
}

// dollars prints a price with cents, and with every further digit it has.
func dollars(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i < 0 || len(s)-i-1 < 2 {
		return fmt.Sprintf("%.2f", v)
	}
	return s
}

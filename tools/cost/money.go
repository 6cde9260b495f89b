package cost

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/devstack"
	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// money is dollars per million new events of size, line by line.
func (m *meter) money(rep *Report, size EventSize) []MoneyLine {
	sc := rep.Scenario(ScenarioNew, size)
	calls := m.rec.Calls(label(ScenarioNew, size))
	batch := float64(max(m.source.BatchSize, 1))
	memGB := func(id string) float64 { return float64(m.memoryMB(id)) / 1024 }
	var lines []MoneyLine
	add := func(what string, usd float64, how string, args ...any) {
		lines = append(lines, MoneyLine{What: what, USD: usd, How: fmt.Sprintf(how, args...)})
	}
	add("API Gateway HTTP API", price("httpapi"), "1 request per delivery")
	add("Lambda requests", price("lambda.requests")*(1+1/batch), "receiver 1 per delivery; processor 1 per batch of %.0f (the template's BatchSize)", batch)
	recvGBs := memGB(devstack.ReceiverID) * math.Ceil(rep.ReceiverMs) / 1000
	procGBs := memGB(devstack.ProcessorID) * math.Ceil(rep.ProcessorMs) / 1000
	durationUSD := price("lambda."+m.arch(devstack.ReceiverID))*recvGBs*1e6 + price("lambda."+m.arch(devstack.ProcessorID))*procGBs*1e6
	add("Lambda duration ("+m.arch(devstack.ReceiverID)+")", durationUSD,
		"%s MB; measured in process against the emulator: receiver %.1f ms, processor %.1f ms an event (each event invoked alone: an upper bound)",
		template.Scalar(m.functionProperty(devstack.ReceiverID, "MemorySize")), rep.ReceiverMs, rep.ProcessorMs)
	sqsReqs, ops := sqsRequests(2/batch, calls)
	add("SQS", price("sqs")*sqsReqs, "%s recorded; receive and delete 1 per batch of %.0f (the event source mapping)", ops, batch)
	add("DynamoDB writes", price("ddb.write")*float64(sc.WRU()), "%d WRU an event, tables and indexes (steps above)", sc.WRU())
	add("DynamoDB reads", price("ddb.read")*sc.RRU(), "%.1f RRU an event (steps above)", sc.RRU())
	storage, how, perObject, untimed := m.storage(calls)
	add("DynamoDB storage + PITR", storage, "%s", how)
	if size.Name == Small.Name {
		rep.ObjectBytes, rep.ObjectTables = perObject, untimed
	}
	logs, how := m.logBytes(label(ScenarioNew, size))
	add("CloudWatch Logs", price("logs.ingest")*logs*1e6/(1<<30), "%s", how)
	noXray := 0.0
	for _, l := range lines {
		noXray += l.USD
	}
	rep.perEventNoXray[size.Name] = noXray
	if x := rep.xray(1e6); x > 0 {
		add("X-Ray (Tracing: Active)", x, "at 1M events a month: %s", m.xrayHow(rep))
	} else {
		add("X-Ray", 0, "Tracing is not Active in the template: no traces recorded (what Active costs: below the total)")
	}
	return lines
}

// moneyEventBridge is dollars per million new events of size arriving by
// Stripe's EventBridge destination, line by line, as money prices the
// webhook route: EventBridge's partner event, its send to the ingress
// queue and the event source mapping's receive and delete there, the
// bridge's invocation and what it recorded, then the processor as for a
// webhook. X-Ray is left out (see RoutesNoXray).
func (m *meter) moneyEventBridge(rep *Report, size EventSize) []MoneyLine {
	l := label(ScenarioEventBridge, size)
	sc := rep.Scenario(ScenarioEventBridge, size)
	calls := m.rec.Calls(l)
	batch := float64(max(m.source.BatchSize, 1))
	ingressBatch := float64(max(m.ingressSource.BatchSize, 1))
	memGB := func(id string) float64 { return float64(m.memoryMB(id)) / 1024 }
	envelope := m.envelopes[size.Name]
	chunks := math.Ceil(float64(envelope) / (64 << 10))
	var lines []MoneyLine
	add := func(what string, usd float64, how string, args ...any) {
		lines = append(lines, MoneyLine{What: what, USD: usd, How: fmt.Sprintf(how, args...)})
	}
	add("EventBridge partner events", price("eventbridge.partner")*chunks,
		"1 partner event an event (%d B with its envelope, billed per 64 KB); the rule and its delivery to the SQS target are not charged", envelope)
	add(
		"Lambda requests",
		price("lambda.requests")*(1/ingressBatch+1/batch),
		"bridge 1 per batch of %.0f, processor 1 per batch of %.0f (the template's BatchSizes)",
		ingressBatch,
		batch,
	)
	bridgeGBs := memGB(devstack.BridgeID) * math.Ceil(rep.BridgeMs) / 1000
	procGBs := memGB(devstack.ProcessorID) * math.Ceil(rep.ProcessorMs) / 1000
	add(
		"Lambda duration ("+m.arch(devstack.BridgeID)+")",
		price("lambda."+m.arch(devstack.BridgeID))*bridgeGBs*1e6+price("lambda."+m.arch(devstack.ProcessorID))*procGBs*1e6,
		"%d MB; measured in process against the emulator: bridge %.1f ms, processor %.1f ms an event (each event invoked alone: an upper bound)",
		m.memoryMB(devstack.BridgeID),
		rep.BridgeMs,
		rep.ProcessorMs,
	)
	// EventBridge's SendMessage to the ingress queue is billed to the
	// queue's owner, per 64 KB; the event source mappings receive and
	// delete once per batch on each queue.
	sqsReqs, ops := sqsRequests(chunks+2/ingressBatch+2/batch, calls)
	add(
		"SQS",
		price("sqs")*sqsReqs,
		"EventBridge's SendMessage to the ingress queue %.0f; %s recorded; receive and delete 1 per batch on the ingress queue (%.0f) and the webhook queue (%.0f)",
		chunks,
		ops,
		ingressBatch,
		batch,
	)
	add("DynamoDB writes", price("ddb.write")*float64(sc.WRU()), "%d WRU an event (steps above)", sc.WRU())
	add("DynamoDB reads", price("ddb.read")*sc.RRU(), "%.1f RRU an event (steps above)", sc.RRU())
	storage, how, _, _ := m.storage(calls)
	add("DynamoDB storage + PITR", storage, "%s", how)
	app, per := appLogBytes(m.logs.Lines(l), batch)
	platform, platformHow := m.platformBytes(1/ingressBatch + 1/batch)
	logs := app + platform
	add(
		"CloudWatch Logs",
		price("logs.ingest")*logs*1e6/(1<<30),
		"%.0f B an event: bridge %.0f, processor %.0f (its batch line shared by %.0f), no access log, %s",
		logs,
		per["bridge"],
		per["processor"],
		batch,
		platformHow,
	)
	return lines
}

// sqsRequests is start plus the SQS requests calls made (each billed per
// 64 KB chunk), and those requests by operation ("SendMessage 1"),
// sorted.
func sqsRequests(start float64, calls []Call) (float64, string) {
	n, byOp := start, map[string]int{}
	for _, c := range calls {
		if c.Service == "SQS" {
			n += float64(c.Chunks)
			byOp[c.Operation] += c.Chunks
		}
	}
	var ops []string
	for op, k := range byOp {
		ops = append(ops, fmt.Sprintf("%s %d", op, k))
	}
	sort.Strings(ops)
	return n, strings.Join(ops, ", ")
}

// appLogBytes is what the log lines ingest an event, in all and by
// function: the processor's lines not about one event (its batch's) are
// shared by the batch of batch events.
func appLogBytes(lines []LogLine, batch float64) (float64, map[string]float64) {
	var app float64
	per := map[string]float64{}
	for _, x := range lines {
		b := float64(x.Bytes)
		if x.Function == "processor" && !x.AboutEvent {
			b /= batch
		}
		app += b
		per[x.Function] += b
	}
	return app, per
}

// RoutesNoXray is the webhook route's lines of Money without X-Ray, to
// set beside EventBridgeMoney.
func (r *Report) RoutesNoXray(size string) []MoneyLine {
	var out []MoneyLine
	for _, l := range r.Money[size] {
		if !strings.HasPrefix(l.What, "X-Ray") {
			out = append(out, l)
		}
	}
	return out
}

// storage is the storage and point-in-time recovery an event's items cost
// over their life (their TTL), in dollars per million events. Items
// without a TTL (the mirror: one per object, rewritten by the object's
// later events) grow with objects, not events: they are left out here and
// returned as bytes an object.
func (m *meter) storage(calls []Call) (usd float64, how string, perObject float64, untimed []string) {
	type final struct {
		table string
		item  Item
	}
	items := map[string]*final{}
	var keys []string
	for _, c := range calls {
		for _, w := range c.Writes {
			if w.Outcome != Applied || len(w.Charge.Keys) == 0 {
				continue
			}
			k := w.Charge.Keys[0].Target + " " + w.Charge.Keys[0].Key
			if _, ok := items[k]; !ok {
				keys = append(keys, k)
			}
			items[k] = &final{table: w.Table, item: w.After}
		}
	}
	const overhead = 100 // bytes of storage each item and each index entry adds
	now := float64(time.Now().Unix())
	var base, index, days float64
	for _, k := range keys {
		f := items[k]
		if f.item == nil {
			continue
		}
		t := m.schema.Tables[f.table]
		b := float64(ItemSize(f.item) + overhead)
		ix := 0.0
		for _, x := range t.Indexes {
			if e, ok := t.Entry(x, f.item); ok {
				ix += float64(ItemSize(e) + overhead)
			}
		}
		expires, err := strconv.ParseFloat(render(f.item[t.TTL]), 64)
		if t.TTL == "" || err != nil {
			perObject += b + ix
			untimed = append(untimed, f.table)
			continue
		}
		d := (expires - now) / 86400
		days = max(days, d)
		months := d / (365.0 / 12)
		gbMonths := func(bytes float64) float64 { return bytes * 1e6 / (1 << 30) * months }
		base += b
		index += ix
		usd += price("ddb.storage") * gbMonths(b+ix)
		if t.PITR {
			usd += price("ddb.pitr") * gbMonths(b)
		}
	}
	sort.Strings(untimed)
	how = fmt.Sprintf("%.0f B of items + %.0f B of index entries an event (100 B overhead each), kept %.0f days (their TTL); PITR on the tables' own bytes",
		base, index, days)
	return usd, how, perObject, dedupe(untimed)
}

// logBytes is what the functions log per event under label, with the API's
// access log line and Lambda's own records; bytes per event.
func (m *meter) logBytes(l string) (float64, string) {
	batch := float64(max(m.source.BatchSize, 1))
	var app float64
	per := map[string]float64{}
	for _, x := range m.logs.Lines(l) {
		b := float64(x.Bytes)
		if x.Function == "processor" && !x.AboutEvent {
			b /= batch // once per invocation, shared by the batch
		}
		app += b
		per[x.Function] += b
	}
	access := m.accessLogBytes()
	platform, platformHow := m.platformBytes(1 + 1/batch)
	total := app + access + platform
	return total, fmt.Sprintf("%.0f B an event: receiver %.0f, processor %.0f (its batch line shared by %.0f), API access log %.0f, %s",
		total, per["receiver"], per["processor"], batch, access, platformHow)
}

// accessLogBytes renders the HTTP API's access log format with values of
// a typical delivery.
func (m *meter) accessLogBytes() float64 {
	for _, r := range m.tmpl.Resources("AWS::Serverless::HttpApi") {
		settings, _ := r.Properties["AccessLogSettings"].(map[string]any)
		format, _ := settings["Format"].(string)
		if format == "" {
			continue
		}
		values := map[string]string{
			"requestId": "Q2m1ZhB7IAMEVxA=", "identity.sourceIp": "54.187.174.169",
			"routeKey": m.route.Method + " " + m.route.Path, "status": "200", "responseLatency": "38",
			"integrationErrorMessage": "-",
		}
		line := regexp.MustCompile(`\$context\.[A-Za-z.]+`).ReplaceAllStringFunc(format, func(v string) string {
			if x, ok := values[strings.TrimPrefix(v, "$context.")]; ok {
				return x
			}
			return "-"
		})
		return float64(len(line) + 1)
	}
	return 0
}

// platformBytes is what Lambda's own records (start, runtime done, report)
// add per event, invocations an event: none when the template's
// SystemLogLevel filters them out.
func (m *meter) platformBytes(invocations float64) (float64, string) {
	level := strings.ToUpper(template.Scalar(m.functionProperty(devstack.ReceiverID, "LoggingConfig", "SystemLogLevel")))
	if level == "WARN" {
		return 0, "Lambda's start/runtimeDone/report records 0 (SystemLogLevel WARN keeps them out)"
	}
	// An estimate, not a measurement: Lambda's JSON platform records are
	// about 180 B (start), 300 B (runtimeDone) and 330 B (report).
	const perInvocation = 810
	return perInvocation * invocations,
		fmt.Sprintf("Lambda's start/runtimeDone/report records, estimated at %d B an invocation (SystemLogLevel %s)", perInvocation, level)
}

// xray returns the X-Ray cost of a month of events: Lambda samples with
// the default rule (the first request each second, then 5%), per function
// whose Tracing is Active in the template, or every function when all.
func (m *meter) xray(all bool) func(events float64) float64 {
	active := map[string]bool{}
	for _, id := range m.tmpl.Functions() {
		active[id] = all || template.Scalar(m.functionProperty(id, "Tracing")) == "Active"
	}
	batch := float64(max(m.source.BatchSize, 1))
	runsPerMonth := 0.0
	if f, err := m.tmpl.Function(devstack.ReconcilerID); err == nil {
		if expr, ok := f.Schedule(); ok {
			if every, err := devstack.ScheduleInterval(expr); err == nil {
				runsPerMonth = secondsPerMonth / every.Seconds()
			}
		}
	}
	sampled := func(perMonth float64) float64 {
		r := perMonth / secondsPerMonth
		return (min(r, 1) + 0.05*max(r-1, 0)) * secondsPerMonth
	}
	return func(events float64) float64 {
		traces := 0.0
		if active[devstack.ReceiverID] {
			traces += sampled(events)
		}
		if active[devstack.ProcessorID] {
			traces += sampled(events / batch)
		}
		if active[devstack.ReconcilerID] {
			traces += sampled(runsPerMonth)
		}
		return traces / 1e6 * price("xray.traces")
	}
}

func (m *meter) xrayHow(rep *Report) string {
	return fmt.Sprintf("a trace per sampled invocation (default rule: the first each second, then 5%%); $%.2f/M at 10M a month", rep.xray(10e6)/10)
}

// fixed is the monthly cost that does not grow with events.
func (m *meter) fixed(rep *Report, run reconcilerRun) []MoneyLine {
	var lines []MoneyLine
	std, hi := 0, 0
	for _, a := range m.tmpl.Resources("AWS::CloudWatch::Alarm") {
		if p, ok := template.Int(a.Properties["Period"]); ok && p < 60 {
			hi++
		} else {
			std++
		}
	}
	lines = append(lines, MoneyLine{"alarms", float64(std)*price("cw.alarm") + float64(hi)*price("cw.alarm.hires"),
		fmt.Sprintf("%d standard-resolution and %d high-resolution alarms in the template", std, hi)})
	dash := len(m.tmpl.Resources("AWS::CloudWatch::Dashboard"))
	lines = append(lines, MoneyLine{"dashboard", float64(dash) * price("cw.dashboard"), fmt.Sprintf("%d dashboard(s)", dash)})
	lines = append(lines, MoneyLine{"custom metrics (EMF)", float64(len(rep.Metrics)) * price("cw.metric"),
		fmt.Sprintf("%d metric names × dimension values the code emitted here; each other outcome that occurs in a month adds one", len(rep.Metrics))})

	if rep.ReconcilerRuns > 0 {
		f, _ := m.tmpl.Function(devstack.ReconcilerID)
		expr, _ := f.Schedule()
		every, _ := devstack.ScheduleInterval(expr)
		runs := secondsPerMonth / every.Seconds()
		mb := m.memoryMB(devstack.ReconcilerID)
		var wru int
		var rru float64
		for _, c := range run.calls {
			wru += c.WriteUnits()
			rru += c.ReadUnits()
		}
		logBytes := 0.0
		for _, l := range run.lines {
			logBytes += float64(l.Bytes)
		}
		perRun := price("lambda.requests")/1e6 + price("lambda."+m.arch(devstack.ReconcilerID))*float64(mb)/1024*math.Ceil(run.ms)/1000 +
			float64(wru)*price("ddb.write")/1e6 + rru*price("ddb.read")/1e6 + logBytes*price("logs.ingest")/(1<<30)
		lines = append(lines, MoneyLine{"reconciler schedule", perRun * runs,
			fmt.Sprintf("%.0f runs (%s); each, with nothing to list: %.0f ms, %d WRU, %.1f RRU, %.0f B of logs", runs, expr, run.ms, wru, rru, logBytes)})
	}
	// Lambda's SQS event source mapping long-polls the queue while it is
	// idle; AWS bills those receives. Stated: 5 pollers, 20 s long polls.
	polls := 5.0 * secondsPerMonth / 20
	lines = append(lines, MoneyLine{"SQS idle polling", polls * price("sqs") / 1e6,
		fmt.Sprintf("%.0f empty receives (stated: the event source mapping's 5 pollers, 20 s long polls)", polls)})
	return lines
}

// fixedEventBridge is what Stripe's EventBridge destination adds to the
// fixed monthly cost when it is on: the alarms only it has, the bridge's
// custom metrics, and the idle polling of its event source mapping.
func (m *meter) fixedEventBridge(rep *Report) []MoneyLine {
	have := map[string]bool{}
	for _, a := range m.tmpl.Resources("AWS::CloudWatch::Alarm") {
		have[a.LogicalID] = true
	}
	alarms := 0
	for _, a := range m.full.Resources("AWS::CloudWatch::Alarm") {
		if !have[a.LogicalID] {
			alarms++
		}
	}
	polls := 5.0 * secondsPerMonth / 20
	return []MoneyLine{
		{"alarms", float64(alarms) * price("cw.alarm"), fmt.Sprintf("%d standard-resolution alarm(s) of its own", alarms)},
		{
			"custom metrics (EMF)",
			float64(len(rep.BridgeMetrics)) * price("cw.metric"),
			fmt.Sprintf("%d metric names × dimension values the bridge emitted here", len(rep.BridgeMetrics)),
		},
		{"SQS idle polling", polls * price("sqs") / 1e6, fmt.Sprintf("%.0f empty receives on the ingress queue (stated: 5 pollers, 20 s long polls)", polls)},
	}
}

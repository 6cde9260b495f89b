package cost

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Print writes the report. Its last three lines are the figures with
// targets (docs/performance.md), exactly as
//
//	WRU per processed event (2.6 KB): N
//	total per million events (2.6 KB): $X.XX
//	hottest key at 3000 events/s: N write units/s
func (r *Report) Print(w io.Writer) {
	var out bytes.Buffer
	defer func() {
		// The tables pad their last columns; a report line ends with text.
		for _, line := range strings.SplitAfter(out.String(), "\n") {
			_, _ = io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n")))
		}
	}()
	r.print(&out)
}

func (r *Report) print(out io.Writer) {
	where := "the emulator"
	if strings.HasPrefix(r.Against, "AWS") {
		where = "AWS"
	}
	fmt.Fprintf(out, "webhook-inbox cost meter (%s): every unit below is priced from the requests the code made against %s,\n",
		time.Now().UTC().Format(time.DateOnly), where)
	fmt.Fprintln(out, "the items they wrote and template.yaml's own indexes, by DynamoDB's published rules (tools/cost).")
	var sizes []string
	for _, s := range r.Sizes {
		sizes = append(sizes, fmt.Sprintf("%s = %s, %d B", s.Name, s.Type, r.Bytes[s.Name]))
	}
	fmt.Fprintf(out, "events: %s\n", strings.Join(sizes, "; "))

	for _, size := range r.Sizes {
		for _, sc := range Scenarios {
			r.printScenario(out, sc, size)
		}
	}
	for _, sc := range GitHubScenarios {
		r.printSteps(out, fmt.Sprintf("%s (%s, %d B)", sc, githubType, r.Bytes[labelGitHub]), r.GitHub[sc])
	}
	r.printSteps(out, fmt.Sprintf("%s (%s)", ScenarioConnectFirst, Small.Name), r.Connect)
	r.printSummary(out)
	r.printMoney(out)
	r.printRoutes(out)
	r.printFixed(out)
	r.printHot(out)
	r.printAudit(out)
	r.printNotes(out)

	hot := r.Hottest()
	fmt.Fprintln(out)
	fmt.Fprintf(out, "WRU per processed event (%s): %d\n", Small.Name, r.Scenario(ScenarioNew, Small).WRU())
	fmt.Fprintf(out, "total per million events (%s): $%.2f\n", Small.Name, r.PerMillion[Small.Name])
	fmt.Fprintf(out, "hottest key at %.0f events/s: %.0f write units/s\n", r.Rate, math.Round(hot.UnitsPerSecond))
}

func (r *Report) printScenario(out io.Writer, scenario string, size EventSize) {
	r.printSteps(out, scenario+", "+size.Name, r.Scenario(scenario, size))
}

// printSteps prints one scenario's steps under title.
func (r *Report) printSteps(out io.Writer, title string, sc *ScenarioCost) {
	fmt.Fprintf(out, "\n== %s\n", title)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "step\tfunction\trequest\ttable\titem bytes\tWRU\tindex WRU\tRRU\t")
	table, index := 0, 0
	for _, st := range sc.Steps {
		bytes := ""
		switch {
		case st.Operation == "BatchGetItem" && st.Note != "":
			bytes = ""
		case st.RRU > 0 && st.WRU == 0:
			bytes = fmt.Sprintf("%d read", st.Before)
		default:
			bytes = fmt.Sprintf("%d → %d", st.Before, st.After)
		}
		req := st.Operation
		if st.Outcome != "" && st.Outcome != Applied {
			req += " (" + string(st.Outcome) + ")"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", st.N, st.Function, req, st.Table, bytes,
			blankZero(st.WRU), indexes(st.Index), blankZeroF(st.RRU), st.Note)
		table += st.WRU
		for _, u := range st.Index {
			index += u
		}
	}
	fmt.Fprintf(w, "total\t\t\t\t\t%d\t%d\t%s\tWRU %d (tables %d + indexes %d)\n", table, index, fmtUnits(sc.RRU()), sc.WRU(), table, index)
	_ = w.Flush()
}

func (r *Report) printSummary(out io.Writer) {
	fmt.Fprintf(out, "\n== write and read units per event, by scenario\n")
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := "scenario\t"
	for _, s := range r.Sizes {
		head += s.Name + " WRU\tRRU\t"
	}
	fmt.Fprintln(w, head)
	for _, sc := range Scenarios {
		row := sc + "\t"
		for _, s := range r.Sizes {
			c := r.Scenario(sc, s)
			row += fmt.Sprintf("%d\t%s\t", c.WRU(), fmtUnits(c.RRU()))
		}
		fmt.Fprintln(w, row)
	}
	_ = w.Flush()
	for _, s := range r.Sizes {
		ix := r.Scenario(ScenarioNew, s).IndexWRU()
		var names []string
		for name := range ix {
			names = append(names, name)
		}
		sort.Strings(names)
		var parts []string
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("%s %d", n, ix[n]))
		}
		fmt.Fprintf(out, "index WRU of a new %s event: %s\n", s.Name, strings.Join(parts, ", "))
	}
	var gh []string
	for _, sc := range GitHubScenarios {
		c := r.GitHub[sc]
		gh = append(gh, fmt.Sprintf("%s %d WRU, %s RRU", sc, c.WRU(), fmtUnits(c.RRU())))
	}
	fmt.Fprintf(out, "GitHub (%s, %d B): %s\n", githubType, r.Bytes[labelGitHub], strings.Join(gh, "; "))
	if c, n := r.Connect, r.Scenario(ScenarioNew, Small); c != nil && n != nil {
		fmt.Fprintf(out, "Connect: %s %d WRU, %s RRU (a new %s event: %d WRU; the account's item and index entry, once per account and receiver container)\n",
			ScenarioConnectFirst, c.WRU(), fmtUnits(c.RRU()), Small.Name, n.WRU())
	}
	for _, s := range r.Sizes {
		wru, rru, usd, reads := r.TieCost(s)
		fmt.Fprintf(out, "same-second ties at %.0f%% of events (%s): each +%d WRU, %s RRU and %d read of Stripe's API beyond a new event; "+
			"+$%.2f per million events (units, and the processor waiting %v a read); %s reads of Stripe's API per million events (no charge; its rate limit: 100/s live)\n",
			r.TieRate*100, s.Name, wru, fmtUnits(rru), r.TieReads[s.Name], usd, TieRoundTrip, millions(reads))
	}
}

func (r *Report) printMoney(out io.Writer) {
	fmt.Fprintf(out, "\n== $ per million events (us-east-1 list prices read %s)\n", PricesRead)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := "line\t"
	for _, s := range r.Sizes {
		head += s.Name + "\t"
	}
	fmt.Fprintln(w, head+"how ("+Small.Name+")")
	for i, l := range r.Money[Small.Name] {
		row := l.What + "\t"
		for _, s := range r.Sizes {
			row += fmt.Sprintf("%.2f\t", r.Money[s.Name][i].USD)
		}
		fmt.Fprintln(w, row+l.How)
	}
	row := "total\t"
	for _, s := range r.Sizes {
		row += fmt.Sprintf("%.2f\t", r.PerMillion[s.Name])
	}
	fmt.Fprintln(w, row+"a new event, processed; duplicates and retries add their units above")
	if !r.TracingActive {
		row := "with Tracing: Active\t"
		for range r.Sizes {
			row += fmt.Sprintf("+%.2f\t", r.XRayActive[0])
		}
		fmt.Fprintf(w, "%sX-Ray, not in the total (the template's Tracing parameter is PassThrough): "+
			"a trace per sampled invocation of each function at 1M events a month (default rule: the first each second, then 5%%); "+
			"+$%.2f/M at 10M a month\n", row, r.XRayActive[1])
	}
	_ = w.Flush()
}

// printRoutes sets the two ways in side by side: the webhook endpoint
// (API Gateway, the receiver) and Stripe's EventBridge destination (the
// partner event, the ingress queue, the bridge), each with the same
// processor behind it.
func (r *Report) printRoutes(out io.Writer) {
	fmt.Fprintf(
		out,
		"\n== the two ways in, $ per million events: API Gateway (webhook endpoint) beside EventBridge (Stripe's destination), without X-Ray (prices read %s)\n",
		PricesRead,
	)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := "line\t"
	for _, s := range r.Sizes {
		head += "API Gateway " + s.Name + "\tEventBridge " + s.Name + "\t"
	}
	fmt.Fprintln(w, head+"how (EventBridge, "+Small.Name+")")
	rows := []struct{ name, api, eb string }{
		{"ingress", "API Gateway HTTP API", "EventBridge partner events"},
		{"Lambda requests", "Lambda requests", "Lambda requests"},
		{"Lambda duration", "Lambda duration", "Lambda duration"},
		{"SQS", "SQS", "SQS"},
		{"DynamoDB writes", "DynamoDB writes", "DynamoDB writes"},
		{"DynamoDB reads", "DynamoDB reads", "DynamoDB reads"},
		{"DynamoDB storage + PITR", "DynamoDB storage + PITR", "DynamoDB storage + PITR"},
		{"CloudWatch Logs", "CloudWatch Logs", "CloudWatch Logs"},
	}
	find := func(lines []MoneyLine, prefix string) MoneyLine {
		for _, l := range lines {
			if strings.HasPrefix(l.What, prefix) {
				return l
			}
		}
		return MoneyLine{}
	}
	totals := map[string][2]float64{}
	for _, row := range rows {
		line := row.name + "\t"
		for _, s := range r.Sizes {
			api, eb := find(r.RoutesNoXray(s.Name), row.api), find(r.EventBridgeMoney[s.Name], row.eb)
			line += fmt.Sprintf("%.2f\t%.2f\t", api.USD, eb.USD)
			t := totals[s.Name]
			totals[s.Name] = [2]float64{t[0] + api.USD, t[1] + eb.USD}
		}
		fmt.Fprintln(w, line+find(r.EventBridgeMoney[Small.Name], row.eb).How)
	}
	line := "total\t"
	for _, s := range r.Sizes {
		line += fmt.Sprintf("%.2f\t%.2f\t", totals[s.Name][0], totals[s.Name][1])
	}
	fmt.Fprintln(w, line+"a new event, processed, each way (the API Gateway total is the one above, less X-Ray)")
	_ = w.Flush()
	fixed := 0.0
	var parts []string
	for _, f := range r.EventBridgeFixed {
		fixed += f.USD
		parts = append(parts, fmt.Sprintf("%s $%.2f (%s)", f.What, f.USD, f.How))
	}
	fmt.Fprintf(out, "EventBridge destination on: +$%.2f a month fixed: %s\n", fixed, strings.Join(parts, "; "))
}

func (r *Report) printFixed(out io.Writer) {
	fmt.Fprintf(out, "\n== per month, fixed and all-in (%s events), beside the alternatives\n", Small.Name)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := "\t"
	for _, v := range Volumes {
		head += fmt.Sprintf("%s events/month\t", millions(v))
	}
	fmt.Fprintln(w, head+"how")
	fixed := 0.0
	for _, f := range r.Fixed {
		row := f.What + "\t"
		for range Volumes {
			row += fmt.Sprintf("%.2f\t", f.USD)
		}
		fmt.Fprintln(w, row+f.How)
		fixed += f.USD
	}
	row := "fixed, total\t"
	for range Volumes {
		row += fmt.Sprintf("%.2f\t", fixed)
	}
	fmt.Fprintln(w, row)
	row = "webhook-inbox, all-in\t"
	per := "  per million events\t"
	for i, v := range Volumes {
		row += fmt.Sprintf("%.2f\t", r.Monthly[i])
		per += fmt.Sprintf("%.2f\t", r.Monthly[i]/(v/1e6))
	}
	fmt.Fprintln(w, row+"fixed + the events' own cost (X-Ray at each volume's sampling)")
	fmt.Fprintln(w, per)
	if len(r.ObjectTables) > 0 {
		row := "not in these totals: " + strings.Join(r.ObjectTables, ", ") + "\t"
		for range Volumes {
			row += fmt.Sprintf("%.2f\t", r.objectStorage(1e5))
		}
		fmt.Fprintf(
			w,
			"%sstorage + PITR of 100,000 objects: %.0f B an object with its index entries, no TTL (grows with objects, not events)\n",
			row,
			r.ObjectBytes,
		)
	}
	fmt.Fprintln(w, "\t\t\t")
	for _, h := range HostedPlans {
		row := h.Name + "\t"
		for _, v := range Volumes {
			if usd, ok := h.Monthly(v); ok {
				row += fmt.Sprintf("%.2f\t", usd)
			} else {
				row += "not published\t"
			}
		}
		fmt.Fprintln(w, row+h.Note)
	}
	eb, how := r.eventBridge()
	row = "Stripe → EventBridge + small consumer\t"
	for _, v := range Volumes {
		row += fmt.Sprintf("%.2f\t", eb*v/1e6)
	}
	fmt.Fprintln(w, row+how)
	_ = w.Flush()
}

// eventBridge is Stripe's route to Amazon EventBridge with a small
// consumer, per million events: the partner event, and a consumer Lambda
// like the processor (one request, its measured duration at the same
// memory) that makes one conditional put of a small item for idempotency.
func (r *Report) eventBridge() (float64, string) {
	gbs := float64(r.ProcessorMB) / 1024 * math.Ceil(r.ProcessorMs) / 1000
	usd := price("eventbridge.partner") + price("lambda.requests") + price("lambda."+r.ProcessorArch)*gbs*1e6 + price("ddb.write")
	return usd, fmt.Sprintf("$%.2f/M: partner events $%.2f/M + a consumer Lambda (request, %.0f ms at %d MB, %s) + one 1 KB conditional put",
		usd, price("eventbridge.partner"), math.Ceil(r.ProcessorMs), r.ProcessorMB, r.ProcessorArch)
}

// objectStorage is what the items without TTL of n objects cost a month,
// PITR included.
func (r *Report) objectStorage(n float64) float64 {
	return r.ObjectBytes * n / (1 << 30) * (price("ddb.storage") + price("ddb.pitr"))
}

func (r *Report) printHot(out io.Writer) {
	fmt.Fprintf(out, "\n== hottest partition-key value at %.0f events/s, from %d sampled new %s events\n", r.Rate, r.Samples, Small.Name)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "table/index\tkey value\twrite units/s\twritten by")
	for _, h := range r.Hot {
		by := fmt.Sprintf("%d of %d sampled events", h.Shared, r.Samples)
		if h.Shared == 1 {
			by += " (one event's key: its own units, once)"
		}
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%s\n", h.Target, shorten(h.Key, 48), math.Round(h.UnitsPerSecond), by)
	}
	hot := r.Hottest()
	fmt.Fprintf(w, "max\t%s\t%.0f\t%s\n", shorten(hot.Key, 48), math.Round(hot.UnitsPerSecond), hot.Target)
	_ = w.Flush()
	fmt.Fprintln(out, "DynamoDB gives each partition-key value about 1,000 write units a second; a throttled index throttles its table's writes.")
}

func (r *Report) printNotes(out io.Writer) {
	fmt.Fprintln(out, "\nassumptions:")
	notes := []string{
		"a cancelled transaction is billed as its prepare phase, each item once (DynamoDB documents the two writes of a committed transaction only); " +
			"index writes are not doubled in a transaction",
		"the after-image of a write that did not apply is the same update run on a copy of the item in a scratch table; " +
			"applied writes are read back, strongly consistent",
		fmt.Sprintf("each event is compared by %.1f scheduled reconciler runs on average (%s)", r.ReconcilerRuns, r.reconcilerWhy),
		"durations are measured in process against the emulator, minus the meter's own reads; " +
			"AWS's round trips are slower, Lambda bills each invocation's milliseconds rounded up",
		"TTL deletions are DynamoDB's own and free; a 30-day month; no free tiers",
	}
	for _, n := range append(notes, r.notes...) {
		fmt.Fprintf(out, "  - %s\n", n)
	}
}

func millions(v float64) string {
	return fmt.Sprintf("%gM", v/1e6)
}

func blankZero(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func blankZeroF(f float64) string {
	if f == 0 {
		return ""
	}
	return fmtUnits(f)
}

func fmtUnits(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.1f", f)
}

func indexes(ix map[string]int) string {
	var names []string
	for n := range ix {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, ix[n]))
	}
	return strings.Join(parts, ", ")
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

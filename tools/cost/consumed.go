package cost

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"
)

// Consumption is one scenario's DynamoDB requests as DynamoDB counted them
// (ReturnConsumedCapacity=INDEXES, Options.Consumed) beside the meter's
// own count of the same requests: the way to check the meter's rules
// against DynamoDB itself. Only the requests that succeeded are compared:
// DynamoDB charges a write whose condition failed, or a cancelled
// transaction, but its answer is then an error, which carries no
// ConsumedCapacity.
type Consumption struct {
	Label string
	// Meter and DynamoDB are capacity units, writes and reads together,
	// by target ("EventsTable", "EventsTable/pending").
	Meter, DynamoDB map[string]float64
	// Requests counts the requests compared; Failed those left out.
	Requests, Failed int
}

// consumption compares the DynamoDB calls of one label.
func consumption(label string, calls []Call) Consumption {
	c := Consumption{Label: label, Meter: map[string]float64{}, DynamoDB: map[string]float64{}}
	for _, call := range calls {
		if call.Service != "DynamoDB" {
			continue
		}
		if call.Err != "" {
			c.Failed++
			continue
		}
		c.Requests++
		for _, w := range call.Writes {
			c.Meter[w.Table] += float64(w.Charge.Table)
			for ix, u := range w.Charge.Index {
				c.Meter[w.Table+"/"+ix] += float64(u)
			}
		}
		for _, r := range call.Reads {
			c.Meter[r.Target] += r.Units
		}
		for _, k := range call.Consumed {
			c.DynamoDB[k.Target] += k.Units
		}
	}
	return c
}

// Total is the meter's and DynamoDB's units of every target.
func (c Consumption) Total() (meter, dynamo float64) {
	for _, u := range c.Meter {
		meter += u
	}
	for _, u := range c.DynamoDB {
		dynamo += u
	}
	return meter, dynamo
}

// PrintConsumed writes, per scenario and target, the capacity units the
// meter computed beside those DynamoDB reported, and the difference.
// Against the emulator the right column is the emulator's, not DynamoDB's
// (the package doc says why); against AWS it is DynamoDB's own.
func (r *Report) PrintConsumed(w io.Writer) {
	fmt.Fprintf(w, "== consumed capacity: the meter's units beside the answers' ConsumedCapacity (ReturnConsumedCapacity=INDEXES), requests that succeeded\n")
	fmt.Fprintf(w, "against %s\n", r.Against)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\ttarget\tmeter\treported\tdifference\t")
	same, failed := true, 0
	for _, c := range r.Consumed {
		targets := map[string]bool{}
		for t := range c.Meter {
			targets[t] = true
		}
		for t := range c.DynamoDB {
			targets[t] = true
		}
		var names []string
		for t := range targets {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, t := range names {
			d := c.DynamoDB[t] - c.Meter[t]
			if math.Abs(d) > 1e-9 {
				same = false
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", c.Label, t, fmtUnits(c.Meter[t]), fmtUnits(c.DynamoDB[t]), signed(d))
		}
		m, d := c.Total()
		fmt.Fprintf(tw, "%s\ttotal of %d request(s)\t%s\t%s\t%s\t\n", c.Label, c.Requests, fmtUnits(m), fmtUnits(d), signed(d-m))
		failed += c.Failed
	}
	_ = tw.Flush()
	if failed > 0 {
		fmt.Fprintf(w, "%d request(s) that failed (a condition, a cancelled transaction) are left out of both columns: DynamoDB charges them, "+
			"but an error reports no capacity\n", failed)
	}
	if same {
		fmt.Fprintln(w, "every target: the meter's units are the reported ones")
	} else {
		fmt.Fprintln(w, "the meter's units differ from the reported ones where the difference is not 0")
	}
}

func signed(f float64) string {
	if math.Abs(f) < 1e-9 {
		return "0"
	}
	return fmt.Sprintf("%+g", f)
}

package loadtest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// ev is one event of the stream.
type ev struct {
	id, object, typ string
	created         int64
	deleted         bool
	body            []byte
	missing         bool
}

// plan builds the events: object lifecycles with increasing created times.
func plan(events int, rng *rand.Rand, base int64) []ev {
	var out []ev
	seq := int64(0)
	next := func() int64 { seq++; return base + seq }
	for len(out) < events {
		switch rng.IntN(3) {
		case 0: // a subscription's life
			sub, cus := stripefixture.NewID("sub_"), stripefixture.NewID("cus_")
			states := []string{"trialing", "active", "past_due", "active", "unpaid", "canceled"}
			n := 1 + rng.IntN(5)
			for i := 0; i < n && len(out) < events; i++ {
				typ, st := "customer.subscription.updated", states[rng.IntN(len(states))]
				if i == 0 {
					typ, st = "customer.subscription.created", "trialing"
				}
				if i == n-1 && rng.IntN(4) == 0 && i > 0 {
					typ, st = "customer.subscription.deleted", "canceled"
				}
				out = append(out, ev{object: sub, typ: typ, created: next(), deleted: typ == "customer.subscription.deleted",
					body: mustBuild(typ, stripefixture.Options{ObjectID: sub, Customer: cus, Status: st})})
			}
		case 1: // an invoice's life
			in, cus := stripefixture.NewID("in_"), stripefixture.NewID("cus_")
			for _, typ := range []string{"invoice.created", "invoice.finalized", "invoice.paid"} {
				if len(out) < events {
					out = append(out, ev{object: in, typ: typ, created: next(), body: mustBuild(typ, stripefixture.Options{ObjectID: in, Customer: cus})})
				}
			}
		default: // a customer
			cus := stripefixture.NewID("cus_")
			for _, typ := range []string{"customer.created", "customer.updated"} {
				if len(out) < events {
					out = append(out, ev{object: cus, typ: typ, created: next(), body: mustBuild(typ, stripefixture.Options{Customer: cus})})
				}
			}
		}
	}
	// Stamp ids and created times into the bodies.
	for i := range out {
		e := &out[i]
		e.id = stripefixture.NewID("evt_")
		e.body = restamp(e.body, e.id, e.created)
	}
	return out
}

func mustBuild(typ string, o stripefixture.Options) []byte {
	b, err := stripefixture.Build(typ, o)
	if err != nil {
		panic(err) // the types above are all buildable
	}
	return b
}

// restamp rebuilds a body with a given id and created time.
func restamp(body []byte, id string, created int64) []byte {
	env, _ := event.DecodeEnvelope(body)
	body = bytes.Replace(body, []byte(`"id": "`+env.ID+`"`), []byte(`"id": "`+id+`"`), 1)
	return bytes.Replace(body, []byte(fmt.Sprintf(`"created": %d`, env.Created)), []byte(fmt.Sprintf(`"created": %d`, created)), 1)
}

// schedule orders the deliveries: chronological, with late and duplicate
// deliveries moved back, and the missing ones left out.
func schedule(evs []ev, c Config, rng *rand.Rand) (order []int, reordered, dups int) {
	type slot struct {
		at  float64
		idx int
	}
	var slots []slot
	for i := range evs {
		if evs[i].missing {
			continue
		}
		at := float64(i)
		if rng.Float64() < c.Reorder {
			at += 2 + rng.Float64()*20
			reordered++
		}
		slots = append(slots, slot{at, i})
		if rng.Float64() < c.Duplicate {
			slots = append(slots, slot{at + 1 + rng.Float64()*50, i})
			dups++
		}
	}
	sort.SliceStable(slots, func(a, b int) bool { return slots[a].at < slots[b].at })
	for _, s := range slots {
		order = append(order, s.idx)
	}
	return order, reordered, dups
}

// stream plans the run's events and the order of their deliveries, from
// c's seed, and the Result's counts of what it planned.
func stream(c Config) ([]ev, []int, Result) {
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	// Events so that the deliveries, duplicates included, come to about c.Deliveries.
	nEvents := max(1, int(float64(c.Deliveries)/(1-c.Missing+c.Duplicate*(1-c.Missing))))
	base := time.Now().Add(-2 * time.Hour).Unix()
	evs := plan(nEvents, rng, base)
	for i := range evs {
		evs[i].missing = rng.Float64() < c.Missing
	}
	order, reordered, dups := schedule(evs, c, rng)
	res := Result{Events: len(evs), Deliveries: len(order), Duplicates: dups, Reordered: reordered}
	for _, e := range evs {
		if e.missing {
			res.NeverDelivered++
		}
	}
	return evs, order, res
}

// truth is each object's last event in chronological order, a deletion
// being final: what its snapshot must show.
func truth(evs []ev) map[string]ev {
	last := map[string]ev{}
	for _, e := range evs {
		cur, ok := last[e.object]
		switch {
		case !ok:
			last[e.object] = e
		case cur.deleted && !e.deleted:
			// A deletion is final.
		case e.deleted && !cur.deleted, e.created > cur.created || (e.created == cur.created && e.id > cur.id):
			last[e.object] = e
		}
	}
	return last
}

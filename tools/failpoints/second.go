package failpoints

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// A case with a second event (Spec.Second) has a second event of the
// same object in flight when its fault strikes: its courier delivers it
// at that moment, while the first is wherever the fault caught it. For
// Stripe it is a newer state of the first event's object, created one
// second later (the subscription gone past_due), so the mirror's ordering
// guard meets every fault: whichever of the two is applied last, the
// mirror must end in the newer one's state. A provider without a mirror
// sends the same sample again under a distinct id: two events of one
// object, each settled, each with its effects once.

// secondStatus is the state the second event gives a Stripe object.
const secondStatus = "past_due"

// second returns the second event of a case whose first is first: of the
// same object, named id, created at at (Unix seconds), and at least one
// second after the first. The case builds it again, under the same id,
// when its fault strikes and it is sent (at that moment), so that its
// state is Stripe's from its created second on, as a real event's is: a
// state the API serves before its event was created would be one no
// event of Stripe's can have, and an audit reading it a second early
// would claim a change its event then supersedes.
func (w World) second(root string, first delivery, id string, at time.Time) (delivery, error) {
	if w.Provider != event.ProviderStripe {
		d, err := w.sample(root, id, at)
		switch {
		case err != nil:
			return d, err
		case d.id == first.id:
			return d, fmt.Errorf("failpoints: %s's second event has the first one's id %s", w.Name, d.id)
		case bytes.Equal(d.body, first.body):
			// The provider's id is not in its body (a header's): the same
			// body again is a replay of the first, which the receiver
			// refuses where the body is all it has to tell them apart. A
			// second event of the object says something new: a member
			// naming it, first in a JSON body, the rest unchanged.
			// A form's body (Twilio's) gets a parameter.
			i := bytes.IndexByte(d.body, '{')
			if i < 0 {
				d.body = append(append([]byte(nil), d.body...), "&FailpointsSecond="+d.id...)
				break
			}
			b := append([]byte(nil), d.body[:i+1]...)
			b = append(b, `"failpoints_second":"`+d.id+`",`...)
			d.body = append(b, d.body[i+1:]...)
		}
		return d, nil
	}
	h, err := stripeHeadOf(first.body)
	if err != nil {
		return delivery{}, err
	}
	if h.Customer == "" && len(first.object) > 0 {
		// A thin event names its object, not its customer: the object
		// as the API serves it does.
		var obj struct {
			Customer string `json:"customer"`
		}
		if err := json.Unmarshal(first.object, &obj); err != nil {
			return delivery{}, fmt.Errorf("failpoints: read the object of thin event %s: %w", h.ID, err)
		}
		h.Customer = obj.Customer
	}
	o := stripefixture.Options{ID: id, Created: max(h.Created+1, at.Unix()), ObjectID: h.Object, Customer: h.Customer, Account: h.Account, Status: secondStatus}
	typ := strings.TrimPrefix(first.typ, event.ThinV1Prefix)
	if w.Thin {
		body, obj, err := stripefixture.Thin(typ, o, stripefixture.ThinOptions{})
		return delivery{id: id, typ: first.typ, body: body, object: obj}, err
	}
	body, err := stripefixture.Build(typ, o)
	return delivery{id: id, typ: first.typ, body: body}, err
}

// stripeHead is what the checks need of a Stripe event of either form:
// its object, its customer, its account, and when it was created.
type stripeHead struct {
	ID, Object, Customer, Account string
	Created                       int64
}

// stripeHeadOf reads a snapshot event (data.object, account, created in
// Unix seconds) or a thin one (related_object, context, created as an RFC
// 3339 date-time).
func stripeHeadOf(body []byte) (stripeHead, error) {
	var ev struct {
		ID      string          `json:"id"`
		Object  string          `json:"object"`
		Account string          `json:"account"`
		Context string          `json:"context"`
		Created json.RawMessage `json:"created"`
		Data    struct {
			Object struct {
				ID       string `json:"id"`
				Customer string `json:"customer"`
			} `json:"object"`
		} `json:"data"`
		Related struct {
			ID string `json:"id"`
		} `json:"related_object"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return stripeHead{}, fmt.Errorf("failpoints: read a Stripe event: %w", err)
	}
	h := stripeHead{ID: ev.ID, Object: ev.Data.Object.ID, Customer: ev.Data.Object.Customer, Account: ev.Account}
	if ev.Object == "v2.core.event" {
		var at string
		if err := json.Unmarshal(ev.Created, &at); err != nil {
			return stripeHead{}, fmt.Errorf("failpoints: thin event %s: created: %w", ev.ID, err)
		}
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return stripeHead{}, fmt.Errorf("failpoints: thin event %s: created: %w", ev.ID, err)
		}
		h.Object, h.Account, h.Created = ev.Related.ID, ev.Context, t.Unix()
		return h, nil
	}
	if err := json.Unmarshal(ev.Created, &h.Created); err != nil {
		return stripeHead{}, fmt.Errorf("failpoints: event %s: created: %w", ev.ID, err)
	}
	return h, nil
}

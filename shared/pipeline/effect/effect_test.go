package effect

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

func TestRegistryRunsHandlersWithStableKeys(t *testing.T) {
	var keys []string
	h := func(name string) Handler {
		return Func{HandlerName: name, Fn: func(_ context.Context, ev Event) ([]types.TransactWriteItem, error) {
			keys = append(keys, ev.IdempotencyKey)
			return []types.TransactWriteItem{{}}, nil
		}}
	}
	var r Registry
	r.On(h("provision"), "invoice.paid")
	r.On(h("audit"), "*")
	if !r.Handles("invoice.paid") || !r.Handles("anything") {
		t.Error("Handles: want invoice.paid and, through *, any type")
	}
	writes, err := r.Run(context.Background(), event.Record{ID: "evt_1", Type: "invoice.paid"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 2 {
		t.Errorf("writes: got %d, want 2", len(writes))
	}
	if want := []string{"evt_1:provision", "evt_1:audit"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("idempotency keys: got %v, want %v", keys, want)
	}
	if got := r.Types(); !reflect.DeepEqual(got, []string{"invoice.paid"}) {
		t.Errorf("Types: got %v", got)
	}
}

func TestRegistryStopsAtTheFirstError(t *testing.T) {
	var r Registry
	calls := 0
	r.On(Func{HandlerName: "a", Fn: func(context.Context, Event) ([]types.TransactWriteItem, error) {
		calls++
		return nil, errors.New("downstream 500")
	}}, "x")
	r.On(Func{HandlerName: "b", Fn: func(context.Context, Event) ([]types.TransactWriteItem, error) {
		calls++
		return nil, nil
	}}, "x")
	if _, err := r.Run(context.Background(), event.Record{ID: "e", Type: "x"}, nil); err == nil || calls != 1 {
		t.Errorf("got err %v after %d calls; want an error after 1", err, calls)
	}
}

func TestRegistryKeepsProvidersApart(t *testing.T) {
	var ran []string
	h := func(name string) Handler {
		return Func{HandlerName: name, Fn: func(_ context.Context, ev Event) ([]types.TransactWriteItem, error) {
			ran = append(ran, ev.IdempotencyKey)
			return nil, nil
		}}
	}
	var r Registry
	r.On(h("stripe-paid"), "invoice.paid")
	r.On(h("stripe-any"), "*")
	r.OnProvider("standard", h("standard-paid"), "invoice.paid")
	r.OnProvider("github", h("github-any"), "*")
	for _, tc := range []struct {
		rec  event.Record
		want []string
	}{
		{event.Record{ID: "evt_1", Type: "invoice.paid"}, []string{"evt_1:stripe-paid", "evt_1:stripe-any"}},
		{event.Record{Provider: "stripe", ID: "evt_1", Type: "invoice.paid"}, []string{"evt_1:stripe-paid", "evt_1:stripe-any"}},
		{event.Record{Provider: "standard", ID: "evt_1", Type: "invoice.paid"}, []string{"standard#evt_1:standard-paid"}},
		{event.Record{Provider: "github", ID: "d1", Type: "push"}, []string{"github#d1:github-any"}},
		{event.Record{Provider: "shopify", ID: "e1", Type: "orders/create"}, nil},
	} {
		ran = nil
		if _, err := r.Run(context.Background(), tc.rec, nil); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ran, tc.want) {
			t.Errorf("%s %s: got %v, want %v", tc.rec.Provider, tc.rec.Type, ran, tc.want)
		}
	}
	if got := r.TypesFor("standard"); !reflect.DeepEqual(got, []string{"invoice.paid"}) {
		t.Errorf("TypesFor(standard): got %v", got)
	}
	if got := r.Types(); !reflect.DeepEqual(got, []string{"invoice.paid"}) {
		t.Errorf("Types: got %v, want Stripe's only", got)
	}
	if r.HandlesFor("shopify", "orders/create") || !r.HandlesFor("github", "anything") || !r.HandlesFor("standard", "invoice.paid") {
		t.Error("HandlesFor: want shopify none, github any, standard invoice.paid")
	}
}

package effect

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/event"
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

package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// orders returns every distinct order of sides.
func orders(sides []store.TwinSide) [][]store.TwinSide {
	if len(sides) <= 1 {
		return [][]store.TwinSide{sides}
	}
	var out [][]store.TwinSide
	seen := map[store.TwinSide]bool{}
	for i, s := range sides {
		if seen[s] {
			continue
		}
		seen[s] = true
		rest := append(append([]store.TwinSide(nil), sides[:i]...), sides[i+1:]...)
		for _, o := range orders(rest) {
			out = append(out, append([]store.TwinSide{s}, o...))
		}
	}
	return out
}

// TestTwinClaimsPairThinAndSnapshotEventsOneToOne: the thin events of one
// object, type and second that name no snapshot twin, and the snapshot
// events of the same changes, in every order, each event reading the
// claim and then committing its write, run as many effects as there are
// changes: max(thin, snapshot), whichever form of each comes first and
// even when one form of a change never comes. Also when every event reads
// the claim before any commits (the commit's condition then decides: an
// event that meant to run its effects and lost is twinned, a twinned one
// whose pairing moved reads again).
func TestTwinClaimsPairThinAndSnapshotEventsOneToOne(t *testing.T) {
	ev, s := newEvents(t)
	ctx := context.Background()
	n := 0
	for _, set := range [][]store.TwinSide{
		{store.TwinThin, store.TwinSnapshot},
		{store.TwinThin, store.TwinThin},
		{store.TwinSnapshot, store.TwinSnapshot},
		{store.TwinThin, store.TwinThin, store.TwinSnapshot},
		{store.TwinThin, store.TwinSnapshot, store.TwinSnapshot},
		{store.TwinThin, store.TwinThin, store.TwinSnapshot, store.TwinSnapshot},
	} {
		want := 0
		for _, side := range []store.TwinSide{store.TwinThin, store.TwinSnapshot} {
			c := 0
			for _, s := range set {
				if s == side {
					c++
				}
			}
			want = max(want, c)
		}
		for _, order := range orders(set) {
			for _, racing := range []bool{false, true} {
				n++
				k := store.TwinKey{Account: "acct_twin", ObjectID: fmt.Sprintf("sub_%d", n), Type: "customer.subscription.updated", Created: 1796126400}
				name := fmt.Sprint(order)
				if racing {
					name += " read first"
				}
				t.Run(name, func(t *testing.T) {
					// commit commits event i's claim as it decided; it
					// reports whether it committed with its effects, or
					// false and an error when it must read again.
					commit := func(i int, twinned bool) (bool, error) {
						id := fmt.Sprintf("evt_%d", i)
						for {
							_, err := s.DynamoDB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
								TransactItems: []types.TransactWriteItem{ev.TwinClaimWrite(k, order[i], twinned, id)},
							})
							var tc *types.TransactionCanceledException
							switch {
							case err == nil:
								return !twinned, nil
							case !errors.As(err, &tc):
								t.Fatal(err)
							case twinned:
								return false, errors.New("read again")
							}
							// Its effects lost to a twin: committed without them.
							twinned = true
						}
					}
					decide := func(i int) bool {
						c, err := ev.ReadTwinClaim(ctx, k)
						if err != nil {
							t.Fatal(err)
						}
						return c.Twinned(order[i])
					}
					decided := make([]bool, len(order))
					if racing {
						for i := range order {
							decided[i] = decide(i)
						}
					}
					effects := 0
					for i := range order {
						if !racing {
							decided[i] = decide(i)
						}
						for {
							ran, err := commit(i, decided[i])
							if err == nil {
								if ran {
									effects++
								}
								break
							}
							decided[i] = decide(i)
						}
					}
					if effects != want {
						t.Errorf("%d effects committed, want %d (one per change)", effects, want)
					}
					c, err := ev.ReadTwinClaim(ctx, k)
					if err != nil {
						t.Fatal(err)
					}
					if got := c.Thin + c.Snapshot; got != len(order) {
						t.Errorf("claim %+v counts %d events, want %d", c, got, len(order))
					}
				})
			}
		}
	}
}

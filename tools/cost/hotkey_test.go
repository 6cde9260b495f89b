package cost

import (
	"fmt"
	"testing"
)

// sampleWith is one event's key writes: its own record (3 units on its
// id), and 2 units on the index value shard(i).
func sampleWith(i int, shard func(int) string) keySample {
	return keySample{
		{Target: "Events", Key: fmt.Sprintf("pk=evt_%d", i), Units: 3},
		{Target: "Events/by_day", Key: "day=" + shard(i), Units: 2, Role: "put"},
	}
}

func TestHotKeys(t *testing.T) {
	cases := []struct {
		name  string
		shard func(int) string
		want  float64 // on the index's hottest value, at 3,000 events/s
	}{
		{"a key every event shares takes the whole rate", func(int) string { return "2026-11-30" }, 3000 * 2},
		{"a key sharded four ways takes a quarter", func(i int) string { return fmt.Sprintf("2026-11-30#%d", i%4) }, 3000 * 2 / 4},
		{"a key of each event takes its own units, once", func(i int) string { return fmt.Sprintf("evt_%d", i) }, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var samples []keySample
			for i := range 8 {
				samples = append(samples, sampleWith(i, tc.shard))
			}
			hot, left := estimateHotKeys(samples, 3000)
			if left != 0 || len(hot) != 2 {
				t.Fatalf("got %v (left out %d), want one hot key for the table and one for the index", hot, left)
			}
			if hot[0].Target != "Events" || hot[0].UnitsPerSecond != 3 || hot[0].Shared != 1 {
				t.Errorf("the table's hottest key: got %+v, want an event's own key with its 3 units", hot[0])
			}
			if hot[1].UnitsPerSecond != tc.want {
				t.Errorf("the index's hottest key: got %+v, want %v units/s", hot[1], tc.want)
			}
		})
	}

	// A sample that took another path is left out, not mixed in.
	samples := []keySample{sampleWith(0, func(int) string { return "d" }), sampleWith(1, func(int) string { return "d" }),
		{{Target: "Events", Key: "pk=evt_x", Units: 1}}}
	if _, left := estimateHotKeys(samples, 3000); left != 1 {
		t.Errorf("a sample on another path: got %d left out, want 1", left)
	}
}

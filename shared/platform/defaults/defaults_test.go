package defaults_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/defaults"
)

// TestSetTakesTheDefaultOfWhatIsUnset: zero, negative and empty are
// unset; anything else is kept.
func TestSetTakesTheDefaultOfWhatIsUnset(t *testing.T) {
	for _, tc := range []struct{ v, want int }{{0, 8}, {-1, 8}, {1, 1}, {32, 32}} {
		v := tc.v
		defaults.Set(&v, 8)
		if v != tc.want {
			t.Errorf("Set(%d, 8): got %d, want %d", tc.v, v, tc.want)
		}
	}
	for _, tc := range []struct{ v, want string }{{"", "test"}, {"live", "live"}} {
		v := tc.v
		defaults.Set(&v, "test")
		if v != tc.want {
			t.Errorf("Set(%q, test): got %q, want %q", tc.v, v, tc.want)
		}
	}
}

func ExampleSet() {
	type Config struct {
		Concurrency int
		Backoff     time.Duration
	}
	cfg := Config{Backoff: -time.Second} // as a caller may leave it
	defaults.Set(&cfg.Concurrency, 8)
	defaults.Set(&cfg.Backoff, time.Minute)
	fmt.Println(cfg.Concurrency, cfg.Backoff)
	// Output: 8 1m0s
}

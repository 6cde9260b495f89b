package pause_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
)

// TestForEndsWithItsContext: a cancelled context ends the wait with its
// error, however long the wait was to be; an uncancelled one waits it out.
func TestForEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := pause.For(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
	if err := pause.For(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled, no wait: got %v, want context.Canceled", err)
	}
	if err := pause.For(context.Background(), time.Millisecond); err != nil {
		t.Errorf("a millisecond: got %v, want nil", err)
	}
}

func ExampleFor() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	// A retry's backoff ends with the invocation's deadline, not after it.
	err := pause.For(ctx, time.Minute)
	fmt.Println(err)
	// Output: context deadline exceeded
}

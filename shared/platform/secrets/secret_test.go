package secrets

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingSSM answers every read with f's answer, after release is closed
// (when set), and counts the reads.
type countingSSM struct {
	fakeSSM
	reads   atomic.Int32
	release chan struct{}
}

func (c *countingSSM) GetParameter(ctx context.Context, name string) (Parameter, error) {
	c.reads.Add(1)
	if c.release != nil {
		<-c.release
	}
	return c.fakeSSM.GetParameter(ctx, name)
}

func TestSecretIsReadOnFirstUseAndKept(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{value: "sk_test_lazy"}}
	clients := 0
	s := FromParameter(func() SSM { clients++; return c }, "/webhook-inbox/dev/stripe/api-key")
	if c.reads.Load() != 0 || clients != 0 {
		t.Fatalf("before first use: %d reads, %d clients built; want none", c.reads.Load(), clients)
	}
	for range 3 {
		v, err := s.Value(context.Background())
		if err != nil || v != "sk_test_lazy" {
			t.Fatalf("got %q, %v", v, err)
		}
	}
	if c.reads.Load() != 1 || clients != 1 {
		t.Errorf("three uses: %d reads, %d clients; want 1 and 1", c.reads.Load(), clients)
	}
	if s.Name() != "/webhook-inbox/dev/stripe/api-key" {
		t.Errorf("name: got %q", s.Name())
	}
}

// TestSecretReadsAgainAfterAFailure: a failed read is the error of the
// caller that needed the secret, and a caller after FailureBackoff reads
// again, so a secret stored after the function started is picked up
// without a redeploy.
func TestSecretReadsAgainAfterAFailure(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{err: errors.New("AccessDeniedException")}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := FromParameter(func() SSM { return c }, "/p")
	s.SetClock(clk.now)
	if _, err := s.Value(context.Background()); err == nil || !strings.Contains(err.Error(), "/p") {
		t.Fatalf("got %v, want the read's error naming the parameter", err)
	}
	c.err, c.value = nil, "whsec_now"
	clk.add(FailureBackoff)
	if v, err := s.Value(context.Background()); err != nil || v != "whsec_now" {
		t.Fatalf("after the parameter was fixed: got %q, %v", v, err)
	}
	if c.reads.Load() != 2 {
		t.Errorf("reads: got %d, want 2", c.reads.Load())
	}
}

// TestSecretConcurrentCallersShareOneRead: a batch of events that all need
// the secret while it is being read costs one read.
func TestSecretConcurrentCallersShareOneRead(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{value: "v"}, release: make(chan struct{})}
	s := FromParameter(func() SSM { return c }, "/p")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := s.Value(context.Background())
			if err == nil && v != "v" {
				err = errors.New("got " + v)
			}
			errs <- err
		}()
	}
	// Let every caller reach Value before the read answers.
	for c.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(c.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := c.reads.Load(); n != 1 {
		t.Errorf("reads: got %d, want 1", n)
	}
}

func TestSecretWaitEndsWithTheCallersContext(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{value: "v"}, release: make(chan struct{})}
	defer close(c.release)
	s := FromParameter(func() SSM { return c }, "/p")
	go func() { _, _ = s.Value(context.Background()) }()
	for c.reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Value(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the caller's context error", err)
	}
}

func TestFixed(t *testing.T) {
	if !Fixed("STRIPE_API_KEY", "k").InHand() || FromParameter(func() SSM { return nil }, "/p").InHand() {
		t.Error("InHand: want true for a given value only")
	}
	if v, err := Fixed("STRIPE_API_KEY", "sk_test_local").Value(context.Background()); err != nil || v != "sk_test_local" {
		t.Errorf("got %q, %v", v, err)
	}
	if _, err := Fixed("STRIPE_API_KEY", "").Value(context.Background()); err == nil || !strings.Contains(err.Error(), "STRIPE_API_KEY") {
		t.Errorf("empty: got %v, want an error naming the variable", err)
	}
}

// TestForgetReadsAgain: a value found unusable is read again, so a
// parameter fixed in Parameter Store is picked up without a redeploy, but
// not before FailureBackoff has passed since the read that gave it; until
// then Value returns the reason it was forgotten.
func TestForgetReadsAgain(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{value: " , "}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := FromParameter(func() SSM { return c }, "/p")
	s.SetClock(clk.now)
	if v, _ := s.Value(context.Background()); v != " , " {
		t.Fatalf("got %q", v)
	}
	c.value = "whsec_fixed"
	if v, _ := s.Value(context.Background()); v != " , " || c.reads.Load() != 1 {
		t.Fatalf("kept value: got %q after %d reads", v, c.reads.Load())
	}
	s.Forget(errors.New("/p holds no usable secret"))
	clk.add(FailureBackoff - time.Second)
	if v, err := s.Value(context.Background()); v != "" || err == nil || !strings.Contains(err.Error(), "no usable secret") || c.reads.Load() != 1 {
		t.Errorf("within the backoff after Forget: got %q, %v after %d reads; want the reason, no read", v, err, c.reads.Load())
	}
	clk.add(time.Second)
	if v, err := s.Value(context.Background()); v != "whsec_fixed" || err != nil || c.reads.Load() != 2 {
		t.Errorf("after Forget and the backoff: got %q, %v after %d reads; want the new value, read again", v, err, c.reads.Load())
	}
}

// TestAFailedReadIsRememberedForTheBackoff: while the parameter cannot be
// read, any number of callers cost one read per FailureBackoff, and get
// the read's error meanwhile.
func TestAFailedReadIsRememberedForTheBackoff(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{err: errors.New("ParameterNotFound")}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := FromParameter(func() SSM { return c }, "/p")
	s.SetClock(clk.now)
	for range 3 {
		for range 100 {
			if _, err := s.Value(context.Background()); err == nil || !strings.Contains(err.Error(), "ParameterNotFound") ||
				!strings.Contains(err.Error(), "/p") {
				t.Fatalf("got %v, want the read's error naming the parameter", err)
			}
		}
		clk.add(FailureBackoff)
	}
	if n := c.reads.Load(); n != 3 {
		t.Errorf("reads: got %d, want 3 (one per backoff)", n)
	}
	c.err, c.value = nil, "whsec_now"
	if v, err := s.Value(context.Background()); err != nil || v != "whsec_now" {
		t.Fatalf("after the parameter was stored: got %q, %v", v, err)
	}
	if v, err := s.Value(context.Background()); err != nil || v != "whsec_now" || c.reads.Load() != 4 {
		t.Errorf("kept: got %q, %v after %d reads, want no more reads", v, err, c.reads.Load())
	}
}

// clock is a fake clock tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestRefreshReadsARefusedSecretAtMostOnceAMinute: a secret refused where
// it was used (a signature matching none of the secrets, a 401) is read
// again, so a rotated value takes effect, but never sooner than
// RefreshInterval after the last read, however many refusals come in.
func TestRefreshReadsARefusedSecretAtMostOnceAMinute(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{value: "whsec_old"}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := FromParameter(func() SSM { return c }, "/p")
	s.SetClock(clk.now)
	ctx := context.Background()
	if v, _ := s.Value(ctx); v != "whsec_old" {
		t.Fatalf("got %q", v)
	}
	c.value = "whsec_new" // rotated in Parameter Store
	clk.add(30 * time.Second)
	for range 5 {
		if v, changed, err := s.Refresh(ctx, "whsec_old"); v != "whsec_old" || changed || err != nil {
			t.Fatalf("30 s after the read: got %q, %v, %v; want the kept value, unchanged, no read", v, changed, err)
		}
	}
	if n := c.reads.Load(); n != 1 {
		t.Fatalf("reads within the interval: got %d, want 1", n)
	}
	clk.add(30 * time.Second)
	if v, changed, err := s.Refresh(ctx, "whsec_old"); v != "whsec_new" || !changed || err != nil {
		t.Fatalf("a minute after the read: got %q, %v, %v; want the new value", v, changed, err)
	}
	if v, _ := s.Value(ctx); v != "whsec_new" {
		t.Errorf("Value after the refresh: got %q, want the new value kept", v)
	}
	// Another caller still holding the old value gets the new one, no read.
	if v, changed, _ := s.Refresh(ctx, "whsec_old"); v != "whsec_new" || !changed {
		t.Errorf("late refusal of the old value: got %q, %v; want the new value", v, changed)
	}
	// The new value refused too: nothing new before another minute.
	if _, changed, _ := s.Refresh(ctx, "whsec_new"); changed {
		t.Error("refusal right after a read: got changed, want no read")
	}
	if n := c.reads.Load(); n != 2 {
		t.Errorf("reads: got %d, want 2", n)
	}
}

// TestRefreshKeepsTheValueWhenTheReadFails: Parameter Store down during a
// refresh leaves the value in hand, and the next attempt waits its minute.
func TestRefreshKeepsTheValueWhenTheReadFails(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{value: "k_old"}}
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	s := FromParameter(func() SSM { return c }, "/p")
	s.SetClock(clk.now)
	ctx := context.Background()
	if _, err := s.Value(ctx); err != nil {
		t.Fatal(err)
	}
	clk.add(time.Minute)
	c.err = errors.New("ThrottlingException")
	if v, changed, err := s.Refresh(ctx, "k_old"); v != "k_old" || changed || err == nil {
		t.Fatalf("failed read: got %q, %v, %v; want the old value and the error", v, changed, err)
	}
	c.err = nil
	if _, changed, err := s.Refresh(ctx, "k_old"); changed || err != nil || c.reads.Load() != 2 {
		t.Errorf("right after a failed read: changed %v, err %v, %d reads; want no read", changed, err, c.reads.Load())
	}
}

func TestRefreshOfAFixedSecretNeverReads(t *testing.T) {
	s := Fixed("STRIPE_API_KEY", "sk_test_local")
	if v, changed, err := s.Refresh(context.Background(), "sk_test_local"); v != "sk_test_local" || changed || err != nil {
		t.Errorf("got %q, %v, %v", v, changed, err)
	}
}

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
// caller that needed the secret, and the next caller reads again, so a
// secret stored after the function started is picked up without a
// redeploy.
func TestSecretReadsAgainAfterAFailure(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{err: errors.New("AccessDeniedException")}}
	s := FromParameter(func() SSM { return c }, "/p")
	if _, err := s.Value(context.Background()); err == nil || !strings.Contains(err.Error(), "/p") {
		t.Fatalf("got %v, want the read's error naming the parameter", err)
	}
	c.err, c.value = nil, "whsec_now"
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

func TestForgetReadsAgain(t *testing.T) {
	c := &countingSSM{fakeSSM: fakeSSM{value: " , "}}
	s := FromParameter(func() SSM { return c }, "/p")
	if v, _ := s.Value(context.Background()); v != " , " {
		t.Fatalf("got %q", v)
	}
	c.value = "whsec_fixed"
	if v, _ := s.Value(context.Background()); v != " , " || c.reads.Load() != 1 {
		t.Fatalf("kept value: got %q after %d reads", v, c.reads.Load())
	}
	s.Forget()
	if v, err := s.Value(context.Background()); v != "whsec_fixed" || err != nil || c.reads.Load() != 2 {
		t.Errorf("after Forget: got %q, %v after %d reads; want the new value, read again", v, err, c.reads.Load())
	}
}

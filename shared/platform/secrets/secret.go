package secrets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RefreshInterval is the least time between two reads of one secret: a
// secret refused by whoever it was shown to (Refresh) is read again at
// most this often, so a rotated secret takes effect within it, and a flood
// of forged deliveries or refused calls costs one read per interval.
const RefreshInterval = time.Minute

// FailureBackoff is the least time between two reads of a secret while it
// cannot be had: after a read that failed (a missing parameter, access
// denied, Parameter Store down) or returned a value its user could not
// use (Forget), Value returns that failure, without reading, until this
// long after that read began. However many requests need it meanwhile, a
// secret that cannot be read costs at most one read per FailureBackoff,
// and a parameter fixed in Parameter Store is picked up within it.
const FailureBackoff = 5 * time.Second

// Secret is a secret read on first use and kept for the life of the
// process, unless it is refused (Refresh). It is safe for concurrent use:
// callers that ask while a read is in flight wait for that read and share
// its answer, so a batch of events that all need the secret costs one
// read. A failed read is remembered for FailureBackoff, then the next
// caller reads again.
type Secret struct {
	name   string
	read   func(context.Context) (string, error)
	inHand bool
	now    func() time.Time

	mu    sync.Mutex
	value string
	// readAt is when the last read started, successful or not: Refresh
	// waits RefreshInterval from it.
	readAt time.Time
	flight *flight
	// failed is, while no value is kept, why the last read (started at
	// failedAt) gave none: Value returns it until FailureBackoff has
	// passed.
	failed   error
	failedAt time.Time
}

type flight struct {
	done  chan struct{}
	value string
	err   error
}

// FromParameter returns the secret held by the SecureString parameter
// name, read with Read through the client client returns (called on the
// first read only, so an unused secret costs not even a client). Nothing
// is read before the first call to Value.
func FromParameter(client func() SSM, name string) *Secret {
	return &Secret{name: name, now: time.Now, read: func(ctx context.Context) (string, error) {
		return Read(ctx, client(), name)
	}}
}

// Fixed returns a secret already in hand (a local-only variable, a test's),
// named by where it came from. Refresh never changes it.
func Fixed(name, value string) *Secret {
	return &Secret{name: name, inHand: true, now: time.Now, read: func(context.Context) (string, error) {
		if value == "" {
			return "", errors.New("secrets: " + name + " is empty")
		}
		return value, nil
	}}
}

// SetClock replaces the clock Refresh measures RefreshInterval with
// (time.Now), for tests.
func (s *Secret) SetClock(now func() time.Time) {
	s.mu.Lock()
	s.now = now
	s.mu.Unlock()
}

// Name says where the secret comes from (a parameter's or a variable's
// name), for logs and errors; never the value.
func (s *Secret) Name() string { return s.name }

// InHand reports whether the secret was given (Fixed): reading it makes
// no network call.
func (s *Secret) InHand() bool { return s.inHand }

// Value returns the secret, reading it on the first call. Its error names
// the parameter, never a value; ctx bounds this caller's wait only. While
// the secret cannot be had, Value reads it at most once per
// FailureBackoff, and returns the last failure meanwhile.
func (s *Secret) Value(ctx context.Context) (string, error) {
	s.mu.Lock()
	if s.value != "" {
		v := s.value
		s.mu.Unlock()
		return v, nil
	}
	if s.failed != nil && s.flight == nil && !s.inHand {
		if again := s.failedAt.Add(FailureBackoff); s.now().Before(again) {
			err := s.failed
			s.mu.Unlock()
			return "", fmt.Errorf("%w (not read again before %s)", err, again.UTC().Format(time.RFC3339))
		}
	}
	return s.readLocked(ctx)
}

// Refresh reads the secret again because refused, a value Value or
// Refresh returned, was turned down where it was used: a delivery whose
// signature matches none of the signing secrets, an API answering 401 to
// a key. The parameter may hold a rotated secret by now. It reads at most
// once per RefreshInterval (counted from the last read, the first one
// included), however many callers report a refusal meanwhile; a caller
// whose refused value has already been replaced gets the new one without
// a read. It returns the value now kept, and whether it differs from
// refused (worth trying again). A failed read keeps the value in hand and
// returns the read's error beside it.
func (s *Secret) Refresh(ctx context.Context, refused string) (string, bool, error) {
	if s.inHand {
		v, err := s.Value(ctx)
		return v, false, err
	}
	s.mu.Lock()
	switch {
	case s.value != "" && s.value != refused:
		// Someone else's refresh replaced it already.
		v := s.value
		s.mu.Unlock()
		return v, true, nil
	case s.flight != nil:
	case !s.readAt.IsZero() && s.now().Sub(s.readAt) < RefreshInterval:
		v := s.value
		s.mu.Unlock()
		return v, false, nil
	}
	v, err := s.readLocked(ctx)
	if err != nil {
		s.mu.Lock()
		v = s.value
		s.mu.Unlock()
		return v, false, err
	}
	return v, v != refused, nil
}

// readLocked reads the secret, or joins the read in flight, and unlocks
// s.mu. A successful read replaces the value kept; a failed one keeps it.
func (s *Secret) readLocked(ctx context.Context) (string, error) {
	f := s.flight
	if f != nil {
		s.mu.Unlock()
		select {
		case <-f.done:
			return f.value, f.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f = &flight{done: make(chan struct{})}
	s.flight = f
	s.readAt = s.now()
	s.mu.Unlock()
	f.value, f.err = s.read(ctx)
	s.mu.Lock()
	switch {
	case f.err == nil:
		s.value, s.failed = f.value, nil
	case s.value == "":
		s.failed, s.failedAt = f.err, s.readAt
	}
	s.flight = nil
	s.mu.Unlock()
	close(f.done)
	return f.value, f.err
}

// Forget drops the value kept, found unusable for reason (a signing
// secret list with no secret), so that Value reads the secret again, which
// an operator fixes in Parameter Store without a redeploy: no sooner than
// FailureBackoff after the read that gave the value, and until then
// Value returns reason.
func (s *Secret) Forget(reason error) {
	s.mu.Lock()
	s.value = ""
	s.failed, s.failedAt = reason, s.readAt
	s.mu.Unlock()
}

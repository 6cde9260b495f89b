package secrets

import (
	"context"
	"errors"
	"sync"
)

// Secret is a secret read on first use and kept for the life of the
// process. It is safe for concurrent use: callers that ask while a read is
// in flight wait for that read and share its answer, so a batch of events
// that all need the secret costs one read. A failed read is not kept: the
// next caller reads again.
type Secret struct {
	name   string
	read   func(context.Context) (string, error)
	inHand bool

	mu     sync.Mutex
	value  string
	flight *flight
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
	return &Secret{name: name, read: func(ctx context.Context) (string, error) {
		return Read(ctx, client(), name)
	}}
}

// Fixed returns a secret already in hand (a local-only variable, a test's),
// named by where it came from.
func Fixed(name, value string) *Secret {
	return &Secret{name: name, inHand: true, read: func(context.Context) (string, error) {
		if value == "" {
			return "", errors.New("secrets: " + name + " is empty")
		}
		return value, nil
	}}
}

// Name says where the secret comes from (a parameter's or a variable's
// name), for logs and errors; never the value.
func (s *Secret) Name() string { return s.name }

// InHand reports whether the secret was given (Fixed): reading it makes
// no network call.
func (s *Secret) InHand() bool { return s.inHand }

// Value returns the secret, reading it on the first call. Its error names
// the parameter, never a value; ctx bounds this caller's wait only.
func (s *Secret) Value(ctx context.Context) (string, error) {
	s.mu.Lock()
	if s.value != "" {
		v := s.value
		s.mu.Unlock()
		return v, nil
	}
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
	s.mu.Unlock()

	f.value, f.err = s.read(ctx)
	s.mu.Lock()
	if f.err == nil {
		s.value = f.value
	}
	s.flight = nil
	s.mu.Unlock()
	close(f.done)
	return f.value, f.err
}

// Forget drops the value kept, so that the next Value reads the secret
// again: for a value found unusable (a signing secret list with no
// secret), which an operator fixes in Parameter Store without a redeploy.
func (s *Secret) Forget() {
	s.mu.Lock()
	s.value = ""
	s.mu.Unlock()
}

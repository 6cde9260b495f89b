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
	name string
	read func(context.Context) (string, error)

	mu     sync.Mutex
	value  string
	flight *flight
}

type flight struct {
	done  chan struct{}
	value string
	err   error
}

// Parameter returns the secret held by the SecureString parameter name,
// read with Read through the client client returns (called on the first
// read only, so an unused secret costs not even a client). Nothing is read
// before the first call to Value.
func Parameter(client func() SSM, name string) *Secret {
	return &Secret{name: name, read: func(ctx context.Context) (string, error) {
		return Read(ctx, client(), name)
	}}
}

// Fixed returns a secret already in hand (a local-only variable, a test's),
// named by where it came from.
func Fixed(name, value string) *Secret {
	return &Secret{name: name, read: func(context.Context) (string, error) {
		if value == "" {
			return "", errors.New("secrets: " + name + " is empty")
		}
		return value, nil
	}}
}

// Name says where the secret comes from (a parameter's or a variable's
// name), for logs and errors; never the value.
func (s *Secret) Name() string { return s.name }

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

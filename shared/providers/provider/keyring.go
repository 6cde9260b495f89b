package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

// Keyring is one provider's Verifier over the signing secrets a
// secrets.Secret holds (comma- or newline-separated: secrets.List), read
// on the first delivery rather than at cold start.
//
// A delivery whose signature matches none of them makes the Keyring read
// the parameter again (secrets.Secret.Refresh: at most once per
// secrets.RefreshInterval, a minute) and, when it holds other secrets now,
// verify the same delivery against them: a secret rotated in Parameter
// Store takes effect within a minute, without a redeploy, and a flood of
// forged deliveries costs one read a minute.
//
// While the secrets are not in hand (before the first read, or while they
// cannot be read or hold no usable secret), a delivery that no secret can
// make verify (no signature header, or one that cannot be a signature:
// Spec.Check) is refused before anything is read; any other is answered
// ErrNoSecrets, and the parameter is read at most once per
// secrets.FailureBackoff. So requests without a signature cost no read of
// Parameter Store, ever, and a missing or broken parameter costs one read
// every few seconds, however many requests come.
//
// It is safe for concurrent use.
type Keyring struct {
	spec   Spec
	secret *secrets.Secret
	opts   Options

	mu  sync.Mutex
	raw string // the value v was built from
	v   Verifier
}

// NewKeyring returns the named provider's Keyring of secret's signing
// secrets. It reads nothing.
func NewKeyring(name string, secret *secrets.Secret, opts Options) (*Keyring, error) {
	spec, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return NewKeyringFor(spec, secret, opts), nil
}

// NewKeyringFor is NewKeyring for spec: a configured sender's
// (Sender.Spec), which the table does not hold. It reads nothing.
func NewKeyringFor(spec Spec, secret *secrets.Secret, opts Options) *Keyring {
	return &Keyring{spec: spec, secret: secret, opts: opts}
}

// Verify verifies r with the secrets the Keyring holds. When they cannot
// be had, it returns an error wrapping ErrNoSecrets, unless r fails
// Spec.Check: that is the sender's fault whatever the secrets, and is
// answered as such.
func (k *Keyring) Verify(ctx context.Context, r Request) (Verified, error) {
	v, raw := k.current()
	if v == nil {
		if err := k.spec.Check(r); err != nil {
			return Verified{}, err
		}
		var err error
		if v, raw, err = k.load(ctx); err != nil {
			return Verified{}, err
		}
	}
	out, err := v.Verify(ctx, r)
	if !errors.Is(err, ErrNoMatch) {
		return out, err
	}
	// The secret may have been rotated since it was read.
	fresh, changed, rerr := k.secret.Refresh(ctx, raw)
	if !changed {
		if rerr != nil {
			return out, fmt.Errorf("%w (reading the secrets again failed: %v)", err, rerr)
		}
		return out, err
	}
	nv, err := k.use(fresh)
	if err != nil {
		return Verified{}, err
	}
	return nv.Verify(ctx, r)
}

// Load reads the secrets now and reports whether they make a verifier:
// for secrets in hand (a local variable), whose mistakes should fail the
// cold start.
func (k *Keyring) Load(ctx context.Context) error {
	_, _, err := k.load(ctx)
	return err
}

// current returns the verifier in hand and the value it was built from,
// or nil.
func (k *Keyring) current() (Verifier, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.v, k.raw
}

// load returns the verifier of the secrets as they are (secrets.Secret
// reads them when it keeps none).
func (k *Keyring) load(ctx context.Context) (Verifier, string, error) {
	raw, err := k.secret.Value(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNoSecrets, err)
	}
	v, err := k.use(raw)
	return v, raw, err
}

// use returns the verifier of raw, building it when raw is not the value
// the current one was built from. A value that builds none is forgotten
// (secrets.Secret.Forget), so the parameter is read again once its
// backoff has passed: an operator fixes it without a redeploy.
func (k *Keyring) use(raw string) (Verifier, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.v != nil && k.raw == raw {
		return k.v, nil
	}
	v, err := newOf(k.spec, secrets.List(raw), k.opts)
	if err != nil {
		err = fmt.Errorf("%w: %s holds no usable secret: %v", ErrNoSecrets, k.secret.Name(), err)
		// The verifier in hand, if any, stays: its secrets still verify
		// what they verified.
		k.secret.Forget(err)
		return nil, err
	}
	k.raw, k.v = raw, v
	return v, nil
}

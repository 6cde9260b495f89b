package signature

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/webhook-inbox/webhook-inbox/shared/secrets"
)

// ErrNoSecrets means the signing secrets cannot be had: their parameter
// cannot be read (Parameter Store down, access denied, not yet stored), or
// holds no secret. Nothing is wrong with the delivery: the receiver answers
// it with a 503 (outcome secrets_unavailable), so the provider retries it.
var ErrNoSecrets = errors.New("signature: the signing secrets cannot be read")

// Keyring verifies deliveries against the signing secrets a secrets.Secret
// holds (comma- or newline-separated: secrets.List), read on the first
// delivery rather than at cold start.
//
// A delivery whose signature matches none of them makes the Keyring read
// the parameter again (secrets.Secret.Refresh: at most once per
// secrets.RefreshInterval, a minute) and, when it holds other secrets now,
// verify the same delivery against them: a secret rotated in Parameter
// Store takes effect within a minute, without a redeploy, and a flood of
// forged deliveries costs one read a minute.
//
// It is safe for concurrent use.
type Keyring struct {
	secret *secrets.Secret
	opts   Options

	mu  sync.Mutex
	raw string // the value v was built from
	v   *Verifier
}

// NewKeyring returns a Keyring of secret's signing secrets. It reads
// nothing.
func NewKeyring(secret *secrets.Secret, opts Options) *Keyring {
	return &Keyring{secret: secret, opts: opts}
}

// Verify is Verifier.Verify with the secrets the Keyring holds. When they
// cannot be had, it returns an error wrapping ErrNoSecrets, unless the
// header itself is missing or malformed: that is the sender's fault
// whatever the secrets, and is answered as such.
func (k *Keyring) Verify(ctx context.Context, payload []byte, header string) error {
	v, raw, err := k.verifier(ctx)
	if err != nil {
		if _, herr := ParseHeader(header); herr != nil {
			return herr
		}
		return err
	}
	err = v.Verify(payload, header)
	if !errors.Is(err, ErrNoMatch) {
		return err
	}
	// The secret may have been rotated since it was read.
	fresh, changed, rerr := k.secret.Refresh(ctx, raw)
	if !changed {
		if rerr != nil {
			return fmt.Errorf("%w (reading the secrets again failed: %v)", err, rerr)
		}
		return err
	}
	nv, err := k.use(fresh)
	if err != nil {
		return err
	}
	return nv.Verify(payload, header)
}

// Check reads the secrets now and reports whether they make a Verifier:
// for secrets in hand (a local variable), whose mistakes should fail the
// cold start.
func (k *Keyring) Check(ctx context.Context) error {
	_, _, err := k.verifier(ctx)
	return err
}

// verifier returns the Verifier of the secrets as last read, reading them
// when there are none yet.
func (k *Keyring) verifier(ctx context.Context) (*Verifier, string, error) {
	raw, err := k.secret.Value(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNoSecrets, err)
	}
	v, err := k.use(raw)
	return v, raw, err
}

// use returns the Verifier of raw, building it when raw is not the value
// the current one was built from. A value that holds no secret is
// forgotten, so the next delivery reads the parameter again: an operator
// fixes it without a redeploy.
func (k *Keyring) use(raw string) (*Verifier, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.v != nil && k.raw == raw {
		return k.v, nil
	}
	v, err := New(secrets.List(raw), k.opts)
	if err != nil {
		err = fmt.Errorf("%w: %s holds no usable secret: %v", ErrNoSecrets, k.secret.Name(), err)
		k.secret.Forget(err)
		return nil, err
	}
	k.raw, k.v = raw, v
	return v, nil
}

package provider

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

// parameterStore is Parameter Store holding one value, counting reads.
type parameterStore struct {
	mu    sync.Mutex
	value string
	err   error
	reads int
}

func (p *parameterStore) GetParameter(context.Context, string) (secrets.Parameter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reads++
	if p.err != nil {
		return secrets.Parameter{}, p.err
	}
	return secrets.Parameter{Name: "/p", Type: "SecureString", Value: p.value}, nil
}

func (p *parameterStore) set(value string, err error) {
	p.mu.Lock()
	p.value, p.err = value, err
	p.mu.Unlock()
}

func (p *parameterStore) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reads
}

// TestKeyringTakesARotatedSecretWithinAMinute: a secret rotated in
// Parameter Store (Stripe's "roll secret", then put-parameter) is used
// for the first delivery that matches none of the secrets in hand a
// minute or more after they were read, that delivery included; forged
// deliveries meanwhile cost no read.
func TestKeyringTakesARotatedSecretWithinAMinute(t *testing.T) {
	ps := &parameterStore{value: "whsec_old"}
	clk := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clk }
	advance := func(d time.Duration) { mu.Lock(); clk = clk.Add(d); mu.Unlock() }
	secret := secrets.FromParameter(func() secrets.SSM { return ps }, "/webhook-inbox/dev/stripe/webhook-secrets")
	secret.SetClock(now)
	k := stripeKeyring(t, secret, Options{Now: now})
	ctx := context.Background()
	body := []byte(`{"id":"evt_1","type":"invoice.paid"}`)

	if err := keyringVerify(ctx, k, body, SignStripe(body, "whsec_old", now())); err != nil {
		t.Fatalf("before the rotation: %v", err)
	}
	ps.set("whsec_new", nil) // rotated
	advance(20 * time.Second)
	for range 10 {
		if err := keyringVerify(ctx, k, body, SignStripe(body, "whsec_new", now())); !errors.Is(err, ErrNoMatch) {
			t.Fatalf("20 s after the read: got %v, want ErrNoMatch (no read yet)", err)
		}
		if err := keyringVerify(ctx, k, body, SignStripe(body, "whsec_forged", now())); !errors.Is(err, ErrNoMatch) {
			t.Fatalf("forged: got %v", err)
		}
	}
	if n := ps.count(); n != 1 {
		t.Fatalf("reads within the minute: got %d, want 1", n)
	}
	advance(40 * time.Second)
	if err := keyringVerify(ctx, k, body, SignStripe(body, "whsec_new", now())); err != nil {
		t.Fatalf("a minute after the read: got %v, want the rotated secret to verify the same delivery", err)
	}
	if err := keyringVerify(ctx, k, body, SignStripe(body, "whsec_old", now())); !errors.Is(err, ErrNoMatch) {
		t.Errorf("the old secret after it left the parameter: got %v, want ErrNoMatch", err)
	}
	if n := ps.count(); n != 2 {
		t.Errorf("reads: got %d, want 2", n)
	}
	// A flood of forgeries: one read a minute.
	for range 3 {
		advance(time.Minute)
		for range 50 {
			_ = keyringVerify(ctx, k, body, SignStripe(body, "whsec_forged", now()))
		}
	}
	if n := ps.count(); n != 5 {
		t.Errorf("reads after three minutes of forgeries: got %d, want 5 (one a minute)", n)
	}
}

// TestKeyringWithoutItsSecrets: unreadable or empty secrets are
// ErrNoSecrets (the receiver's 503), unless the header is the sender's
// fault anyway, which is answered without reading anything; a delivery
// that needs the secrets reads them again once secrets.FailureBackoff has
// passed since the read that failed, and not before.
func TestKeyringWithoutItsSecrets(t *testing.T) {
	ps := &parameterStore{err: errors.New("AccessDeniedException")}
	clk := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clk }
	advance := func(d time.Duration) { mu.Lock(); clk = clk.Add(d); mu.Unlock() }
	secret := secrets.FromParameter(func() secrets.SSM { return ps }, "/p")
	secret.SetClock(now)
	k := stripeKeyring(t, secret, Options{Now: now})
	ctx := context.Background()
	body := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	// Headers no secret can make verify: refused before anything is read.
	for _, tc := range []struct {
		header string
		want   error
	}{
		{"", ErrMissingSignature},
		{"garbage", ErrMalformedSignature},
		{"t=1800000000,v0=abcd", ErrNoMatch},
	} {
		if err := keyringVerify(ctx, k, body, tc.header); !errors.Is(err, tc.want) {
			t.Errorf("header %q, before any read: got %v, want %v", tc.header, err, tc.want)
		}
	}
	if n := ps.count(); n != 0 {
		t.Fatalf("reads for headers that cannot verify: got %d, want 0", n)
	}
	signed := func() string { return SignStripe(body, "whsec_a", now()) }
	for range 10 {
		if err := keyringVerify(ctx, k, body, signed()); !errors.Is(err, ErrNoSecrets) {
			t.Fatalf("unreadable: got %v, want ErrNoSecrets", err)
		}
	}
	if err := keyringVerify(ctx, k, body, ""); !errors.Is(err, ErrMissingSignature) {
		t.Errorf("unreadable, no header: got %v, want ErrMissingSignature", err)
	}
	if err := keyringVerify(ctx, k, body, "garbage"); !errors.Is(err, ErrMalformedSignature) {
		t.Errorf("unreadable, malformed header: got %v, want ErrMalformedSignature", err)
	}
	if n := ps.count(); n != 1 {
		t.Fatalf("reads while unreadable, within the backoff: got %d, want 1", n)
	}
	ps.set(" , ", nil)
	if err := keyringVerify(ctx, k, body, signed()); !errors.Is(err, ErrNoSecrets) {
		t.Errorf("fixed, but within the backoff: got %v, want ErrNoSecrets without a read", err)
	}
	advance(secrets.FailureBackoff)
	for range 10 {
		if err := keyringVerify(ctx, k, body, signed()); !errors.Is(err, ErrNoSecrets) {
			t.Fatalf("no secret in the value: got %v, want ErrNoSecrets", err)
		}
	}
	if n := ps.count(); n != 2 {
		t.Fatalf("reads after the backoff, the value holding no secret: got %d, want 2", n)
	}
	ps.set("whsec_a", nil)
	advance(secrets.FailureBackoff)
	if err := keyringVerify(ctx, k, body, signed()); err != nil {
		t.Errorf("fixed: got %v", err)
	}
	if n := ps.count(); n != 3 {
		t.Errorf("reads: got %d, want 3 (one per backoff while the secrets could not be had)", n)
	}
}

// stripeKeyring is a Keyring of Stripe's secrets in secret.
func stripeKeyring(t *testing.T, secret *secrets.Secret, opts Options) *Keyring {
	t.Helper()
	k, err := NewKeyring(Stripe, secret, opts)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// keyringVerify verifies a Stripe delivery of body with its header.
func keyringVerify(ctx context.Context, k *Keyring, body []byte, header string) error {
	_, err := k.Verify(ctx, Request{Body: body, Headers: map[string]string{"stripe-signature": header}})
	return err
}

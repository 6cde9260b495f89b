package signature

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/secrets"
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
	k := NewKeyring(secret, Options{Now: now})
	ctx := context.Background()
	body := []byte(`{"id":"evt_1"}`)

	if err := k.Verify(ctx, body, Sign(body, "whsec_old", now())); err != nil {
		t.Fatalf("before the rotation: %v", err)
	}
	ps.set("whsec_new", nil) // rotated
	advance(20 * time.Second)
	for range 10 {
		if err := k.Verify(ctx, body, Sign(body, "whsec_new", now())); !errors.Is(err, ErrNoMatch) {
			t.Fatalf("20 s after the read: got %v, want ErrNoMatch (no read yet)", err)
		}
		if err := k.Verify(ctx, body, Sign(body, "whsec_forged", now())); !errors.Is(err, ErrNoMatch) {
			t.Fatalf("forged: got %v", err)
		}
	}
	if n := ps.count(); n != 1 {
		t.Fatalf("reads within the minute: got %d, want 1", n)
	}
	advance(40 * time.Second)
	if err := k.Verify(ctx, body, Sign(body, "whsec_new", now())); err != nil {
		t.Fatalf("a minute after the read: got %v, want the rotated secret to verify the same delivery", err)
	}
	if err := k.Verify(ctx, body, Sign(body, "whsec_old", now())); !errors.Is(err, ErrNoMatch) {
		t.Errorf("the old secret after it left the parameter: got %v, want ErrNoMatch", err)
	}
	if n := ps.count(); n != 2 {
		t.Errorf("reads: got %d, want 2", n)
	}
	// A flood of forgeries: one read a minute.
	for range 3 {
		advance(time.Minute)
		for range 50 {
			_ = k.Verify(ctx, body, Sign(body, "whsec_forged", now()))
		}
	}
	if n := ps.count(); n != 5 {
		t.Errorf("reads after three minutes of forgeries: got %d, want 5 (one a minute)", n)
	}
}

// TestKeyringWithoutItsSecrets: unreadable or empty secrets are
// ErrNoSecrets (the receiver's 503), unless the header is the sender's
// fault anyway; the next delivery reads again.
func TestKeyringWithoutItsSecrets(t *testing.T) {
	ps := &parameterStore{err: errors.New("AccessDeniedException")}
	k := NewKeyring(secrets.FromParameter(func() secrets.SSM { return ps }, "/p"), Options{})
	ctx := context.Background()
	body := []byte(`{}`)
	if err := k.Verify(ctx, body, Sign(body, "whsec_a", time.Now())); !errors.Is(err, ErrNoSecrets) {
		t.Errorf("unreadable: got %v, want ErrNoSecrets", err)
	}
	if err := k.Verify(ctx, body, ""); !errors.Is(err, ErrMissingHeader) {
		t.Errorf("unreadable, no header: got %v, want ErrMissingHeader", err)
	}
	if err := k.Verify(ctx, body, "garbage"); !errors.Is(err, ErrMalformedHeader) {
		t.Errorf("unreadable, malformed header: got %v, want ErrMalformedHeader", err)
	}
	ps.set(" , ", nil)
	if err := k.Verify(ctx, body, Sign(body, "whsec_a", time.Now())); !errors.Is(err, ErrNoSecrets) {
		t.Errorf("no secret in the value: got %v, want ErrNoSecrets", err)
	}
	ps.set("whsec_a", nil)
	if err := k.Verify(ctx, body, Sign(body, "whsec_a", time.Now())); err != nil {
		t.Errorf("fixed: got %v", err)
	}
	if n := ps.count(); n != 5 {
		t.Errorf("reads: got %d, want 5 (each failed delivery reads again)", n)
	}
}

package provider

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// LiveKit is LiveKit's webhooks (LiveKit Cloud or a LiveKit server).
const LiveKit = "livekit"

// headerLiveKitAuthorization carries LiveKit's token.
const headerLiveKitAuthorization = "authorization"

// liveKitLeeway is the clock tolerance LiveKit's own WebhookReceiver
// grants on the token's nbf and exp.
const liveKitLeeway = 10 * time.Second

var liveKitSpec = Spec{Name: LiveKit, Check: checkLiveKit, New: newLiveKit, Sign: signLiveKit, Stamp: stampField("id")}

// liveKit verifies LiveKit's webhooks as its server SDK's WebhookReceiver
// does: the Authorization header is a bare JWT (no "Bearer "), HS256
// under the API secret, whose iss is the API key, exp required and nbf
// enforced, with ten seconds' tolerance either way; its sha256 claim is
// the padded standard base64 SHA-256 of the raw body, compared here in
// constant time. Each configured secret is "<API key>:<API secret>"
// (a rotation is a new key pair: both configured, the token's iss picks
// the secret). The token's nbf and exp bound the delivery's age (LiveKit
// issues each for a few minutes), and the body it covers holds the event
// id, so no ReplayKey: a replay is its id's duplicate until exp, and
// ErrTooOld after.
//
// The JWT is checked by golang-jwt (already the reconciler's, for GitHub
// App tokens); LiveKit's Go SDK (server-sdk-go) would pull its whole
// protocol and RPC stack into the receiver for these few lines.
type liveKit struct {
	secrets map[string][]byte // by API key
	now     func() time.Time
}

func newLiveKit(secrets []string, opts Options) (Verifier, error) {
	l := &liveKit{secrets: map[string][]byte{}, now: opts.Now}
	if l.now == nil {
		l.now = time.Now
	}
	for i, s := range secrets {
		key, secret, ok := strings.Cut(s, ":")
		if !ok || key == "" || secret == "" {
			return nil, fmt.Errorf("provider livekit: secret %d is not <API key>:<API secret>", i+1)
		}
		l.secrets[key] = []byte(secret)
	}
	return l, nil
}

// liveKitToken reads the Authorization header: a JWT's three parts.
func liveKitToken(r Request) (string, error) {
	tok := strings.TrimSpace(r.Header(headerLiveKitAuthorization))
	if tok == "" {
		return "", ErrMissingSignature
	}
	if _, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{}); err != nil {
		return "", fmt.Errorf("%w: not a JWT", ErrMalformedSignature)
	}
	return tok, nil
}

func checkLiveKit(r Request) error {
	_, err := liveKitToken(r)
	return err
}

// liveKitClaims are the token's claims.
type liveKitClaims struct {
	SHA256 string `json:"sha256"`
	jwt.RegisteredClaims
}

// Verify checks the token (its issuer's secret, HS256, nbf and exp with
// LiveKit's leeway), then the body's hash, then reads the envelope: the
// id id, the type event ("room_started"), the created time createdAt and
// the object, the room's sid.
func (l *liveKit) Verify(_ context.Context, r Request) (Verified, error) {
	tok, err := liveKitToken(r)
	if err != nil {
		return Verified{}, err
	}
	var claims liveKitClaims
	_, err = jwt.ParseWithClaims(tok, &claims, func(t *jwt.Token) (any, error) {
		iss, _ := t.Claims.GetIssuer()
		secret, ok := l.secrets[iss]
		if !ok {
			return nil, ErrNoMatch
		}
		return secret, nil
	}, jwt.WithValidMethods([]string{"HS256"}), jwt.WithLeeway(liveKitLeeway), jwt.WithTimeFunc(l.now), jwt.WithExpirationRequired())
	switch {
	case err == nil:
	case errors.Is(err, ErrNoMatch), errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return Verified{}, ErrNoMatch
	case errors.Is(err, jwt.ErrTokenExpired):
		return Verified{}, fmt.Errorf("%w: the token expired", ErrTooOld)
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return Verified{}, fmt.Errorf("%w: the token is not valid yet", ErrTooNew)
	default:
		return Verified{}, fmt.Errorf("%w: %v", ErrMalformedSignature, err)
	}
	sum := sha256.Sum256(r.Body)
	if !hmac.Equal([]byte(claims.SHA256), []byte(base64.StdEncoding.EncodeToString(sum[:]))) {
		return Verified{}, fmt.Errorf("%w: the token is for another body", ErrNoMatch)
	}
	b, err := decodeObject[struct {
		ID        string `json:"id"`
		Event     string `json:"event"`
		CreatedAt string `json:"createdAt"`
		Room      struct {
			SID string `json:"sid"`
		} `json:"room"`
	}](r.Body)
	if err != nil {
		return Verified{}, err
	}
	if b.ID == "" || b.Event == "" {
		return Verified{}, event.ErrMissingID
	}
	env := event.Envelope{ID: b.ID, Type: b.Event}
	if n, err := strconv.ParseInt(b.CreatedAt, 10, 64); err == nil {
		env.Created = n
	}
	if b.Room.SID != "" {
		env.ObjectID, env.ObjectType = b.Room.SID, "room"
	}
	return Verified{Envelope: env}, nil
}

// signLiveKit signs d as LiveKit does, with secret "<API key>:<API
// secret>": a token valid from d.Now for ten minutes.
func signLiveKit(secret string, d Delivery) (map[string]string, error) {
	key, s, ok := strings.Cut(secret, ":")
	if !ok {
		return nil, fmt.Errorf("provider livekit: the secret is not <API key>:<API secret>")
	}
	sum := sha256.Sum256(d.Body)
	claims := liveKitClaims{SHA256: base64.StdEncoding.EncodeToString(sum[:]), RegisteredClaims: jwt.RegisteredClaims{
		Issuer: key, NotBefore: jwt.NewNumericDate(d.Now), ExpiresAt: jwt.NewNumericDate(d.Now.Add(10 * time.Minute)),
	}}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("provider livekit: sign: %w", err)
	}
	return map[string]string{headerLiveKitAuthorization: tok}, nil
}

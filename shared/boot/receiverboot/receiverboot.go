package receiverboot

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/effect"
	"github.com/webhook-inbox/webhook-inbox/shared/provider"
	"github.com/webhook-inbox/webhook-inbox/shared/receiver"
	"github.com/webhook-inbox/webhook-inbox/shared/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/signature"
)

// New builds the receiver's handler. effects are the team's effects
// (hooks.Registry()); the receiver reads only their event types, which it
// accepts beside the mirror's (boot.HandledTypeList). It makes no network
// call: see Handler.
func New(ctx context.Context, env boot.Env, cfg aws.Config, logger *slog.Logger, effects *effect.Registry) (*Handler, error) {
	r := boot.NewReader(env, cfg)
	c := r.Common()
	opts := signature.Options{
		Tolerance:  r.Duration("SIGNATURE_TOLERANCE", signature.DefaultTolerance),
		FutureSkew: r.Duration("SIGNATURE_FUTURE_SKEW", signature.DefaultFutureSkew),
	}
	maxBody := r.Integer("MAX_BODY_BYTES", receiver.DefaultMaxBodyBytes)
	budget := r.Duration("RECEIVER_BUDGET", receiver.DefaultBudget)
	secret := r.Secret("STRIPE_WEBHOOK_SECRET", true)
	// Each other provider is served only when its secret is configured:
	// its local variable, or its parameter's name.
	others := map[string]*secrets.Secret{}
	for _, name := range provider.Names {
		if s := r.Secret(boot.WebhookSecretVariable(name), false); s != nil {
			others[name] = s
		}
	}
	if err := r.Err("receiver"); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	ingester := boot.NewIngester(cfg, c, boot.HandledTypes(env, effects))
	providers := map[string]receiver.Provider{}
	for name, s := range others {
		in := *ingester
		in.Provider, in.Handled = name, boot.ProviderTypes(env, name, effects)
		l := &lazyVerifier{secret: s, build: func(raw string) (provider.Verifier, error) {
			return provider.New(name, secrets.List(raw), provider.Options{Tolerance: opts.Tolerance, FutureSkew: opts.FutureSkew})
		}}
		if s.InHand() {
			// A local variable costs no network call: a bad one fails now.
			if _, err := l.verifier(ctx); err != nil {
				return nil, err
			}
		}
		providers[name] = receiver.Provider{Verifier: l.verifier, Ingester: &in}
	}
	h := &Handler{secret: secret, logger: logger, build: func(raw string) (*receiver.Handler, error) {
		v, err := signature.New(secrets.List(raw), opts)
		if err != nil {
			return nil, err
		}
		return receiver.New(receiver.Config{
			Verifier:     v,
			Ingester:     ingester,
			Livemode:     c.Livemode,
			APIVersion:   stripe.APIVersion,
			MaxBodyBytes: maxBody,
			Budget:       budget,
			Logger:       logger,
			Providers:    providers,
		}), nil
	}}
	if secret.InHand() {
		// A local variable costs no network call: a bad one fails now.
		if _, err := h.receiver(ctx); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Handler is the receiver's Lambda handler: package receiver's, built on
// the first request, when the signing secrets
// (STRIPE_WEBHOOK_SECRETS_PARAMETER) are read and kept. The cold start
// then makes no network call; the read is the first request's, before its
// own calls, as it was the cold start's last step.
//
// Until the secrets are read and usable, a request fails as a failed cold
// start would: the invocation's error (API Gateway answers 500, so the
// provider retries, and its 5xx alarm counts it), logged once here. Each
// request tries again: a read that failed is not kept, and a value that is
// no usable secret list is forgotten, so a fixed parameter is picked up
// without a redeploy.
type Handler struct {
	secret *secrets.Secret
	build  func(raw string) (*receiver.Handler, error)
	logger *slog.Logger

	mu sync.Mutex
	h  *receiver.Handler
}

// Handle answers one API Gateway request.
func (h *Handler) Handle(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	r, err := h.receiver(ctx)
	if err != nil {
		h.logger.ErrorContext(ctx, "webhook not handled: no signing secrets", slog.String("error", err.Error()))
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return r.Handle(ctx, req)
}

func (h *Handler) receiver(ctx context.Context) (*receiver.Handler, error) {
	h.mu.Lock()
	r := h.h
	h.mu.Unlock()
	if r != nil {
		return r, nil
	}
	raw, err := h.secret.Value(ctx)
	if err != nil {
		return nil, fmt.Errorf("receiver: signing secrets: %w", err)
	}
	r, err = h.build(raw)
	if err != nil {
		h.secret.Forget()
		return nil, fmt.Errorf("receiver: signing secrets from %s: %w", h.secret.Name(), err)
	}
	h.mu.Lock()
	if h.h == nil {
		h.h = r
	}
	r = h.h
	h.mu.Unlock()
	return r, nil
}

// lazyVerifier is a provider's verifier, built when its secrets are first
// read (on the first delivery for that provider) and kept. A read that
// failed is not kept, and a value that builds no verifier is forgotten,
// so a fixed parameter is picked up without a redeploy, as for Stripe's.
type lazyVerifier struct {
	secret *secrets.Secret
	build  func(raw string) (provider.Verifier, error)

	mu sync.Mutex
	v  provider.Verifier
}

func (l *lazyVerifier) verifier(ctx context.Context) (provider.Verifier, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.v != nil {
		return l.v, nil
	}
	raw, err := l.secret.Value(ctx)
	if err != nil {
		return nil, fmt.Errorf("receiver: signing secrets: %w", err)
	}
	v, err := l.build(raw)
	if err != nil {
		l.secret.Forget()
		return nil, fmt.Errorf("receiver: signing secrets from %s: %w", l.secret.Name(), err)
	}
	l.v = v
	return v, nil
}

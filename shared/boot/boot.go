package boot

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
)

// Env reads a configuration variable; os.Getenv in Lambda.
type Env func(key string) string

// OSEnv reads the process environment.
func OSEnv(key string) string { return os.Getenv(key) }

// Reader reads a function's configuration and collects every problem, so
// one failed cold start reports all of them.
type Reader struct {
	env  Env
	errs []error
	ssm  func() secrets.SSM
}

// NewReader returns a Reader of env. Secrets it hands out (Secret) are
// read from SSM through cfg, with a client built on the first read.
func NewReader(env Env, cfg aws.Config) *Reader {
	return &Reader{env: env, ssm: sync.OnceValue(func() secrets.SSM { return secrets.NewClient(cfg) })}
}

// Required returns the variable key, and records a problem when it is not
// set.
func (r *Reader) Required(key string) string {
	v := strings.TrimSpace(r.env(key))
	if v == "" {
		r.errs = append(r.errs, fmt.Errorf("%s is not set", key))
	}
	return v
}

// Optional returns the variable key, or def when it is not set.
func (r *Reader) Optional(key, def string) string {
	if v := strings.TrimSpace(r.env(key)); v != "" {
		return v
	}
	return def
}

// Duration returns the variable key as a duration (300s, 5m, or a number
// of seconds), or def when it is not set.
func (r *Reader) Duration(key string, def time.Duration) time.Duration {
	v := strings.TrimSpace(r.env(key))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if secs, err2 := strconv.Atoi(v); err2 == nil {
			return time.Duration(secs) * time.Second
		}
		r.errs = append(r.errs, fmt.Errorf("%s=%q is not a duration (like 300s or 5m)", key, v))
	}
	return d
}

// Integer returns the variable key as an integer, or def when it is not
// set.
func (r *Reader) Integer(key string, def int) int {
	v := strings.TrimSpace(r.env(key))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s=%q is not an integer", key, v))
	}
	return n
}

// Checked returns the variable key (def when not set) and records check's
// error, naming the variable, when it refuses the value.
func (r *Reader) Checked(key, def string, check func(string) error) string {
	v := r.Optional(key, def)
	if err := check(v); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", key, err))
	}
	return v
}

// Fail records a problem.
func (r *Reader) Fail(err error) { r.errs = append(r.errs, err) }

// Err returns every problem recorded, for function, or nil.
func (r *Reader) Err(function string) error {
	if len(r.errs) == 0 {
		return nil
	}
	return fmt.Errorf("boot %s: configuration: %w", function, errors.Join(r.errs...))
}

// Common is the configuration every function shares.
type Common struct {
	EventsTable string
	MirrorTable string
	QueueURL    string
	Livemode    bool
	// Retention keeps a record (RETENTION_DAYS), PayloadRetention its
	// payload (PAYLOAD_RETENTION_DAYS, taken as Retention when longer).
	Retention, PayloadRetention time.Duration
}

// Events is the events table the functions share, with c's retentions.
func (c Common) Events(db store.DynamoDB) *store.Events {
	return &store.Events{DB: db, Table: c.EventsTable, Retention: c.Retention, PayloadRetention: c.PayloadRetention}
}

// Common reads the configuration every function shares, and checks where
// its secrets may come from (see checkSecretSources).
func (r *Reader) Common() Common {
	c := Common{
		EventsTable: r.Required("EVENTS_TABLE"),
		MirrorTable: r.Required("MIRROR_TABLE"),
		QueueURL:    r.Required("QUEUE_URL"),
		Retention:   time.Duration(r.Integer("RETENTION_DAYS", 90)) * 24 * time.Hour,
	}
	// A payload is kept no longer than its record: without it, it would be
	// an item nothing reads.
	c.PayloadRetention = min(time.Duration(r.Integer("PAYLOAD_RETENTION_DAYS", 31))*24*time.Hour, c.Retention)
	r.checkSecretSources()
	switch mode := r.Optional("STRIPE_MODE", "test"); mode {
	case "test":
	case "live":
		c.Livemode = true
	default:
		r.errs = append(r.errs, fmt.Errorf("STRIPE_MODE=%q: want test or live", mode))
	}
	return c
}

// secretParameters maps each variable that carries a secret itself (the
// local stack's and the tests' way) to the one naming its SSM SecureString
// parameter (the only way in Lambda).
var secretParameters = map[string]string{
	"STRIPE_WEBHOOK_SECRET": "STRIPE_WEBHOOK_SECRETS_PARAMETER",
	// A Connect platform's Connect endpoint (provider.StripeEndpoints).
	"STRIPE_CONNECT_WEBHOOK_SECRET": "STRIPE_CONNECT_WEBHOOK_SECRETS_PARAMETER",
	"STRIPE_API_KEY":                "STRIPE_API_KEY_PARAMETER",
	"FORWARD_SECRET":                "FORWARD_SECRET_PARAMETER",
	"GITHUB_WEBHOOK_SECRET":         "GITHUB_WEBHOOK_SECRETS_PARAMETER",
	"SHOPIFY_WEBHOOK_SECRET":        "SHOPIFY_WEBHOOK_SECRETS_PARAMETER",
	"STANDARD_WEBHOOK_SECRET":       "STANDARD_WEBHOOK_SECRETS_PARAMETER",
	"PADDLE_WEBHOOK_SECRET":         "PADDLE_WEBHOOK_SECRETS_PARAMETER",
	"RAZORPAY_WEBHOOK_SECRET":       "RAZORPAY_WEBHOOK_SECRETS_PARAMETER",
	"LEMONSQUEEZY_WEBHOOK_SECRET":   "LEMONSQUEEZY_WEBHOOK_SECRETS_PARAMETER",
	"SQUARE_WEBHOOK_SECRET":         "SQUARE_WEBHOOK_SECRETS_PARAMETER",
	"LIVEKIT_WEBHOOK_SECRET":        "LIVEKIT_WEBHOOK_SECRETS_PARAMETER",
	"TWILIO_WEBHOOK_SECRET":         "TWILIO_WEBHOOK_SECRETS_PARAMETER",
	// The reconciler's GitHub credentials (package githubapi).
	"GITHUB_API_TOKEN":       "GITHUB_API_TOKEN_PARAMETER",
	"GITHUB_APP_PRIVATE_KEY": "GITHUB_APP_PRIVATE_KEY_PARAMETER",
}

// SendersSecretsPathVariable names the SSM path under which each
// configured sender's (provider.Sender) signing secrets are a SecureString
// parameter of its own: <path>/<name>. Outside Lambda a sender's secrets
// may instead be in its local-only variable, <NAME>_WEBHOOK_SECRET
// (WebhookSecretVariable), as a provider's are.
const SendersSecretsPathVariable = "GENERIC_SENDERS_SECRETS_PATH"

// SenderSecret returns the signing secrets of the configured sender name
// (provider.Sender): outside Lambda its local-only variable's value when
// set, else the SecureString parameter <GENERIC_SENDERS_SECRETS_PATH>/<name>,
// read on first use. It reads nothing now. It records a problem when
// neither is set (a sender declared is a sender served, or the cold start
// says why not), when the variable is set inside Lambda, when the name's
// variable is another secret's, and when the path is not the stage's (as
// checkSecretSources does for the providers' parameters).
func (r *Reader) SenderSecret(name string) *secrets.Secret {
	local := WebhookSecretVariable(name)
	if _, ok := secretParameters[local]; ok {
		r.errs = append(r.errs, fmt.Errorf("sender %s: its variable %s is another secret's: choose another name", name, local))
		return nil
	}
	v := strings.TrimSpace(r.env(local))
	if v != "" && r.inLambda() {
		r.errs = append(r.errs, fmt.Errorf("%s is set in the function's environment: in Lambda a sender's secret comes only from its SSM SecureString parameter under %s; remove the variable (and rotate the secret it exposed)", local, SendersSecretsPathVariable))
		return nil
	}
	if v != "" {
		return secrets.Fixed(local, v)
	}
	path := strings.TrimRight(strings.TrimSpace(r.env(SendersSecretsPathVariable)), "/")
	if path == "" {
		r.errs = append(r.errs, fmt.Errorf("sender %s: no signing secret: set %s (the SSM path holding <path>/%s), or %s outside Lambda", name, SendersSecretsPathVariable, name, local))
		return nil
	}
	if stage := strings.TrimSpace(r.env("STAGE")); stage != "" && !strings.Contains(path+"/", "/"+stage+"/") {
		r.errs = append(r.errs, fmt.Errorf("%s=%s is not one of stage %s's paths: it must have %q as a segment (like /webhook-inbox/%s/senders)", SendersSecretsPathVariable, path, stage, stage, stage))
		return nil
	}
	// The receiver may read every parameter under the path: none of the
	// other secrets may be one of them.
	for _, param := range slices.Sorted(maps.Values(secretParameters)) {
		if other := strings.TrimSpace(r.env(param)); strings.HasPrefix(other, path+"/") {
			r.errs = append(r.errs, fmt.Errorf("%s=%s holds %s's parameter %s: keep the senders' path for their secrets alone", SendersSecretsPathVariable, path, param, other))
			return nil
		}
	}
	return secrets.FromParameter(r.ssm, path+"/"+name)
}

// StripeConnectSecretVariable is the local-only variable carrying a
// Connect endpoint's signing secrets, beside STRIPE_WEBHOOK_SECRET (the
// platform endpoint's); its parameter variable is
// STRIPE_CONNECT_WEBHOOK_SECRETS_PARAMETER.
const StripeConnectSecretVariable = "STRIPE_CONNECT_WEBHOOK_SECRET"

// WebhookSecretVariable is the local-only variable carrying provider's
// signing secrets (GITHUB_WEBHOOK_SECRET, ...); its parameter variable is
// the same with _SECRETS_PARAMETER (GITHUB_WEBHOOK_SECRETS_PARAMETER).
func WebhookSecretVariable(provider string) string {
	return strings.ToUpper(provider) + "_WEBHOOK_SECRET"
}

// inLambda reports whether the process runs in Lambda, whose runtime sets
// AWS_LAMBDA_FUNCTION_NAME.
func (r *Reader) inLambda() bool {
	return strings.TrimSpace(r.env("AWS_LAMBDA_FUNCTION_NAME")) != ""
}

// checkSecretSources reports, as configuration errors, a secret in a plain
// variable inside Lambda (anyone allowed lambda:GetFunctionConfiguration
// reads it, and it would win over the SSM parameter), and a parameter
// outside the stage's own: with STAGE set (the template sets it), a
// parameter's path must have the stage as one of its segments, so a
// staging stack pointed at /webhook-inbox/prod/... fails its cold start
// instead of reading prod's live secrets. The template's Rules cannot say
// this: CloudFormation's rule functions compare whole strings only.
func (r *Reader) checkSecretSources() {
	stage := strings.TrimSpace(r.env("STAGE"))
	for _, local := range slices.Sorted(maps.Keys(secretParameters)) {
		param := secretParameters[local]
		if r.inLambda() && strings.TrimSpace(r.env(local)) != "" {
			r.errs = append(
				r.errs,
				fmt.Errorf(
					"%s is set in the function's environment: in Lambda a secret comes only from the SSM SecureString parameter %s names; remove the variable (and rotate the secret it exposed)",
					local,
					param,
				),
			)
		}
		name := strings.TrimSpace(r.env(param))
		if stage != "" && name != "" && !strings.Contains(name+"/", "/"+stage+"/") {
			r.errs = append(
				r.errs,
				fmt.Errorf(
					"%s=%s is not one of stage %s's parameters: its path must have %q as a segment (like /webhook-inbox/%s/stripe/...)",
					param,
					name,
					stage,
					stage,
					stage,
				),
			)
		}
	}
}

// Secret returns the secret localKey names (STRIPE_WEBHOOK_SECRET,
// STRIPE_API_KEY or FORWARD_SECRET): outside Lambda the local-only
// variable's value when it is set (the local stack and tests), otherwise
// the SSM SecureString parameter its parameter variable names
// (STRIPE_WEBHOOK_SECRETS_PARAMETER, ...), read on first use. It reads
// nothing now. It returns nil when neither is set; required records that
// as a problem naming the parameter variable.
func (r *Reader) Secret(localKey string, required bool) *secrets.Secret {
	paramKey, ok := secretParameters[localKey]
	if !ok {
		r.errs = append(r.errs, fmt.Errorf("%s is not a secret's variable", localKey))
		return nil
	}
	if v := strings.TrimSpace(r.env(localKey)); v != "" && !r.inLambda() {
		return secrets.Fixed(localKey, v)
	}
	var name string
	if required {
		name = r.Required(paramKey)
	} else {
		name = r.Optional(paramKey, "")
	}
	if name == "" {
		return nil
	}
	return secrets.FromParameter(r.ssm, name)
}

// StripeAPIKey returns the Stripe API key (STRIPE_API_KEY locally, else the
// parameter STRIPE_API_KEY_PARAMETER names), as Secret does.
func (r *Reader) StripeAPIKey(required bool) *secrets.Secret {
	return r.Secret("STRIPE_API_KEY", required)
}

// StripeAPIBase returns STRIPE_API_BASE (empty when not set: Stripe's),
// recording check's refusal as a problem.
func (r *Reader) StripeAPIBase(check func(string) error) string {
	return r.Checked("STRIPE_API_BASE", "", check)
}

// MirrorKeepFields returns MIRROR_KEEP_FIELDS, the mirror's field allowlist
// as written (package mirror parses it), for the processor and the audit.
func (r *Reader) MirrorKeepFields() string { return r.Optional("MIRROR_KEEP_FIELDS", "") }

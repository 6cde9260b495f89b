package secrets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/pause"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/sdkhttp"
)

// Client makes the one Parameter Store call the functions make,
// GetParameter with decryption, by hand on the SDK's own parts: its
// credentials, its SigV4 signer, its standard retry policy, its endpoint
// variables, and the functions' HTTP client.
//
// Why not the SDK's ssm package: its package initialization (the schemas
// of SSM's 150 operations) ran at every cold start of every function,
// whether or not a secret was ever read, and was measured at 1.4 MB of
// allocations in 7,900 allocations, 57% of a function's whole package
// initialization, and 1.2 MB of each binary (make bench-coldstart reports
// init allocations and init time against hello world).
type Client struct {
	cfg     aws.Config
	retryer aws.Retryer
	signer  *v4.Signer
	now     func() time.Time
}

// NewClient returns a Client for cfg. It makes no network call.
func NewClient(cfg aws.Config) *Client {
	c := &Client{cfg: cfg, retryer: retry.NewStandard(), signer: v4.NewSigner(), now: time.Now}
	if cfg.Retryer != nil {
		c.retryer = cfg.Retryer()
	}
	if c.cfg.HTTPClient == nil {
		c.cfg.HTTPClient = sdkhttp.ReadOnlyBodies(sdkhttp.Client())
	}
	return c
}

// Parameter is a parameter as GetParameter returns it.
type Parameter struct {
	Name  string
	Type  string // String, StringList or SecureString
	Value string // decrypted
}

// APIError is Parameter Store's refusal of a request: its error code
// (ParameterNotFound, AccessDeniedException, ThrottlingException, ...) and
// message, and the HTTP status. It is a smithy.APIError, as the SDK's own
// service errors are, so errors.As finds it the same way.
type APIError struct {
	Code    string
	Message string
	Status  int
}

func (e *APIError) Error() string {
	return fmt.Sprintf("ssm: GetParameter: %s (HTTP %d): %s", e.Code, e.Status, e.Message)
}

// ErrorCode implements smithy.APIError.
func (e *APIError) ErrorCode() string { return e.Code }

// ErrorMessage implements smithy.APIError.
func (e *APIError) ErrorMessage() string { return e.Message }

// ErrorFault implements smithy.APIError.
func (e *APIError) ErrorFault() smithy.ErrorFault {
	if e.Status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// HTTPStatusCode lets the SDK's retry policy read the status.
func (e *APIError) HTTPStatusCode() int { return e.Status }

var _ smithy.APIError = (*APIError)(nil)

// maxAnswer bounds what is read of an answer: a parameter holds at most
// 8 KB (advanced tier).
const maxAnswer = 1 << 20

// GetParameter returns parameter name, decrypted, retrying as the SDK's
// standard retryer says (throttling, 5xx, connection errors).
func (c *Client) GetParameter(ctx context.Context, name string) (Parameter, error) {
	body, err := json.Marshal(struct {
		Name           string
		WithDecryption bool
	}{name, true})
	if err != nil {
		return Parameter{}, err
	}
	for attempt := 1; ; attempt++ {
		p, err := c.call(ctx, body)
		if err == nil || attempt >= c.retryer.MaxAttempts() || !c.retryer.IsErrorRetryable(err) {
			return p, err
		}
		delay, derr := c.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return p, err
		}
		if werr := pause.For(ctx, delay); werr != nil {
			return Parameter{}, fmt.Errorf("%w (after %v)", werr, err)
		}
	}
}

func (c *Client) call(ctx context.Context, body []byte) (Parameter, error) {
	endpoint, err := c.endpoint(ctx)
	if err != nil {
		return Parameter{}, err
	}
	if c.cfg.Credentials == nil {
		return Parameter{}, errors.New("ssm: no credentials")
	}
	creds, err := c.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return Parameter{}, fmt.Errorf("ssm: credentials: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return Parameter{}, fmt.Errorf("ssm: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "AmazonSSM.GetParameter")
	sum := sha256.Sum256(body)
	if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "ssm", c.cfg.Region, c.now()); err != nil {
		return Parameter{}, fmt.Errorf("ssm: sign: %w", err)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return Parameter{}, fmt.Errorf("ssm: GetParameter: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return Parameter{}, fmt.Errorf("ssm: GetParameter: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Parameter{}, apiError(resp, answer)
	}
	var out struct {
		Parameter *Parameter
	}
	if err := json.Unmarshal(answer, &out); err != nil || out.Parameter == nil {
		return Parameter{}, fmt.Errorf("ssm: GetParameter: an answer without a parameter (%d bytes)", len(answer))
	}
	return *out.Parameter, nil
}

// apiError decodes an awsJson1_1 error: its type in the body's __type (or
// the X-Amzn-ErrorType header), maybe prefixed with a namespace and a '#'.
func apiError(resp *http.Response, answer []byte) *APIError {
	var e struct {
		Type     string `json:"__type"`
		Message  string `json:"message"`
		MessageU string `json:"Message"`
	}
	_ = json.Unmarshal(answer, &e)
	code := e.Type
	if code == "" {
		code = resp.Header.Get("X-Amzn-ErrorType")
	}
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	code, _, _ = strings.Cut(code, ":")
	if code == "" {
		code = http.StatusText(resp.StatusCode)
	}
	msg := e.Message
	if msg == "" {
		msg = e.MessageU
	}
	return &APIError{Code: code, Message: msg, Status: resp.StatusCode}
}

// Options are the client options a configuration's ServiceOptions may set,
// as they set a service client's (every SDK client's options have a
// BaseEndpoint field).
type Options struct {
	BaseEndpoint *string
}

// serviceID is Parameter Store's service id, which ServiceOptions and the
// endpoint sources are asked with.
const serviceID = "SSM"

// endpoint is Parameter Store's endpoint, chosen by the rules the SDK's
// generated clients follow, in their order: the configuration's base
// endpoint (AWS_ENDPOINT_URL); then, unless the process sets
// AWS_ENDPOINT_URL without AWS_ENDPOINT_URL_SSM, the first service endpoint
// its sources give (AWS_ENDPOINT_URL_SSM, a profile's services section),
// none when a source says to ignore configured endpoints (inboxctl
// --stage); then its ServiceOptions; else
// https://ssm.<region>.<the region's partition's domain>. The domain
// comes from the SDK's partition table, read through DynamoDB's endpoint
// resolver (every function links DynamoDB): no table to keep here.
func (c *Client) endpoint(ctx context.Context) (string, error) {
	opts := Options{BaseEndpoint: c.cfg.BaseEndpoint}
	_, general := os.LookupEnv("AWS_ENDPOINT_URL")
	_, own := os.LookupEnv("AWS_ENDPOINT_URL_SSM")
	if !general || own {
		if v, found := serviceEndpoint(ctx, c.cfg.ConfigSources); found {
			opts.BaseEndpoint = aws.String(v)
		}
	}
	for _, fn := range c.cfg.ServiceOptions {
		fn(serviceID, &opts)
	}
	if v := aws.ToString(opts.BaseEndpoint); v != "" {
		return v, nil
	}
	if c.cfg.Region == "" {
		return "", errors.New("ssm: no region")
	}
	ep, err := dynamodb.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, dynamodb.EndpointParameters{Region: aws.String(c.cfg.Region)})
	if err != nil {
		return "", fmt.Errorf("ssm: endpoint for region %s: %w", c.cfg.Region, err)
	}
	domain, ok := strings.CutPrefix(ep.URI.Host, "dynamodb."+c.cfg.Region+".")
	if !ok || ep.URI.Scheme != "https" {
		return "", fmt.Errorf("ssm: no endpoint for region %s (set AWS_ENDPOINT_URL_SSM)", c.cfg.Region)
	}
	return (&url.URL{Scheme: "https", Host: "ssm." + c.cfg.Region + "." + domain, Path: "/"}).String(), nil
}

// serviceEndpoint asks the configuration's sources for Parameter Store's
// own endpoint as the SDK does: none when the first source with an opinion
// says to ignore configured endpoints, else the first found; a source's
// error ends the search with nothing found.
func serviceEndpoint(ctx context.Context, sources []any) (string, bool) {
	for _, src := range sources {
		if p, ok := src.(interface {
			GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error)
		}); ok {
			if ignore, found, err := p.GetIgnoreConfiguredEndpoints(ctx); err == nil && found {
				if ignore {
					return "", false
				}
				break
			}
		}
	}
	for _, src := range sources {
		if p, ok := src.(interface {
			GetServiceBaseEndpoint(context.Context, string) (string, bool, error)
		}); ok {
			v, found, err := p.GetServiceBaseEndpoint(ctx, serviceID)
			if err != nil {
				return "", false
			}
			if found {
				return v, true
			}
		}
	}
	return "", false
}

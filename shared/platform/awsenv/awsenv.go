package awsenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/sdkhttp"
)

// Load builds the functions' AWS configuration from the environment Lambda
// gives them: the region (AWS_REGION), the execution role's credentials
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, or the
// container credentials endpoint Lambda may give instead), and endpoints
// from the SDK's own variables (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_SSM, ...), never from code.
//
// It does not use the SDK's config package: that package links every way
// of finding credentials (profiles, SSO, web identity, IMDS, processes),
// none of which exists in Lambda, and costs each function about 0.6 MB
// zipped and its share of cold-start time (docs/performance.md). Tools run
// by people (inboxctl) load the full configuration instead
// (internal/awsconfig). Load makes no network call.
func Load(ctx context.Context) (aws.Config, error) {
	return from(os.Getenv)
}

func from(env func(string) string) (aws.Config, error) {
	get := func(k string) string { return strings.TrimSpace(env(k)) }
	cfg := aws.Config{
		Region:        cmp.Or(get("AWS_REGION"), get("AWS_DEFAULT_REGION")),
		HTTPClient:    sdkhttp.ReadOnlyBodies(sdkhttp.Client()),
		ConfigSources: []any{serviceEndpoints(get)},
	}
	var errs []error
	if cfg.Region == "" {
		errs = append(errs, errors.New("AWS_REGION is not set"))
	}
	creds, err := envCredentials(get)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.Credentials = creds
	if !ignoreEndpoints(get) {
		if u := get("AWS_ENDPOINT_URL"); u != "" {
			cfg.BaseEndpoint = aws.String(u)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return aws.Config{}, fmt.Errorf("awsenv: AWS configuration: %w", err)
	}
	return cfg, nil
}

// envCredentials returns the execution role's credentials: from the
// environment's keys, else from the container credentials endpoint.
func envCredentials(get func(string) string) (aws.CredentialsProvider, error) {
	if id, secret := get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY"); id != "" || secret != "" {
		if id == "" || secret == "" {
			return nil, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together")
		}
		p := credentials.NewStaticCredentialsProvider(id, secret, get("AWS_SESSION_TOKEN"))
		p.Value.Source = "environment"
		return aws.NewCredentialsCache(p), nil
	}
	endpoint := get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
	if rel := get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); endpoint == "" && rel != "" {
		endpoint = "http://169.254.170.2" + rel
	}
	if endpoint == "" {
		return nil, errors.New("no AWS credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " +
			"or AWS_CONTAINER_CREDENTIALS_FULL_URI): Lambda sets them for the execution role")
	}
	return aws.NewCredentialsCache(endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
		o.AuthorizationTokenProvider = endpointcreds.TokenProviderFunc(func() (string, error) {
			if file := get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); file != "" {
				b, err := os.ReadFile(file)
				return strings.TrimSpace(string(b)), err
			}
			return get("AWS_CONTAINER_AUTHORIZATION_TOKEN"), nil
		})
	})), nil
}

func ignoreEndpoints(get func(string) string) bool {
	return strings.EqualFold(get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"), "true")
}

// serviceEndpoints answers the service clients' question for a
// service-specific endpoint (AWS_ENDPOINT_URL_<SERVICE ID>), as the SDK's
// own environment configuration does.
type serviceEndpoints func(string) string

func (get serviceEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	if ignoreEndpoints(get) {
		return "", false, nil
	}
	v := get("AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_")))
	return v, v != "", nil
}

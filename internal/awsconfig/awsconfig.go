// Package awsconfig loads the SDK's full AWS configuration (profiles, SSO,
// AWS_CA_BUNDLE, ...) for tools people run and for tests, with the
// functions' HTTP client (package sdkhttp). The functions themselves use
// awsenv.Load, which reads only what Lambda provides: the two stay apart
// because the SDK's config package would link every credential source
// (SSO, STS, IMDS, ...) into each function.
package awsconfig

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/sdkhttp"
)

// Load loads the configuration with sdkhttp.Client, then wraps the client
// in sdkhttp.ReadOnlyBodies. The wrap happens after loading because the SDK's
// own settings (AWS_CA_BUNDLE) need the *awshttp.BuildableClient itself.
func Load(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	opts := append([]func(*config.LoadOptions) error{config.WithHTTPClient(sdkhttp.Client())}, optFns...)
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, err
	}
	cfg.HTTPClient = sdkhttp.ReadOnlyBodies(cfg.HTTPClient)
	return cfg, nil
}

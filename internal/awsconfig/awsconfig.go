// Package awsconfig loads the SDK's full AWS configuration (profiles, SSO,
// AWS_CA_BUNDLE, ...) for tools people run and for tests, with the
// functions' HTTP client. The functions themselves use boot.AWS, which
// reads only what Lambda provides.
package awsconfig

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
)

// Load loads the configuration with boot.HTTPClient, then wraps the client
// in boot.ReadOnlyBodies. The wrap happens after loading because the SDK's
// own settings (AWS_CA_BUNDLE) need the *awshttp.BuildableClient itself.
func Load(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	opts := append([]func(*config.LoadOptions) error{config.WithHTTPClient(boot.HTTPClient())}, optFns...)
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, err
	}
	cfg.HTTPClient = boot.ReadOnlyBodies(cfg.HTTPClient)
	return cfg, nil
}

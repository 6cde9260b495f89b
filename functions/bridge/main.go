// Command bridge is the Lambda function behind the ingress queue of
// Stripe's Amazon EventBridge destination. It holds wiring only; the logic
// lives in shared/stripe/bridge.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/bridgeboot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/awsenv"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/version"
)

func main() {
	ctx := context.Background()
	logger := lambdacontext.NewLogger()
	cfg, err := awsenv.Load(ctx)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	// The team's effects say which types are handled, as for the
	// receiver: the same allowlist the stack's rule routes.
	c, err := bridgeboot.ConfigFromEnv(boot.OSEnv, cfg)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	h, err := bridgeboot.New(ctx, c, cfg, logger, hooks.Registry())
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	logger.Info("cold start", slog.String("version", version.Version))
	lambda.Start(h.Handle)
}

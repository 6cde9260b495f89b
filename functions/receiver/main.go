// Command receiver is the Lambda function behind POST /webhooks/stripe. It
// holds wiring only; the logic lives in shared/pipeline/receiver.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/receiverboot"
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
	// The team's own effects are registered in shared/pipeline/hooks; every
	// function gets them the same way.
	c, err := receiverboot.ConfigFromEnv(boot.OSEnv, cfg)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	h, err := receiverboot.New(ctx, c, cfg, logger, hooks.Registry())
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	// One line per execution environment: which release is running.
	logger.Info("cold start", slog.String("version", version.Version))
	lambda.Start(h.Handle)
}

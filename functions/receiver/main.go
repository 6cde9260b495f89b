// Command receiver is the Lambda function behind POST /webhooks/stripe. It
// holds wiring only; the logic lives in shared/receiver.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
)

func main() {
	ctx := context.Background()
	logger := lambdacontext.NewLogger()
	cfg, err := boot.AWS(ctx)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	h, err := boot.Receiver(ctx, boot.OSEnv, cfg, logger)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// Command processor is the Lambda function that consumes the webhook queue.
// It holds wiring only; the logic lives in shared/processor.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/effect"
)

func main() {
	ctx := context.Background()
	logger := lambdacontext.NewLogger()
	cfg, err := boot.AWS(ctx)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	// Register your own effects here, for example:
	//   effects.On(effect.Func{HandlerName: "provision", Fn: provision}, "invoice.paid")
	// Each runs once per event and gets a stable idempotency key.
	effects := &effect.Registry{}
	p, err := boot.Processor(ctx, boot.OSEnv, cfg, logger, effects)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(p.Handle)
}

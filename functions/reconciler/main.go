// Command reconciler is the Lambda function EventBridge Scheduler invokes
// on the template's ReconcileRate. It holds wiring only; the logic lives in
// shared/reconcile.
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
	r, err := boot.Reconciler(ctx, boot.OSEnv, cfg, logger)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	// The schedule's payload (its Input, by default none) is a
	// json.RawMessage: reconcile.Input reads an optional "since".
	lambda.Start(r.Handle)
}

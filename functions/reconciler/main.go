// Command reconciler is the Lambda function EventBridge Scheduler invokes
// on the template's ReconcileRate, and
// with {"run":"audit"} on its AuditRate. It holds wiring only; the logic lives in
// shared/pipeline/reconcile.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/boot/reconcilerboot"
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
	effects := hooks.Registry()
	c, err := reconcilerboot.ConfigFromEnv(boot.OSEnv, cfg)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	r, err := reconcilerboot.New(ctx, c, cfg, logger, effects)
	if err != nil {
		logger.Error("cold start failed", slog.String("error", err.Error()))
		os.Exit(1)
	}
	// One line per execution environment: which release is running.
	logger.Info("cold start", slog.String("version", version.Version))
	// The schedule's payload (its Input, by default none) is a
	// json.RawMessage: reconcile.Input reads an optional "since"; the
	// Audit schedule's {"run":"audit"} runs the audit instead.
	// The audit reads its configuration at its first run.
	lambda.Start(reconcilerboot.Handler(reconcilerboot.AuditFromEnv(boot.OSEnv, cfg, effects), cfg, logger, r, effects))
}

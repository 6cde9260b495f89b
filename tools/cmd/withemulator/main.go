// Command withemulator runs a command with the AWS emulators up, and stops
// them when the command ends, whatever its exit.
//
// By default it starts moto (unless AWS_ENDPOINT_URL already names an
// endpoint) and exports AWS_ENDPOINT_URL. With -localstack it starts
// LocalStack (from .venv-localstack, without Docker) for SQS, SSM and
// CloudFormation and moto for DynamoDB, and exports AWS_ENDPOINT_URL at
// LocalStack and AWS_ENDPOINT_URL_DYNAMODB at moto, whatever the
// environment said; if LocalStack does not come up, it fails. It also
// exports test credentials and a region unless set.
//
//	go run ./tools/cmd/withemulator -- go test ./...
//	go run ./tools/cmd/withemulator -localstack -- go test ./e2e/...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
)

func main() {
	os.Exit(run())
}

func run() int {
	localstack := flag.Bool("localstack", false, "run SQS, SSM and CloudFormation on LocalStack and DynamoDB on moto")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: withemulator [-localstack] -- command [args...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var endpoints emulator.Endpoints
	if *localstack {
		start := time.Now()
		ls, err := emulator.StartLocalStack(ctx, emulator.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "withemulator:", err)
			return 1
		}
		defer ls.Stop()
		moto, err := emulator.Start(ctx, emulator.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "withemulator:", err)
			return 1
		}
		defer moto.Stop()
		endpoints = emulator.Endpoints{URL: ls.URL, Services: map[string]string{"DYNAMODB": moto.URL}}
		fmt.Fprintf(os.Stderr, "withemulator: LocalStack on %s (pid %d, up in %s), moto on %s for DynamoDB (pid %d)\n",
			ls.URL, ls.PID(), time.Since(start).Round(100*time.Millisecond), moto.URL, moto.PID())
	} else {
		emu, err := emulator.FromEnv(ctx, emulator.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "withemulator:", err)
			return 1
		}
		defer emu.Stop()
		if emu.Started() {
			fmt.Fprintf(os.Stderr, "withemulator: moto on %s (pid %d)\n", emu.URL, emu.PID())
		}
		endpoints = emu.Endpoints
	}

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = endpoints.Environ(os.Environ())
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		if os.Getenv(k) == "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "withemulator:", err)
		return 1
	}
	return 0
}

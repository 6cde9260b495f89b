// Command withemulator runs a command with the AWS emulator up: it starts moto
// (unless AWS_ENDPOINT_URL already names an endpoint), exports
// AWS_ENDPOINT_URL and test credentials to the command, and stops the
// emulator when the command ends, whatever its exit.
//
//	go run ./tools/withemulator -- go test ./...
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/webhook-inbox/webhook-inbox/tools/emulator"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withemulator -- command [args...]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	emu, err := emulator.FromEnv(ctx, emulator.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "withemulator:", err)
		os.Exit(1)
	}
	if emu.Started() {
		fmt.Fprintf(os.Stderr, "withemulator: moto on %s (pid %d)\n", emu.URL, emu.PID())
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+emu.URL)
	for k, v := range map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		if os.Getenv(k) == "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	err = cmd.Run()
	emu.Stop()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "withemulator:", err)
		os.Exit(1)
	}
}

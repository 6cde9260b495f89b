// Command initclock starts a function's bootstrap for the cold-start
// benchmark, so that its init can be timed from the moment its process
// starts: it writes the time (Unix nanoseconds) and its process id (which
// the exec keeps) to INITCLOCK_FILE, points
// AWS_LAMBDA_RUNTIME_API at INITCLOCK_RUNTIME_API (the benchmark's proxy in
// front of the runtime emulator, which sees the first /next request), and
// replaces itself with INITCLOCK_EXEC. The runtime emulator sets
// AWS_LAMBDA_RUNTIME_API itself, so only a process between it and the
// bootstrap can redirect the runtime API. Its own start is not counted: the
// clock is read right before the exec.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	target, api, file := os.Getenv("INITCLOCK_EXEC"), os.Getenv("INITCLOCK_RUNTIME_API"), os.Getenv("INITCLOCK_FILE")
	if target == "" || api == "" || file == "" {
		fmt.Fprintln(os.Stderr, "initclock: INITCLOCK_EXEC, INITCLOCK_RUNTIME_API and INITCLOCK_FILE must be set")
		os.Exit(2)
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "INITCLOCK_") || strings.HasPrefix(kv, "AWS_LAMBDA_RUNTIME_API=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AWS_LAMBDA_RUNTIME_API="+api)
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "initclock:", err)
		os.Exit(2)
	}
	_, err = f.WriteString(strconv.FormatInt(time.Now().UnixNano(), 10) + " " + strconv.Itoa(os.Getpid()))
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = syscall.Exec(target, []string{target}, env)
	}
	fmt.Fprintln(os.Stderr, "initclock:", err)
	os.Exit(2)
}

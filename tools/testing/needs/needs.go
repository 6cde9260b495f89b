// Package needs is how a test says what it needs beyond Go and this
// repository: the AWS emulator (moto, which runs on Python, or LocalStack),
// Python itself, or the Lambda runtime interface emulator.
//
// Under `go test -short` a test that needs one is skipped, and its skip
// says what it needs; that is the fast path, every other test, with no
// emulator and no Python (docs/development.md). Without -short nothing
// here skips: the test goes on, starts what it needs or fails saying how
// to get it, so `make test` and CI run every test and never pass one by
// skipping it.
//
// The finders enforce it: the emulator package refuses to start moto or
// LocalStack under -short (Short), so a test that needs one and does not
// say so fails the fast path instead of quietly needing Python.
package needs

import (
	"flag"
	"testing"
)

// Emulator marks a test that needs the AWS emulator (moto in server mode,
// or LocalStack).
func Emulator(t testing.TB) {
	t.Helper()
	skip(t, Short(), "the AWS emulator (moto, on Python, or LocalStack)")
}

// Python marks a test that runs a Python interpreter.
func Python(t testing.TB) {
	t.Helper()
	skip(t, Short(), "Python")
}

// LambdaRuntime marks a test that runs the real bootstrap binaries under
// the Lambda runtime interface emulator (make rie).
func LambdaRuntime(t testing.TB) {
	t.Helper()
	skip(t, Short(), "the Lambda runtime interface emulator and the AWS emulator")
}

// Short reports whether this process is a test binary run with -short. It
// reads the flag rather than calling testing.Short, which panics outside a
// test binary: the emulator package, which a command links too, asks it.
func Short() bool {
	if !testing.Testing() {
		return false
	}
	f := flag.Lookup("test.short")
	return f != nil && f.Value.String() == "true"
}

// skip skips t when short, naming what it needs, and does nothing
// otherwise.
func skip(t testing.TB, short bool, what string) {
	t.Helper()
	if short {
		t.Skipf("needs %s: skipped under -short; make test runs it", what)
	}
}

// StripeMock marks a test that runs stripe-mock, Stripe's API mock (make
// stripe-mock), to check the requests the inbox sends Stripe.
func StripeMock(t testing.TB) {
	t.Helper()
	skip(t, Short(), "stripe-mock, Stripe's API mock (make stripe-mock)")
}

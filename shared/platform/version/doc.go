// Package version is webhook-inbox's version: one constant, which
// `inboxctl version` prints and each function writes on its cold-start log
// line, so a log line, a deployed function and the operator's inboxctl can
// be matched to a CHANGELOG.md entry. Its test holds the constant to the
// newest release CHANGELOG.md names.
//
// It is a constant, not a value stamped by the linker: sam build, make
// build, go run and go test all see the same value without a flag each of
// them would have to pass.
package version

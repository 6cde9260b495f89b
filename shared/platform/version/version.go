package version

import "runtime"

// Version is the release this code is, as CHANGELOG.md names it (its
// preamble says how the numbers are chosen).
const Version = "0.21.0"

// String is the version with the Go release and platform it was built
// with, as `inboxctl version` prints it.
func String() string {
	return Version + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}

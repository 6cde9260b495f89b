//go:build race

package needs

// raceEnabled: this test binary was built with -race, so the fast path it
// runs is built the same way and shares its compiled packages.
const raceEnabled = true

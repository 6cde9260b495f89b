//go:build !race

package needs

const raceEnabled = false

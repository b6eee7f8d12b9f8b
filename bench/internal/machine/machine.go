// Package machine reads what the benchmarks under bench/ print about the
// machine they ran on.
package machine

import (
	"os"
	"strings"
)

// LoadAvg returns the 1-, 5- and 15-minute load averages of
// /proc/loadavg as "a b c", or "?" where it cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

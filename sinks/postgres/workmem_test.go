package postgres

import "testing"

// TestWorkMemSQL: work_mem follows the window's log rows at 256 bytes
// each, between 64MB and 1GB.
func TestWorkMemSQL(t *testing.T) {
	for _, c := range []struct {
		rows int64
		want string
	}{
		{0, "SET LOCAL work_mem = '65536kB'"},          // unknown: 64MB
		{1000, "SET LOCAL work_mem = '65536kB'"},       // 256kB, raised to 64MB
		{1_000_000, "SET LOCAL work_mem = '250000kB'"}, // 256,000,000 bytes
		{2_000_000, "SET LOCAL work_mem = '500000kB'"},
		{100_000_000, "SET LOCAL work_mem = '1048576kB'"}, // capped at 1GB
	} {
		if got := WorkMemSQL(c.rows); got != c.want {
			t.Errorf("WorkMemSQL(%d) = %q, want %q", c.rows, got, c.want)
		}
	}
}

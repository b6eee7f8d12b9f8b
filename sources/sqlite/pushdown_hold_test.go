package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// TestAdaptiveHold: the hold goes back to the base whenever another
// connection wrote between two steps, and doubles up to maxHoldFactor ×
// base while none does.
func TestAdaptiveHold(t *testing.T) {
	const base = 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		cur   time.Duration
		other bool
		want  time.Duration
	}{
		{"quiet doubles", base, false, 2 * base},
		{"quiet keeps doubling", 4 * base, false, 8 * base},
		{"quiet stops at the cap", 8 * base, false, 10 * base},
		{"at the cap stays", 10 * base, false, 10 * base},
		{"a writer resets from the cap", 10 * base, true, base},
		{"a writer keeps the base", base, true, base},
		{"one transaction (negative base) is left alone", -time.Second, false, -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			if tc.cur < 0 {
				b = tc.cur
			}
			if got := adaptiveHold(tc.cur, b, tc.other); got != tc.want {
				t.Errorf("adaptiveHold(%s, %s, %v) = %s, want %s", tc.cur, b, tc.other, got, tc.want)
			}
		})
	}
}

// TestDataVersionSeesOtherWriters: dataVersion moves when another
// connection commits to the file and not when the connection itself does,
// which is what adaptiveHold's "another writer" relies on.
func TestDataVersionSeesOtherWriters(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "dv.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	exec := func(c *sql.Conn, q string) {
		t.Helper()
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	version := func() int64 {
		t.Helper()
		v, err := dataVersion(context.WithoutCancel(ctx), conn)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	exec(conn, "CREATE TABLE t (x)")
	v0 := version()
	exec(conn, "INSERT INTO t VALUES (1)")
	if v := version(); v != v0 {
		t.Fatalf("data_version moved from %d to %d on the connection's own commit", v0, v)
	}
	exec(other, "INSERT INTO t VALUES (2)")
	if v := version(); v == v0 {
		t.Fatalf("data_version stayed %d after another connection committed", v)
	}
}

package sqlitex

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

// TestIsValueError: errors of the values written are value errors; a full
// disk and a read-only file, as the driver reports them, are not.
func TestIsValueError(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "v.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // max_page_count is a setting of the connection
	for _, q := range []string{"CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)", "CREATE TABLE s (k INTEGER, b BLOB) STRICT"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(q string) error {
		_, err := db.ExecContext(ctx, q)
		if err == nil {
			t.Fatalf("%s: no error", q)
		}
		return fmt.Errorf("write: %w", err)
	}
	ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, roErr := ro.ExecContext(ctx, "INSERT INTO t VALUES (9, 'x')")
	if roErr == nil {
		t.Fatal("read-only connection wrote")
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"not null", exec("INSERT INTO t VALUES (1, NULL)"), true},
		{"strict type", exec("INSERT INTO s VALUES ('one', x'00')"), true},
		{"not a sqlite error", errors.New("value out of range"), true},
		{"read-only", roErr, false},
	}
	if _, err := db.ExecContext(ctx, "PRAGMA max_page_count = 4"); err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct {
		name string
		err  error
		want bool
	}{"disk full", exec("INSERT INTO s VALUES (2, zeroblob(100000))"), false})
	for _, c := range cases {
		if got := IsValueError(c.err); got != c.want {
			t.Errorf("%s: IsValueError(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestDiscardIfCannotWrite: a connection that failed to write a read-only
// database is dropped from the pool (it would fail the same way forever),
// and one that found the write lock busy is kept.
func TestDiscardIfCannotWrite(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "b.db")
	rw, err := Open(ctx, Location{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.ExecContext(ctx, "CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	conn, err := ro.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(ctx, "INSERT INTO t VALUES (1)")
	if err == nil {
		t.Fatal("a read-only connection wrote")
	}
	DiscardIfCannotWrite(conn, err)
	conn.Close()
	if n := ro.Stats().OpenConnections; n != 0 {
		t.Errorf("%d connections open after a read-only write failed, want 0 (dropped)", n)
	}

	busy, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	holder, err := BeginImmediate(ctx, rw)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	c2, err := busy.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := Begin(ctx, c2); err == nil {
		t.Fatal("BEGIN IMMEDIATE took a held write lock")
	}
	c2.Close()
	if n := busy.Stats().OpenConnections; n != 1 {
		t.Errorf("%d connections open after a busy BEGIN, want 1 (kept)", n)
	}
}

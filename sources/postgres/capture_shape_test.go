package postgres

import (
	"context"
	"strconv"
	"testing"

	"github.com/sluicedata/sluice/dsl"
)

// TestCaptureShapeFollowsDDLInSession: the capture function's shape
// check is folded into the plan PL/pgSQL caches for a writer's session
// (shapeCheck), so that plan must be planned again after every change
// of the table's columns — made by another session, made earlier in the
// writer's own transaction, or rolled back. One writer session stays open
// throughout; after each of its statements, the path the capture took is
// read from the log (typed columns, or the row as JSON in __extra) and
// compared with the path the table's columns call for at that moment:
// typed exactly while they are the ones tracking was enabled with.
func TestCaptureShapeFollowsDDLInSession(t *testing.T) {
	b, u := openDB(t)
	ctx := context.Background()
	sqlExec(t, b, `CREATE TABLE t (id int PRIMARY KEY, v text)`)
	track(t, b, "t")
	mkStream(t, b, "s", "t", dsl.ModeStandard, false)
	w := connect(ctx, t, u)
	id := 0
	// write inserts one row through w and reports whether the capture
	// logged it as JSON.
	write := func() bool {
		t.Helper()
		id++
		if _, err := w.Exec(ctx, `INSERT INTO t (id) VALUES ($1)`, id); err != nil {
			t.Fatalf("insert %d: %v", id, err)
		}
		var json bool
		if err := w.QueryRow(ctx, `SELECT __extra IS NOT NULL FROM sluice.log_t ORDER BY __seq DESC LIMIT 1`).Scan(&json); err != nil {
			t.Fatal(err)
		}
		return json
	}
	wexec := func(sql string) {
		t.Helper()
		if _, err := w.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	steps := []struct {
		name string
		ddl  string // by another session before the write ("" none)
		json bool
	}{
		{"as enabled", "", false},
		{"again (plan cached)", "", false},
		{"column added", `ALTER TABLE t ADD COLUMN x int`, true},
		{"added column dropped", `ALTER TABLE t DROP COLUMN x`, false},
		{"column renamed", `ALTER TABLE t RENAME COLUMN v TO v2`, true},
		{"renamed back", `ALTER TABLE t RENAME COLUMN v2 TO v`, false},
		{"type modifier only", `ALTER TABLE t ALTER COLUMN v TYPE varchar(10)`, true},
		{"type back", `ALTER TABLE t ALTER COLUMN v TYPE text`, false},
	}
	for _, s := range steps {
		if s.ddl != "" {
			sqlExec(t, b, s.ddl)
		}
		if got := write(); got != s.json {
			t.Errorf("%s: logged as JSON %v, want %v", s.name, got, s.json)
		}
	}
	// In the writer's own transaction: typed, then JSON after its DDL,
	// typed again after the rollback.
	wexec(`BEGIN`)
	if write() {
		t.Error("in transaction, before its DDL: logged as JSON")
	}
	wexec(`ALTER TABLE t RENAME COLUMN v TO v3`)
	if !write() {
		t.Error("in transaction, after its rename: logged typed")
	}
	wexec(`ROLLBACK`)
	id -= 2
	if write() {
		t.Error("after the rollback: logged as JSON")
	}
	// Every committed row reaches the stream.
	_, got := read(t, b, "s", true)
	var want []string
	for i := 1; i <= id; i++ {
		want = append(want, "INSERT "+strconv.Itoa(i)+" NULL")
	}
	check(t, "stream", sorted(got), sorted(want))
}

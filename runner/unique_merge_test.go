package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// uniqueWindow are the source's transactions of one window (each keeps
// UNIQUE(email) and UNIQUE(rank) true at its commit): two keys swap
// emails, a range of ranks shifts by one, keys 20–24 shift to 21–25 (each
// email moves to the next key), and an email moves from a deleted key to
// a new one. Statements run in an order a per-row check accepts, so they
// work on SQLite and PostgreSQL sources alike.
var uniqueWindow = []string{
	"UPDATE us SET email = 'tmp' WHERE id = 1; UPDATE us SET email = 'a' WHERE id = 2; UPDATE us SET email = 'b' WHERE id = 1;",
	"UPDATE us SET rank = 100 WHERE id = 14; UPDATE us SET rank = 5 WHERE id = 13; UPDATE us SET rank = 4 WHERE id = 12; UPDATE us SET rank = 3 WHERE id = 11; UPDATE us SET rank = 2 WHERE id = 10; UPDATE us SET rank = 6 WHERE id = 14;",
	"UPDATE us SET id = 25 WHERE id = 24; UPDATE us SET id = 24 WHERE id = 23; UPDATE us SET id = 23 WHERE id = 22; UPDATE us SET id = 22 WHERE id = 21; UPDATE us SET id = 21 WHERE id = 20;",
	"DELETE FROM us WHERE id = 30; INSERT INTO us VALUES (31, 'moved', 31);",
}

const uniqueSeed = `INSERT INTO us VALUES (1, 'a', 1001), (2, 'b', 1002), (10, 'r10', 1), (11, 'r11', 2), (12, 'r12', 3), (13, 'r13', 4), (14, 'r14', 5),
(20, 'k20', 20), (21, 'k21', 21), (22, 'k22', 22), (23, 'k23', 23), (24, 'k24', 24), (30, 'moved', 30);`

const uniqueTable = "CREATE TABLE %s (id INT, email STRING, rank INT, PRIMARY KEY (id))"

// uniqueTarget is a target with the source's secondary UNIQUE constraints
// (not DEFERRABLE: checked at each row).
func uniqueTarget(pg bool, name string) string {
	if pg {
		return fmt.Sprintf("CREATE TABLE %s (id integer PRIMARY KEY, email text UNIQUE, rank integer UNIQUE)", name)
	}
	return fmt.Sprintf("CREATE TABLE %s (id INTEGER PRIMARY KEY, email TEXT UNIQUE, rank INTEGER UNIQUE)", name)
}

// TestMergeNoIntermediateStateBlocks applies windows whose net changes
// pass through states that violate a target's UNIQUE constraint (swapped
// emails, shifted ranks, shifted keys, an email moved to a new key) on
// every path: pushed down on PostgreSQL and SQLite, PostgreSQL →
// PostgreSQL (batches of two rows: the swap spans batches), PostgreSQL →
// SQLite and SQLite → PostgreSQL. Each target must equal its source after
// each run. A violation the source does not have (the target holds a row
// the source does not) still fails the run and moves nothing.
func TestMergeNoIntermediateStateBlocks(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	lite := "" // the env's default SQLite database
	liteSink := e.conn("sink.db")
	pgExec(t, pg, "CREATE TABLE us (id integer PRIMARY KEY, email text UNIQUE, rank integer UNIQUE);"+uniqueTarget(true, "t_push"))
	pgExec(t, other, uniqueTarget(true, "t_pg")+";"+uniqueTarget(true, "t_back"))
	e.sql(lite, fmt.Sprintf(uniqueTable, "us"))
	// SQLite: the UNIQUE constraints on the source too (native DDL).
	db := openSQLite(t, e.conn("src.db"))
	if _, err := db.Exec("CREATE UNIQUE INDEX us_email ON us (email); CREATE UNIQUE INDEX us_rank ON us (rank); " + uniqueTarget(false, "t_push")); err != nil {
		t.Fatal(err)
	}
	if _, err := openSQLite(t, liteSink).Exec(uniqueTarget(false, "t_lite")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{pg, lite} {
		e.sql(c, `ALTER TABLE us SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s1 ON TABLE us WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s2 ON TABLE us WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s3 ON TABLE us WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	}
	pgExec(t, pg, uniqueSeed)
	e.sql(lite, uniqueSeed)

	type path struct{ name, job, srcConn, dst, table string }
	paths := []path{
		{"postgres pushdown", "connection: '" + pg + "'\nsource: s1\nsink: {table: t_push, mode: merge, keys: [id]}\n", pg, pg, "t_push"},
		{"postgres → postgres", "connection: '" + pg + "'\nsource: s2\nsink: {table: t_pg, mode: merge, keys: [id], connection: '" + other + "'}\n", pg, other, "t_pg"},
		{"postgres → sqlite", "connection: '" + pg + "'\nsource: s3\nsink: {table: t_lite, mode: merge, keys: [id], connection: '" + liteSink + "'}\n", pg, liteSink, "t_lite"},
		{"sqlite pushdown", "source: s1\nsink: {table: t_push, mode: merge, keys: [id]}\n", lite, lite, "t_push"},
		{"sqlite → postgres", "source: s2\nsink: {table: t_back, mode: merge, keys: [id], connection: '" + other + "'}\n", lite, other, "t_back"},
	}
	check := func(round string) {
		t.Helper()
		for i, p := range paths {
			j := e.job(fmt.Sprintf("u%d.yaml", i), p.job)
			if _, err := e.run(j); err != nil {
				t.Errorf("%s, %s: %v", round, p.name, err)
				continue
			}
			want := e.sql(p.srcConn, "SELECT id, email, rank FROM us ORDER BY id")
			got := e.sql(p.dst, "SELECT id, email, rank FROM "+p.table+" ORDER BY id")
			if !equalRows(got, want) {
				t.Errorf("%s, %s: target %v, want the source's %v", round, p.name, got, want)
			}
		}
	}
	check("initial rows")
	for _, tx := range uniqueWindow {
		pgExec(t, pg, "BEGIN; "+tx+" COMMIT;")
		e.sql(lite, tx)
	}
	check("window")

	// A violation of the data: the target holds an email the source
	// gives to a new key. The run fails, naming the constraint, and
	// nothing moves.
	pgExec(t, pg, "INSERT INTO t_push VALUES (99, 'only-in-target', 99)")
	pgExec(t, pg, "INSERT INTO us VALUES (40, 'only-in-target', 40)")
	_, err := e.run(e.job("u0.yaml", paths[0].job))
	if err == nil || !strings.Contains(err.Error(), "t_push_email_key") {
		t.Fatalf("run onto a target that breaks the constraint: %v, want the unique violation", err)
	}
	if got := e.sql(pg, "SELECT count(*) FROM t_push WHERE id = 40"); !equalRows(got, [][]string{{"0"}}) {
		t.Errorf("key 40 was written by the failed run: %v", got)
	}
}

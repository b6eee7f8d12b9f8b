package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// sqlMergeJob is a job in the SQL dialect with its own MERGE clauses (the
// issue's): src is the source connection, sink the sink's ("" for the
// source's: pushed down), dl a dead-letter table ("" for none).
func sqlMergeJob(name, src, sink, dl, stream, table string) string {
	var h strings.Builder
	fmt.Fprintf(&h, "-- name: %s\n-- connection: %s\n", name, src)
	if sink != "" {
		fmt.Fprintf(&h, "-- sink_connection: %s\n", sink)
	}
	if dl != "" {
		fmt.Fprintf(&h, "-- dead_letter: %s\n", dl)
	}
	fmt.Fprintf(&h, "MERGE INTO %s AS t USING (SELECT `__change_type`, id, email, rank FROM %s WHERE `__change_type` IN ('INSERT', 'UPDATE_AFTER', 'DELETE')) AS s ON t.id = s.id\n", table, stream)
	h.WriteString("WHEN MATCHED AND s.`__change_type` = 'DELETE' THEN DELETE\n")
	h.WriteString("WHEN MATCHED THEN UPDATE SET t.email = s.email, t.rank = s.rank\n")
	h.WriteString("WHEN NOT MATCHED AND s.`__change_type` <> 'DELETE' THEN INSERT (id, email, rank) VALUES (s.id, s.email, s.rank);\n")
	return h.String()
}

// TestSQLMergeNoIntermediateStateBlocks: a SQL MERGE job (its own WHEN
// clauses) applies windows whose rows pass through states that violate
// the target's UNIQUE constraints (swapped emails, shifted ranks, keys
// 20–24 shifted to 21–25, an email moved from a deleted key to a new one:
// uniqueWindow) on every path — pushed down on PostgreSQL and SQLite,
// PostgreSQL → PostgreSQL, PostgreSQL → SQLite, SQLite → another SQLite
// file — with and without a dead-letter table: each target equals its
// source after each run, and nothing is dead-lettered. Then a violation
// of the data (the target holds an email the source gives to a new key,
// in a window that swaps two emails again): without a dead-letter table
// the run fails naming the value and both rows and moves nothing; with
// one, that row is dead-lettered and the swap goes in.
func TestSQLMergeNoIntermediateStateBlocks(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	lite, liteSink := e.conn("src.db"), e.conn("sink.db")
	pgExec(t, pg, "CREATE TABLE us (id integer PRIMARY KEY, email text UNIQUE, rank integer UNIQUE);"+uniqueTarget(true, "m_push")+";"+uniqueTarget(true, "m_push_dl"))
	pgExec(t, other, uniqueTarget(true, "m_pg")+";"+uniqueTarget(true, "m_pg_dl"))
	e.sql(lite, fmt.Sprintf(uniqueTable, "us"))
	src := openSQLite(t, lite)
	if _, err := src.Exec("CREATE UNIQUE INDEX us_email ON us (email); CREATE UNIQUE INDEX us_rank ON us (rank); " +
		uniqueTarget(false, "m_push") + ";" + uniqueTarget(false, "m_push_dl")); err != nil {
		t.Fatal(err)
	}
	if _, err := openSQLite(t, liteSink).Exec(uniqueTarget(false, "m_lite") + ";" + uniqueTarget(false, "m_lite_dl") + ";" +
		uniqueTarget(false, "m_s2s") + ";" + uniqueTarget(false, "m_s2s_dl")); err != nil {
		t.Fatal(err)
	}
	type path struct {
		name, src, sink, dl, table string
	}
	paths := []path{
		{"postgres pushdown", pg, "", "", "m_push"},
		{"postgres pushdown, dead_letter", pg, "", "rejects", "m_push_dl"},
		{"postgres → postgres", pg, other, "", "m_pg"},
		{"postgres → postgres, dead_letter", pg, other, "rejects", "m_pg_dl"},
		{"postgres → sqlite", pg, liteSink, "", "m_lite"},
		{"postgres → sqlite, dead_letter", pg, liteSink, "rejects", "m_lite_dl"},
		{"sqlite pushdown", lite, "", "", "m_push"},
		{"sqlite pushdown, dead_letter", lite, "", "rejects", "m_push_dl"},
		{"sqlite → sqlite", lite, liteSink, "", "m_s2s"},
		{"sqlite → sqlite, dead_letter", lite, liteSink, "rejects", "m_s2s_dl"},
	}
	for _, c := range []string{pg, lite} {
		e.sql(c, "ALTER TABLE us SET PROPERTIES ('change_tracking' = 'true')")
	}
	for i, p := range paths {
		e.sql(p.src, fmt.Sprintf("CREATE TABLE STREAM s%d ON TABLE us WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE')", i))
	}
	pgExec(t, pg, uniqueSeed)
	e.sql(lite, uniqueSeed)

	dst := func(p path) string {
		if p.sink != "" {
			return p.sink
		}
		return p.src
	}
	job := func(i int, p path) string {
		return sqlMergeJob(fmt.Sprintf("m%d", i), p.src, p.sink, p.dl, fmt.Sprintf("s%d", i), p.table)
	}
	check := func(round string) {
		t.Helper()
		for i, p := range paths {
			res, err := e.run(e.job(fmt.Sprintf("m%d.sql", i), job(i, p)))
			if err != nil {
				t.Errorf("%s, %s: %v", round, p.name, err)
				continue
			}
			if res.Stats.DeadLettered != 0 {
				t.Errorf("%s, %s: dead-lettered %d, want 0", round, p.name, res.Stats.DeadLettered)
			}
			want := e.sql(p.src, "SELECT id, email, rank FROM us ORDER BY id")
			got := e.sql(dst(p), "SELECT id, email, rank FROM "+p.table+" ORDER BY id")
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

	// The data's violation: each target holds an email the source gives
	// to a new key 40; the same window swaps the emails of keys 1 and 2
	// again.
	for _, p := range paths {
		e.sql(dst(p), "INSERT INTO "+p.table+" VALUES (99, 'only-in-target', 99)")
	}
	swap := "UPDATE us SET email = 'tmp' WHERE id = 1; UPDATE us SET email = 'b' WHERE id = 2; UPDATE us SET email = 'a' WHERE id = 1; INSERT INTO us VALUES (40, 'only-in-target', 40);"
	pgExec(t, pg, "BEGIN; "+swap+" COMMIT;")
	e.sql(lite, swap)
	for i, p := range paths {
		before := e.sql(dst(p), "SELECT id, email, rank FROM "+p.table+" ORDER BY id")
		res, err := e.run(e.job(fmt.Sprintf("m%d.sql", i), job(i, p)))
		if p.dl == "" {
			if err == nil || !strings.Contains(err.Error(), "'only-in-target'") && !strings.Contains(err.Error(), "=(only-in-target)") ||
				!strings.Contains(err.Error(), "(id=40)") || !strings.Contains(err.Error(), "(id=99)") {
				t.Errorf("%s: run onto a target that breaks the constraint: %v, want the unique violation naming the value and keys 40 and 99", p.name, err)
			}
			if got := e.sql(dst(p), "SELECT id, email, rank FROM "+p.table+" ORDER BY id"); !equalRows(got, before) {
				t.Errorf("%s: the failed run wrote %v, want the target as it was, %v", p.name, got, before)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", p.name, err)
			continue
		}
		if res.Stats.DeadLettered != 1 {
			t.Errorf("%s: dead-lettered %d, want 1 (key 40)", p.name, res.Stats.DeadLettered)
		}
		want := e.sql(p.src, "SELECT id, email, rank FROM us WHERE id <> 40 UNION ALL SELECT 99, 'only-in-target', 99 ORDER BY 1")
		got := e.sql(dst(p), "SELECT id, email, rank FROM "+p.table+" ORDER BY id")
		if !equalRows(got, want) {
			t.Errorf("%s: target %v, want the source's rows but key 40, and key 99: %v", p.name, got, want)
		}
		if got := e.sql(dst(p), fmt.Sprintf("SELECT `key` FROM rejects WHERE job = 'm%d'", i)); len(got) != 1 || !strings.Contains(got[0][0], "40") {
			t.Errorf("%s: dead letters %v, want key 40's", p.name, got)
		}
	}
}

// TestSQLMergeReferencedTarget: a target that another table's foreign key
// references is not applied as a delete and an insert: a SQL MERGE job
// whose window swaps two emails fails as before (PostgreSQL pushed down,
// SQLite pushed down), the error naming the value, the rows and the
// reason, and the target keeps its rows.
func TestSQLMergeReferencedTarget(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	e := newEnv(t)
	lite := e.conn("src.db")
	pgExec(t, pg, "CREATE TABLE us (id integer PRIMARY KEY, email text UNIQUE, rank integer UNIQUE);"+uniqueTarget(true, "m_fk")+"; CREATE TABLE m_ref (x integer REFERENCES m_fk (id))")
	e.sql(lite, fmt.Sprintf(uniqueTable, "us"))
	if _, err := openSQLite(t, lite).Exec(uniqueTarget(false, "m_fk") + "; CREATE TABLE m_ref (x INTEGER REFERENCES m_fk (id))"); err != nil {
		t.Fatal(err)
	}
	seed := "INSERT INTO us VALUES (1, 'a', 1), (2, 'b', 2);"
	swap := "UPDATE us SET email = 'tmp' WHERE id = 1; UPDATE us SET email = 'a' WHERE id = 2; UPDATE us SET email = 'b' WHERE id = 1;"
	for _, c := range []string{pg, lite} {
		e.sql(c, "ALTER TABLE us SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM s0 ON TABLE us WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');"+seed)
		j := e.job("fk.sql", sqlMergeJob("fk", c, "", "", "s0", "m_fk"))
		if _, err := e.run(j); err != nil {
			t.Fatalf("%s: initial rows: %v", c, err)
		}
		if strings.HasPrefix(c, "postgres") {
			pgExec(t, c, "BEGIN; "+swap+" COMMIT;")
		} else {
			e.sql(c, swap)
		}
		_, err := e.run(j)
		if err == nil || !strings.Contains(err.Error(), "a foreign key references") || !strings.Contains(err.Error(), "(id=1)") || !strings.Contains(err.Error(), "(id=2)") {
			t.Errorf("%s: %v, want the unique violation naming keys 1 and 2, not applied because a foreign key references the target", c, err)
		}
		if got := e.sql(c, "SELECT id, email FROM m_fk ORDER BY id"); !equalRows(got, [][]string{{"1", "a"}, {"2", "b"}}) {
			t.Errorf("%s: target %v, want its rows as they were", c, got)
		}
	}
}

// TestSQLMergeClausesReadTheTarget: the job's clauses compute from the
// target's own values (an UPDATE counts the updates of a key in n) and
// its INSERT leaves n to the column's DEFAULT; a window that swaps two
// emails and moves an email from a deleted key to a new one is applied
// with those clauses, as they would apply with the constraint checked at
// the end: each swapped key counted once, the new key at the DEFAULT
// (PostgreSQL pushed down, PostgreSQL → SQLite, SQLite pushed down). A
// PostgreSQL target with a generated column is not applied as a delete
// and an insert: the run fails as before, saying why.
func TestSQLMergeClausesReadTheTarget(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	e := newEnv(t)
	lite, liteSink := e.conn("src.db"), e.conn("sink.db")
	const pgTarget = "CREATE TABLE %s (id integer PRIMARY KEY, email text UNIQUE, rank integer UNIQUE, n integer NOT NULL DEFAULT 0);"
	const liteTarget = "CREATE TABLE %s (id INTEGER PRIMARY KEY, email TEXT UNIQUE, rank INTEGER UNIQUE, n INTEGER NOT NULL DEFAULT 0);"
	pgExec(t, pg, "CREATE TABLE us (id integer PRIMARY KEY, email text UNIQUE, rank integer UNIQUE);"+fmt.Sprintf(pgTarget, "c_push")+
		"CREATE TABLE c_gen (id integer PRIMARY KEY, email text UNIQUE, rank integer UNIQUE, n integer NOT NULL DEFAULT 0, up text GENERATED ALWAYS AS (upper(email)) STORED);")
	e.sql(lite, fmt.Sprintf(uniqueTable, "us"))
	if _, err := openSQLite(t, lite).Exec(fmt.Sprintf(liteTarget, "c_push")); err != nil {
		t.Fatal(err)
	}
	if _, err := openSQLite(t, liteSink).Exec(fmt.Sprintf(liteTarget, "c_lite")); err != nil {
		t.Fatal(err)
	}
	seed := "INSERT INTO us VALUES (1, 'a', 1), (2, 'b', 2), (30, 'moved', 30);"
	window := "UPDATE us SET email = 'tmp' WHERE id = 1; UPDATE us SET email = 'a' WHERE id = 2; UPDATE us SET email = 'b' WHERE id = 1; DELETE FROM us WHERE id = 30; INSERT INTO us VALUES (31, 'moved', 31);"
	job := func(name, src, sink, stream, table string) string {
		j := fmt.Sprintf("-- name: %s\n-- connection: %s\n", name, src)
		if sink != "" {
			j += "-- sink_connection: " + sink + "\n"
		}
		return j + fmt.Sprintf("MERGE INTO %s AS t USING (SELECT `__change_type`, id, email, rank FROM %s WHERE `__change_type` IN ('INSERT', 'UPDATE_AFTER', 'DELETE')) AS s ON t.id = s.id\n", table, stream) +
			"WHEN MATCHED AND s.`__change_type` = 'DELETE' THEN DELETE\n" +
			"WHEN MATCHED THEN UPDATE SET t.email = s.email, t.rank = s.rank, t.n = t.n + 1\n" +
			"WHEN NOT MATCHED AND s.`__change_type` <> 'DELETE' THEN INSERT (id, email, rank) VALUES (s.id, s.email, s.rank);\n"
	}
	type path struct{ name, src, sink, stream, table string }
	paths := []path{
		{"postgres pushdown", pg, "", "s0", "c_push"},
		{"postgres → sqlite", pg, liteSink, "s1", "c_lite"},
		{"sqlite pushdown", lite, "", "s0", "c_push"},
	}
	for _, c := range []string{pg, lite} {
		e.sql(c, "ALTER TABLE us SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM s0 ON TABLE us WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE'); CREATE TABLE STREAM s1 ON TABLE us WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');"+seed)
	}
	e.sql(pg, "CREATE TABLE STREAM s2 ON TABLE us WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE')")
	gen := e.job("gen.sql", job("gen", pg, "", "s2", "c_gen"))
	run := func(round string) {
		t.Helper()
		for i, p := range paths {
			if _, err := e.run(e.job(fmt.Sprintf("c%d.sql", i), job(fmt.Sprintf("c%d", i), p.src, p.sink, p.stream, p.table))); err != nil {
				t.Errorf("%s, %s: %v", round, p.name, err)
				continue
			}
			dst := p.sink
			if dst == "" {
				dst = p.src
			}
			// n counts the windows that updated a key: 1 for the swapped keys 1 and 2.
			want := e.sql(p.src, "SELECT id, email, rank, CASE WHEN id IN (1, 2) AND "+fmt.Sprint(round == "window")+" THEN 1 ELSE 0 END FROM us ORDER BY id")
			got := e.sql(dst, "SELECT id, email, rank, n FROM "+p.table+" ORDER BY id")
			if !equalRows(got, want) {
				t.Errorf("%s, %s: target %v, want %v", round, p.name, got, want)
			}
		}
	}
	run("initial rows")
	if _, err := e.run(gen); err != nil {
		t.Fatalf("generated column target, initial rows: %v", err)
	}
	pgExec(t, pg, "BEGIN; "+window+" COMMIT;")
	e.sql(lite, window)
	run("window")
	_, err := e.run(gen)
	if err == nil || !strings.Contains(err.Error(), "generated") || !strings.Contains(err.Error(), "(id=1)") {
		t.Errorf("generated column target: %v, want the unique violation naming key 1, not applied because of the generated column", err)
	}
}

// TestSQLMergeFallbackNativeTypes: the SQLite fallback's TEMP copy of the
// target takes columns whose declared type is not a plain type name
// (a JSON or UUID column declares "TEXT:json"-style types): a swap of a
// UNIQUE value under a SQL MERGE into such a target failed every run
// ('near ":json": syntax error'), found by a fresh user.
func TestSQLMergeFallbackNativeTypes(t *testing.T) {
	e := newEnv(t)
	src := e.conn("src.db")
	e.sql(src, `CREATE TABLE nt (id INT, email STRING, meta JSON, ref UUID, PRIMARY KEY (id));
ALTER TABLE nt SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM nt_s ON TABLE nt WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
INSERT INTO nt VALUES (1, 'a', '{"k": [1, null]}', '6f1c2a52-3c1e-4b43-9d1e-2f4b6c9e8a01'), (2, 'b', '{}', NULL);
CREATE TABLE nt_t (id INT, email STRING, meta JSON, ref UUID, PRIMARY KEY (id));`)
	db := openSQLite(t, src)
	if _, err := db.Exec(`CREATE UNIQUE INDEX nt_t_email ON nt_t (email)`); err != nil {
		t.Fatal(err)
	}
	var declared string
	if err := db.QueryRow(`SELECT type FROM pragma_table_info('nt_t') WHERE name = 'meta'`).Scan(&declared); err != nil || !strings.Contains(declared, ":") {
		t.Fatalf("declared type of the JSON column: %q (%v); the test needs one that is not a plain type name", declared, err)
	}
	job := e.job("m.sql", "-- name: m\n-- connection: "+src+"\n"+
		"MERGE INTO nt_t AS t USING (SELECT `__change_type`, id, email, meta, ref FROM nt_s WHERE `__change_type` IN ('INSERT', 'UPDATE_AFTER', 'DELETE')) AS s ON t.id = s.id\n"+
		"WHEN MATCHED AND s.`__change_type` = 'DELETE' THEN DELETE\n"+
		"WHEN MATCHED THEN UPDATE SET t.email = s.email, t.meta = s.meta, t.ref = s.ref\n"+
		"WHEN NOT MATCHED AND s.`__change_type` <> 'DELETE' THEN INSERT (id, email, meta, ref) VALUES (s.id, s.email, s.meta, s.ref);\n")
	if _, err := e.run(job); err != nil {
		t.Fatal(err)
	}
	e.sql(src, "UPDATE nt SET email = 'tmp' WHERE id = 1; UPDATE nt SET email = 'a' WHERE id = 2; UPDATE nt SET email = 'b' WHERE id = 1")
	if _, err := e.run(job); err != nil {
		t.Fatalf("run after the swap: %v", err)
	}
	const q = "SELECT id, email, meta, ref FROM %s ORDER BY id"
	if want, got := e.sql(src, fmt.Sprintf(q, "nt")), e.sql(src, fmt.Sprintf(q, "nt_t")); !equalRows(got, want) {
		t.Errorf("target %v, source %v", got, want)
	}
}

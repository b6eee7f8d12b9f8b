package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// schemaPath is one source → sink path of the schema-change tests.
type schemaPath struct {
	name   string
	src    string // source connection ("" = the env's SQLite)
	dst    string // sink connection
	prefix string // target table name prefix
	pg     bool   // the source is PostgreSQL (ALTER COLUMN TYPE exists)
}

// target is the path's target table under policy pol.
func (p schemaPath) target(pol string) string { return p.prefix + "_" + pol }

// stream is the path's stream under policy pol.
func (p schemaPath) stream(pol string) string { return "s_" + p.prefix + "_" + pol }

// job is the job file of the path under policy pol: a merge without
// select (every column of the source table).
func (p schemaPath) job(pol string) string {
	j := fmt.Sprintf("name: %s\nsource: %s\nsink: {table: %s, mode: merge, keys: [id], on_schema_change: %s", p.target(pol), p.stream(pol), p.target(pol), pol)
	if p.dst != p.src {
		j += ", connection: '" + p.dst + "'"
	}
	j += "}\n"
	if p.src != "" {
		j = "connection: '" + p.src + "'\n" + j
	}
	return j
}

// native runs statements of the database's own SQL on conn (a plain
// client: pgx, or database/sql on the SQLite file), as an application
// would.
func (e *env) native(conn, q string) {
	e.t.Helper()
	if strings.HasPrefix(conn, "postgres") {
		pgExec(e.t, conn, q)
		return
	}
	if conn == "" {
		conn = e.r.Conn
	}
	if _, err := openSQLite(e.t, conn).Exec(q); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

// columns returns table's column names and declared types ("name type")
// as the database reports them (PostgreSQL: format_type; SQLite: PRAGMA
// table_info), in column order.
func (e *env) columns(conn, table string) []string {
	e.t.Helper()
	var out []string
	if strings.HasPrefix(conn, "postgres") {
		c, err := pgx.Connect(context.Background(), conn)
		if err != nil {
			e.t.Fatal(err)
		}
		defer c.Close(context.Background())
		rows, err := c.Query(context.Background(), `SELECT attname::text || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute
			WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, table)
		if err != nil {
			e.t.Fatal(err)
		}
		if out, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			e.t.Fatal(err)
		}
		return out
	}
	if conn == "" {
		conn = e.r.Conn
	}
	rows, err := openSQLite(e.t, conn).Query(fmt.Sprintf(`SELECT name || ' ' || type FROM pragma_table_info('%s') ORDER BY cid`, table))
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// hasColumn reports whether columns (e.columns) has a column named name.
func hasColumn(columns []string, name string) bool {
	for _, c := range columns {
		if strings.HasPrefix(c, name+" ") {
			return true
		}
	}
	return false
}

// TestSchemaChangePolicies: ADD, RENAME and DROP COLUMN (and on
// PostgreSQL a widening ALTER COLUMN TYPE) on a tracked source table,
// each followed by writes from a plain client (nobody enables tracking
// again), then a run of one merge
// job without select per policy (evolve, fail, ignore) on every path:
// pushed down on PostgreSQL and SQLite, PostgreSQL → PostgreSQL,
// PostgreSQL → SQLite, SQLite → PostgreSQL. The targets are created by
// the first run. Expected values are read from the source table: under
// evolve the target follows the source (new columns added and filled,
// widened columns widened, a dropped column kept); fail stops before
// writing and goes on, losing nothing, once the target is altered by
// hand; ignore writes the columns the target has.
func TestSchemaChangePolicies(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	liteSink := e.conn("sink.db")
	paths := []schemaPath{
		{name: "postgres pushdown", src: pg, dst: pg, prefix: "t_pp", pg: true},
		{name: "postgres → postgres", src: pg, dst: other, prefix: "t_pg", pg: true},
		{name: "postgres → sqlite", src: pg, dst: liteSink, prefix: "t_pl", pg: true},
		{name: "sqlite pushdown", prefix: "t_lp"},
		{name: "sqlite → postgres", dst: other, prefix: "t_lg"},
	}
	policies := []string{"evolve", "fail", "ignore"}
	pgExec(t, pg, "CREATE TABLE sc (id integer PRIMARY KEY, name varchar(10), qty integer, amt numeric(10,2))")
	e.sql("", "CREATE TABLE sc (id INT, name VARCHAR(10), qty INT, amt DECIMAL(10,2), PRIMARY KEY (id))")
	e.sql(liteSink, "CREATE TABLE IF NOT EXISTS sluice_probe (x INT)")
	for _, c := range []string{pg, ""} {
		e.sql(c, "ALTER TABLE sc SET PROPERTIES ('change_tracking' = 'true')")
	}
	for _, p := range paths {
		for _, pol := range policies {
			e.sql(p.src, fmt.Sprintf("CREATE TABLE STREAM %s ON TABLE sc WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')", p.stream(pol)))
		}
	}
	// both runs statements on both sources, as a plain client.
	both := func(q string) {
		t.Helper()
		e.native(pg, q)
		e.native("", q)
	}
	// run runs the job of p under pol; want "" for success, else a text
	// the error must hold.
	run := func(step string, p schemaPath, pol, want string) {
		t.Helper()
		_, err := e.run(e.job(p.target(pol)+".yaml", p.job(pol)))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s, %s, %s: %v", step, p.name, pol, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s, %s, %s: error %v, want one with %q", step, p.name, pol, err, want)
		case want != "" && pol == "fail" && !errors.Is(err, runner.ErrSchemaChanged):
			t.Errorf("%s, %s, %s: error %v does not wrap ErrSchemaChanged", step, p.name, pol, err)
		}
	}
	// same compares cols of the rows where (a condition, or "") of the
	// target of p under pol with the source's.
	same := func(step string, p schemaPath, pol, cols, where string) {
		t.Helper()
		if where != "" {
			where = " WHERE " + where
		}
		want := e.sql(p.src, "SELECT "+cols+" FROM sc"+where+" ORDER BY id")
		got := e.sql(p.dst, "SELECT "+cols+" FROM "+p.target(pol)+where+" ORDER BY id")
		if !equalRows(got, want) {
			t.Errorf("%s, %s, %s: target (%s) %v, want the source's %v", step, p.name, pol, cols, got, want)
		}
	}
	// value checks one cell of the target of p under pol.
	value := func(step string, p schemaPath, pol, col string, id int, want string) {
		t.Helper()
		got := e.sql(p.dst, fmt.Sprintf("SELECT %s FROM %s WHERE id = %d", col, p.target(pol), id))
		if len(got) != 1 || got[0][0] != want {
			t.Errorf("%s, %s, %s: %s of key %d is %v, want %s", step, p.name, pol, col, id, got, want)
		}
	}
	alterTarget := func(p schemaPath, pol, q string) {
		t.Helper()
		e.native(p.dst, fmt.Sprintf(q, p.target(pol)))
	}

	both("INSERT INTO sc VALUES (1, 'a', 1, 1.50), (2, 'b', 2, 2.50), (3, 'c', 3, 3.50)")
	for _, p := range paths {
		for _, pol := range policies {
			run("initial", p, pol, "")
			same("initial", p, pol, "id, name, qty, amt", "")
		}
	}

	// ADD COLUMN, then writes that give it values.
	both("ALTER TABLE sc ADD COLUMN note TEXT")
	both("INSERT INTO sc VALUES (4, 'd', 4, 4.50, 'n4')")
	both("UPDATE sc SET note = 'n1' WHERE id = 1")
	for _, p := range paths {
		run("add", p, "evolve", "")
		same("add", p, "evolve", "id, name, qty, amt, note", "")
		run("add", p, "fail", "column note (STRING) is new in sc")
		if got := e.sql(p.dst, "SELECT count(*) FROM "+p.target("fail")); !equalRows(got, [][]string{{"3"}}) || hasColumn(e.columns(p.dst, p.target("fail")), "note") {
			t.Errorf("add, %s, fail: the failed run wrote: %v rows, columns %v", p.name, got, e.columns(p.dst, p.target("fail")))
		}
		alterTarget(p, "fail", "ALTER TABLE %s ADD COLUMN note TEXT")
		run("add, target altered", p, "fail", "")
		same("add, target altered", p, "fail", "id, name, qty, amt, note", "")
		run("add", p, "ignore", "")
		same("add", p, "ignore", "id, name, qty, amt", "")
		if hasColumn(e.columns(p.dst, p.target("ignore")), "note") {
			t.Errorf("add, %s, ignore: the target gained note", p.name)
		}
	}

	// RENAME COLUMN: a new column under evolve, the old one kept.
	both("ALTER TABLE sc RENAME COLUMN name TO title")
	both("INSERT INTO sc VALUES (5, 'e', 5, 5.50, 'n5')")
	both("UPDATE sc SET title = 'A' WHERE id = 1")
	for _, p := range paths {
		run("rename", p, "evolve", "")
		same("rename", p, "evolve", "id, title, qty, amt, note", "id IN (1, 5)")
		same("rename", p, "evolve", "id, qty, amt, note", "")
		value("rename", p, "evolve", "name", 1, "a") // the old column keeps the value it had
		value("rename", p, "evolve", "name", 5, "NULL")
		value("rename", p, "evolve", "title", 2, "b") // not changed since the rename: read by key (name is gone from the source)
		run("rename", p, "fail", "column name of "+p.target("fail")+" is not in sc")
		alterTarget(p, "fail", "ALTER TABLE %s RENAME COLUMN name TO title")
		run("rename, target altered", p, "fail", "")
		same("rename, target altered", p, "fail", "id, title, qty, amt, note", "")
		run("rename", p, "ignore", "")
		same("rename", p, "ignore", "id, qty, amt", "")
		value("rename", p, "ignore", "name", 1, "a")
	}

	// DROP COLUMN: the target keeps it.
	both("ALTER TABLE sc DROP COLUMN note")
	both("INSERT INTO sc VALUES (6, 'f', 6, 6.50)")
	both("UPDATE sc SET qty = 10 WHERE id = 1")
	for _, p := range paths {
		run("drop", p, "evolve", "")
		same("drop", p, "evolve", "id, qty, amt", "")
		same("drop", p, "evolve", "id, title", "id IN (1, 5, 6)")
		value("drop", p, "evolve", "note", 1, "n1") // an updated row keeps the dropped column's value
		value("drop", p, "evolve", "note", 6, "NULL")
		run("drop", p, "fail", "column note of "+p.target("fail")+" is not in sc")
		alterTarget(p, "fail", "ALTER TABLE %s DROP COLUMN note")
		run("drop, target altered", p, "fail", "")
		same("drop, target altered", p, "fail", "id, title, qty, amt", "")
		run("drop", p, "ignore", "")
		same("drop", p, "ignore", "id, qty, amt", "")
	}

	// A widening ALTER COLUMN TYPE (PostgreSQL sources).
	pgExec(t, pg, "ALTER TABLE sc ALTER COLUMN qty TYPE bigint, ALTER COLUMN title TYPE varchar(20), ALTER COLUMN amt TYPE numeric(14,2)")
	pgExec(t, pg, "UPDATE sc SET qty = 5000000000, title = 'a-much-longer-title', amt = 123456789012.34 WHERE id = 2")
	for _, p := range paths {
		if !p.pg {
			continue
		}
		run("widen", p, "evolve", "")
		same("widen", p, "evolve", "id, title, qty, amt", "id = 2")
		// (id > 0: a query text the backend's pool has not cached with
		// the types before the ALTER.)
		same("widen", p, "evolve", "id, qty, amt", "id > 0")
		cols := e.columns(p.dst, p.target("evolve"))
		want := []string{"qty bigint", "amt numeric(14,2)", "title character varying(20)"}
		if strings.HasPrefix(p.dst, "sqlite") {
			want = []string{"qty BIGINT", "amt DECIMAL_TEXT(14,2)", "title VARCHAR(20)"}
		}
		for _, w := range want {
			if !hasColumnType(cols, w) {
				t.Errorf("widen, %s, evolve: target columns %v, want %s", p.name, cols, w)
			}
		}
		run("widen", p, "fail", "column qty is BIGINT in sc but INT in "+p.target("fail"))
		// ignore writes into the narrower column: a value that does not
		// fit fails the run naming the key and the column.
		run("widen", p, "ignore", "qty")
		value("widen", p, "ignore", "qty", 2, "2")
	}

	// An integer to text (every value keeps its digits): a widening too.
	pgExec(t, pg, "ALTER TABLE sc ALTER COLUMN qty TYPE text")
	pgExec(t, pg, "UPDATE sc SET qty = 'abc' WHERE id = 3")
	for _, p := range paths {
		if !p.pg {
			continue
		}
		run("to text", p, "evolve", "")
		same("to text", p, "evolve", "id, qty", "id > 1")
		want := "qty text"
		if strings.HasPrefix(p.dst, "sqlite") {
			want = "qty TEXT"
		}
		if cols := e.columns(p.dst, p.target("evolve")); !hasColumnType(cols, want) {
			t.Errorf("to text, %s, evolve: target columns %v, want %s", p.name, cols, want)
		}
		run("to text", p, "fail", "column qty is STRING in sc but INT in "+p.target("fail"))
	}
}

func hasColumnType(columns []string, want string) bool {
	for _, c := range columns {
		if c == want {
			return true
		}
	}
	return false
}

// TestSchemaChangeDuringRuns: an application inserts rows from a plain
// client while jobs run back to back, and adds a column in the middle
// (another session, while a run may be reading); every row inserted after
// the ALTER gives the new column a value. Append jobs without select under
// evolve, on every path, copy every inserted row; every run succeeds,
// and when the writer is done each target equals its source, the new
// column's values included, with nobody enabling tracking again: no run
// ever wrote a row without a value the source holds.
func TestSchemaChangeDuringRuns(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	liteSink := e.conn("sink.db")
	paths := []schemaPath{
		{name: "postgres pushdown", src: pg, dst: pg, prefix: "c_pp", pg: true},
		{name: "postgres → sqlite", src: pg, dst: liteSink, prefix: "c_pl", pg: true},
		{name: "sqlite pushdown", prefix: "c_lp"},
		{name: "sqlite → postgres", dst: other, prefix: "c_lg"},
	}
	pgExec(t, pg, "CREATE TABLE sc (id integer PRIMARY KEY, v integer)")
	e.sql("", "CREATE TABLE sc (id INT, v INT, PRIMARY KEY (id))")
	e.sql(liteSink, "CREATE TABLE IF NOT EXISTS sluice_probe (x INT)")
	for _, c := range []string{pg, ""} {
		e.sql(c, "ALTER TABLE sc SET PROPERTIES ('change_tracking' = 'true')")
	}
	job := func(p schemaPath) string {
		j := fmt.Sprintf("name: %s\nsource: %s\nfilter: \"`__change_type` = 'INSERT'\"\nsink: {table: %s", p.prefix, p.stream("evolve"), p.prefix)
		if p.dst != p.src {
			j += ", connection: '" + p.dst + "'"
		}
		j += "}\n"
		if p.src != "" {
			j = "connection: '" + p.src + "'\n" + j
		}
		return j
	}
	for _, p := range paths {
		e.sql(p.src, fmt.Sprintf("CREATE TABLE STREAM %s ON TABLE sc WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')", p.stream("evolve")))
	}
	const rows, alterAt = 120, 50
	write := func(conn string, exec func(string) error) error {
		for i := 1; i <= rows; i++ {
			q := fmt.Sprintf("INSERT INTO sc VALUES (%d, %d)", i, i*10)
			if i > alterAt {
				q = fmt.Sprintf("INSERT INTO sc VALUES (%d, %d, 'w%d')", i, i*10, i)
			}
			if err := exec(q); err != nil {
				return fmt.Errorf("%s: %s: %w", conn, q, err)
			}
			if i == alterAt {
				if err := exec("ALTER TABLE sc ADD COLUMN w TEXT"); err != nil {
					return fmt.Errorf("%s: ALTER: %w", conn, err)
				}
			}
		}
		return nil
	}
	pgc, err := pgx.Connect(t.Context(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer pgc.Close(context.Background())
	lite := openSQLite(t, e.r.Conn)
	done := make(chan error, 2)
	go func() {
		done <- write("postgres", func(q string) error { _, err := pgc.Exec(context.Background(), q); return err })
	}()
	go func() {
		done <- write("sqlite", func(q string) error { _, err := lite.Exec(q); return err })
	}()
	// Run every job back to back while the writers write: every run
	// succeeds (a run that meets the ALTER brings the capture in line and
	// plans again), with nobody enabling tracking again.
	finished, rounds := 0, 0
	for ; finished < 2; rounds++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished++
		default:
		}
		for _, p := range paths {
			if _, err := e.run(e.job(p.prefix+".yaml", job(p))); err != nil {
				t.Errorf("%s, during writes: %v", p.name, err)
			}
		}
	}
	t.Logf("%d rounds of runs during the writes", rounds)
	for _, p := range paths {
		if _, err := e.run(e.job(p.prefix+".yaml", job(p))); err != nil {
			t.Errorf("%s, after the writes: %v", p.name, err)
		}
		want := e.sql(p.src, "SELECT id, v, w FROM sc WHERE id > 0 ORDER BY id")
		got := e.sql(p.dst, "SELECT id, v, w FROM "+p.prefix+" ORDER BY id")
		if len(want) != rows || !equalRows(got, want) {
			t.Errorf("%s: target %v\nwant the source's %v", p.name, got, want)
		}
	}
}

// TestSchemaNarrowing: a narrowing ALTER COLUMN TYPE on a tracked
// PostgreSQL table. While the change log holds a value of the column that
// the narrower type cannot hold, enabling tracking again (which the read
// needs after the change) refuses, naming the column and both types, and
// changes nothing; once no such value is pending, it goes on and the run
// writes into the target's wider column, which stays as it was under
// evolve. The values compared are the source table's.
func TestSchemaNarrowing(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	e := newEnv(t)
	pgExec(t, pg, "CREATE TABLE nt (id integer PRIMARY KEY, qty bigint)")
	e.sql(pg, "ALTER TABLE nt SET PROPERTIES ('change_tracking' = 'true'); CREATE TABLE STREAM ns ON TABLE nt WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	j := e.job("n.yaml", "connection: '"+pg+"'\nsource: ns\nsink: {table: nt_copy, mode: merge, keys: [id]}\n")
	pgExec(t, pg, "INSERT INTO nt VALUES (1, 1), (2, 2)")
	if _, err := e.run(j); err != nil {
		t.Fatal(err)
	}
	pgExec(t, pg, "UPDATE nt SET qty = 5000000000 WHERE id = 1")
	pgExec(t, pg, "UPDATE nt SET qty = 7 WHERE id = 1")
	pgExec(t, pg, "ALTER TABLE nt ALTER COLUMN qty TYPE integer")
	pgExec(t, pg, "UPDATE nt SET qty = 8 WHERE id = 2")
	b, err := e.r.Backend(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := dsl.ParseStatements("t.sql", "ALTER TABLE nt SET PROPERTIES ('change_tracking' = 'true')")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.(runner.Executor).Exec(context.Background(), stmts[0])
	if err == nil || !strings.Contains(err.Error(), `column "qty" of "nt" changed type from bigint to integer`) ||
		!strings.Contains(err.Error(), `give the column its earlier type again (ALTER TABLE "nt" ALTER COLUMN "qty" TYPE bigint)`) {
		t.Fatalf("enabling tracking with a pending value the narrower type cannot hold: %v, want the refusal naming qty and the way forward that the test takes next", err)
	}
	if got := e.sql(pg, "SELECT id, qty FROM nt_copy ORDER BY id"); !equalRows(got, [][]string{{"1", "1"}, {"2", "2"}}) {
		t.Errorf("target after the refusal: %v", got)
	}
	// The application restores the wider type; the pending changes are
	// read, and the narrowing then goes through.
	pgExec(t, pg, "ALTER TABLE nt ALTER COLUMN qty TYPE bigint")
	e.sql(pg, "ALTER TABLE nt SET PROPERTIES ('change_tracking' = 'true')")
	if _, err := e.run(j); err != nil {
		t.Fatal(err)
	}
	pgExec(t, pg, "ALTER TABLE nt ALTER COLUMN qty TYPE integer")
	pgExec(t, pg, "UPDATE nt SET qty = 9 WHERE id = 2")
	e.sql(pg, "ALTER TABLE nt SET PROPERTIES ('change_tracking' = 'true')")
	if _, err := e.run(j); err != nil {
		t.Fatal(err)
	}
	want := e.sql(pg, "SELECT id, qty FROM nt WHERE id > 0 ORDER BY id")
	if got := e.sql(pg, "SELECT id, qty FROM nt_copy ORDER BY id"); !equalRows(got, want) {
		t.Errorf("target %v, want the source's %v", got, want)
	}
	if cols := e.columns(pg, "nt_copy"); !hasColumnType(cols, "qty bigint") {
		t.Errorf("target columns %v: the wider qty bigint should stay", cols)
	}
}

// TestSchemaChangeBetweenPlanAndRun: the application adds a column and
// writes rows that give it values after a run was planned (its stream
// described, its projection bound, its target read) and before that run
// reads, with no sluice command in between: the deterministic form of
// the race in TestSchemaChangeDuringRuns. The run must not write those
// rows without the new column; after it (and one more run), every target
// equals its source in every column, the new one included. Append and
// merge jobs without select, under evolve, on every path.
func TestSchemaChangeBetweenPlanAndRun(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	liteSink := e.conn("sink.db")
	paths := []schemaPath{
		{name: "postgres pushdown", src: pg, dst: pg, prefix: "b_pp", pg: true},
		{name: "postgres → sqlite", src: pg, dst: liteSink, prefix: "b_pl", pg: true},
		{name: "sqlite pushdown", prefix: "b_lp"},
		{name: "sqlite → postgres", dst: other, prefix: "b_lg"},
	}
	pgExec(t, pg, "CREATE TABLE sc (id integer PRIMARY KEY, v integer)")
	e.sql("", "CREATE TABLE sc (id INT, v INT, PRIMARY KEY (id))")
	e.sql(liteSink, "CREATE TABLE IF NOT EXISTS sluice_probe (x INT)")
	for _, c := range []string{pg, ""} {
		e.sql(c, "ALTER TABLE sc SET PROPERTIES ('change_tracking' = 'true')")
	}
	// both runs statements on both sources, as a plain client.
	both := func(q string) {
		t.Helper()
		e.native(pg, q)
		e.native("", q)
	}
	modes := []struct{ name, stream, sink string }{
		{"append", "APPEND_ONLY", ""},
		{"merge", "STANDARD", ", mode: merge, keys: [id]"},
	}
	job := func(p schemaPath, m string) *plan.Job {
		for _, md := range modes {
			if md.name != m {
				continue
			}
			j := fmt.Sprintf("name: %s_%s\nsource: %s\nsink: {table: %s_%s%s", p.prefix, m, p.stream(m), p.prefix, m, md.sink)
			if p.dst != p.src {
				j += ", connection: '" + p.dst + "'"
			}
			j += "}\n"
			if p.src != "" {
				j = "connection: '" + p.src + "'\n" + j
			}
			return e.job(p.prefix+"_"+m+".yaml", j)
		}
		panic(m)
	}
	for _, p := range paths {
		for _, m := range modes {
			e.sql(p.src, fmt.Sprintf("CREATE TABLE STREAM %s ON TABLE sc WITH PROPERTIES ('TABLE_STREAM_MODE' = '%s')", p.stream(m.name), m.stream))
		}
	}
	both("INSERT INTO sc VALUES (1, 10)")
	for _, p := range paths {
		for _, m := range modes {
			if _, err := e.run(job(p, m.name)); err != nil {
				t.Fatalf("%s, %s, first run: %v", p.name, m.name, err)
			}
		}
	}
	var preps []*runner.Prepared
	for _, p := range paths {
		for _, m := range modes {
			prep, err := e.r.Plan(context.Background(), job(p, m.name))
			if err != nil {
				t.Fatalf("%s, %s, plan: %v", p.name, m.name, err)
			}
			preps = append(preps, prep)
		}
	}
	both("ALTER TABLE sc ADD COLUMN w TEXT")
	both("INSERT INTO sc VALUES (2, 20, 'w2'), (3, 30, 'w3')")
	both("UPDATE sc SET w = 'w1' WHERE id = 1")
	i := 0
	for _, p := range paths {
		for _, m := range modes {
			_, err := e.r.Run(context.Background(), preps[i])
			i++
			if err != nil {
				t.Errorf("%s, %s, the run planned before the ALTER: %v", p.name, m.name, err)
			}
			if _, err := e.run(job(p, m.name)); err != nil {
				t.Errorf("%s, %s, the next run: %v", p.name, m.name, err)
			}
			where := ""
			if m.name == "append" {
				where = " WHERE id > 1" // the update is no insert
			}
			want := e.sql(p.src, "SELECT id, v, w FROM sc"+where+" ORDER BY id")
			got := e.sql(p.dst, fmt.Sprintf("SELECT id, v, w FROM %s_%s%s ORDER BY id", p.prefix, m.name, where))
			if !equalRows(got, want) {
				t.Errorf("%s, %s: target %v\nwant the source's %v", p.name, m.name, got, want)
			}
		}
	}
}

package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/internal/pgtest"
)

// addColumnStep is one round of TestAddColumnFillsEarlierChanges: the
// application's statements (writes logged before and after an ALTER),
// then one run of each job; std and app are the keys whose rows the
// STANDARD merge target and the APPEND_ONLY target must then hold with
// every column as the source holds it.
type addColumnStep struct {
	name     string
	stmts    []string
	enable   bool // enable tracking again before the run (instead of the run bringing the log in line)
	std, app []int
}

// TestAddColumnFillsEarlierChanges: changes logged BEFORE an ALTER TABLE
// … ADD COLUMN carry the value the source row holds for the new column
// (PostgreSQL's missing value for a non-volatile DEFAULT, whatever SET
// DEFAULT came later; the table's value by key for a volatile DEFAULT;
// NULL without a DEFAULT; SQLite's DEFAULT), also for changes logged as
// JSON after an earlier DROP COLUMN, after a column dropped and added
// again under its name, and when tracking is enabled again instead of a
// run bringing the log in line. Every statement comes from a plain client
// (pgx, database/sql) with no sluice command in between; each step then
// runs a STANDARD merge job and an APPEND_ONLY append job (no select,
// evolve) per path, and compares the targets' rows of the keys the step
// wrote with the source table's own rows, every current column: IS NOT
// DISTINCT FROM where target and source share a PostgreSQL database,
// their text otherwise. The keys compared were not changed after the
// change the target received, so the source's row is that change's exact
// image.
func TestAddColumnFillsEarlierChanges(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	paths := []schemaPath{
		{name: "postgres → postgres", src: pg, dst: other, prefix: "a_pg", pg: true},
		{name: "postgres pushdown", src: pg, dst: pg, prefix: "a_pp", pg: true},
		{name: "sqlite → postgres", dst: other, prefix: "a_lg"},
		{name: "sqlite pushdown", prefix: "a_lp"},
	}
	pgSteps := []addColumnStep{
		{name: "non-volatile DEFAULT, then SET DEFAULT 8", stmts: []string{
			"INSERT INTO ac VALUES (3, 'c')", "UPDATE ac SET v = 'a2' WHERE id = 1",
			"ALTER TABLE ac ADD COLUMN c int DEFAULT 7", "ALTER TABLE ac ALTER COLUMN c SET DEFAULT 8",
			"INSERT INTO ac (id, v) VALUES (4, 'd')",
		}, std: []int{1, 3, 4}, app: []int{3, 4}},
		{name: "volatile DEFAULTs and no DEFAULT", stmts: []string{
			"INSERT INTO ac (id, v) VALUES (5, 'e')", "UPDATE ac SET v = 'b2' WHERE id = 2",
			"ALTER TABLE ac ADD COLUMN r float8 DEFAULT random()", "ALTER TABLE ac ADD COLUMN n int",
			"ALTER TABLE ac ADD COLUMN u serial", "ALTER TABLE ac ADD COLUMN g timestamptz DEFAULT clock_timestamp()",
		}, std: []int{2, 5}, app: []int{5}},
		{name: "added after a DROP COLUMN (changes logged as JSON of an older shape)", stmts: []string{
			"ALTER TABLE ac DROP COLUMN v", "INSERT INTO ac (id) VALUES (6)", "UPDATE ac SET c = 30 WHERE id = 3",
			"ALTER TABLE ac ADD COLUMN k int DEFAULT 5", "ALTER TABLE ac ADD COLUMN y float8 DEFAULT random()",
			"ALTER TABLE ac ALTER COLUMN k SET DEFAULT 6", "INSERT INTO ac (id) VALUES (7)",
		}, std: []int{3, 6, 7}, app: []int{6, 7}},
		{name: "dropped and added again under the same name", stmts: []string{
			"INSERT INTO ac (id, c) VALUES (8, 80)", "ALTER TABLE ac DROP COLUMN c", "ALTER TABLE ac ADD COLUMN c int DEFAULT 9",
		}, std: []int{8}, app: []int{8}},
		{name: "tracking enabled again instead of the run", enable: true, stmts: []string{
			"INSERT INTO ac (id) VALUES (9)", "UPDATE ac SET n = 10 WHERE id = 5",
			"ALTER TABLE ac ADD COLUMN d int DEFAULT 11", "ALTER TABLE ac ALTER COLUMN d SET DEFAULT 12",
			"ALTER TABLE ac ADD COLUMN w float8 DEFAULT random()", "INSERT INTO ac (id) VALUES (10)",
		}, std: []int{5, 9, 10}, app: []int{9, 10}},
	}
	liteSteps := []addColumnStep{
		{name: "dropped and added again (not the last column)", stmts: []string{
			"INSERT INTO ac VALUES (3, 30, 'c')", "UPDATE ac SET c = 10, v = 'a2' WHERE id = 1",
			"ALTER TABLE ac DROP COLUMN c", "ALTER TABLE ac ADD COLUMN c INT DEFAULT 7",
		}, std: []int{1, 3}, app: []int{3}},
		{name: "dropped and added again (the last column, another DEFAULT)", stmts: []string{
			"INSERT INTO ac (id, v, c) VALUES (4, 'd', 40)", "ALTER TABLE ac DROP COLUMN c",
			"UPDATE ac SET v = 'b2' WHERE id = 2", "ALTER TABLE ac ADD COLUMN c INT DEFAULT 0",
		}, std: []int{2, 4}, app: []int{4}},
		{name: "ADD COLUMN with a DEFAULT", stmts: []string{
			"INSERT INTO ac (id, v) VALUES (5, 'e')", "ALTER TABLE ac ADD COLUMN d INT DEFAULT 7",
			"INSERT INTO ac (id, v) VALUES (6, 'f')",
		}, std: []int{5, 6}, app: []int{5, 6}},
		{name: "tracking enabled again instead of the run", enable: true, stmts: []string{
			"INSERT INTO ac (id, v) VALUES (7, 'g')", "ALTER TABLE ac DROP COLUMN d", "ALTER TABLE ac ADD COLUMN d INT DEFAULT 8",
		}, std: []int{7}, app: []int{7}},
	}

	pgExec(t, pg, "CREATE TABLE ac (id integer PRIMARY KEY, v text)")
	e.sql("", "CREATE TABLE ac (id INT, c INT, v TEXT, PRIMARY KEY (id))")
	for _, c := range []string{pg, ""} {
		e.sql(c, "ALTER TABLE ac SET PROPERTIES ('change_tracking' = 'true')")
	}
	// jobs of p: a STANDARD merge and an APPEND_ONLY append, neither
	// with select.
	jobs := func(p schemaPath) (std, app string) {
		conn := ""
		if p.src != "" {
			conn = "connection: '" + p.src + "'\n"
		}
		sink := ""
		if p.dst != p.src {
			sink = ", connection: '" + p.dst + "'"
		}
		std = fmt.Sprintf("%sname: %s_std\nsource: s_%s_std\nsink: {table: %s_std, mode: merge, keys: [id]%s}\n", conn, p.prefix, p.prefix, p.prefix, sink)
		app = fmt.Sprintf("%sname: %s_app\nsource: s_%s_app\nfilter: \"`__change_type` = 'INSERT'\"\nsink: {table: %s_app%s}\n", conn, p.prefix, p.prefix, p.prefix, sink)
		return std, app
	}
	for _, p := range paths {
		e.sql(p.src, fmt.Sprintf("CREATE TABLE STREAM s_%s_std ON TABLE ac WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')", p.prefix))
		e.sql(p.src, fmt.Sprintf("CREATE TABLE STREAM s_%s_app ON TABLE ac WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')", p.prefix))
	}
	pgExec(t, pg, "INSERT INTO ac VALUES (1, 'a'), (2, 'b')")
	e.native("", "INSERT INTO ac VALUES (1, 1, 'a'), (2, 2, 'b')")
	runAll := func(step string, src string) {
		t.Helper()
		for _, p := range paths {
			if p.src != src {
				continue
			}
			std, app := jobs(p)
			for _, j := range []string{std, app} {
				if _, err := e.run(e.job(p.prefix+".yaml", j)); err != nil {
					t.Fatalf("%s, %s: %v", step, p.name, err)
				}
			}
		}
	}
	runAll("initial", pg)
	runAll("initial", "")

	for _, src := range []string{pg, ""} {
		steps, backend := pgSteps, "postgres"
		if src == "" {
			steps, backend = liteSteps, "sqlite"
		}
		for i, st := range steps {
			for _, q := range st.stmts {
				e.native(src, q)
			}
			if st.enable {
				e.sql(src, "ALTER TABLE ac SET PROPERTIES ('change_tracking' = 'true')")
			}
			runAll(st.name, src)
			var cols []string
			for _, c := range e.columns(src, "ac") {
				cols = append(cols, strings.Fields(c)[0])
			}
			for _, p := range paths {
				if p.src != src {
					continue
				}
				for _, tgt := range []struct {
					suffix string
					keys   []int
				}{{"_std", st.std}, {"_app", st.app}} {
					what := fmt.Sprintf("%s step %d (%s), %s, target %s%s", backend, i+1, st.name, p.name, p.prefix, tgt.suffix)
					sameRows(t, e, what, p, p.prefix+tgt.suffix, cols, tgt.keys, i)
				}
			}
		}
	}
}

// sameRows checks that table of p's sink holds, for each of keys, the
// source table ac's row in the columns cols: with IS NOT DISTINCT FROM
// where both are in one PostgreSQL database, else as text (e.sql).
// step makes the query texts new (a pool's cached statements keep the
// columns they were prepared with).
func sameRows(t *testing.T, e *env, what string, p schemaPath, table string, cols []string, keys []int, step int) {
	t.Helper()
	var ks []string
	for _, k := range keys {
		ks = append(ks, fmt.Sprint(k))
	}
	in := strings.Join(ks, ", ")
	if p.src == p.dst && p.pg {
		var s, d []string
		for _, c := range cols {
			s = append(s, "s."+c)
			d = append(d, "d."+c)
		}
		c, err := pgx.Connect(context.Background(), p.src)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		var same, all int
		q := fmt.Sprintf(`SELECT count(*) FILTER (WHERE ROW(%s) IS NOT DISTINCT FROM ROW(%s)), count(*) FROM ac s JOIN %s d USING (id) WHERE s.id IN (%s) /* %d */`,
			strings.Join(s, ", "), strings.Join(d, ", "), table, in, step)
		if err := c.QueryRow(context.Background(), q).Scan(&same, &all); err != nil {
			t.Fatalf("%s: %s: %v", what, q, err)
		}
		if same != len(keys) || all != len(keys) {
			diff := e.sql(p.src, fmt.Sprintf("SELECT 'source', %s FROM ac s WHERE id IN (%s) UNION ALL SELECT 'target', %s FROM %s d WHERE id IN (%s) ORDER BY 2, 1 /* %d */",
				strings.Join(s, ", "), in, strings.Join(d, ", "), table, in, step))
			t.Errorf("%s: %d of %d keys (%d rows) equal the source's, want all; rows: %v", what, same, len(keys), all, diff)
		}
		return
	}
	list := strings.Join(cols, ", ")
	want := e.sql(p.src, fmt.Sprintf("SELECT %s FROM ac WHERE id IN (%s) ORDER BY id /* %d */", list, in, step))
	got := e.sql(p.dst, fmt.Sprintf("SELECT %s FROM %s WHERE id IN (%s) ORDER BY id /* %d */", list, table, in, step))
	if len(want) != len(keys) || !equalRows(got, want) {
		t.Errorf("%s: target (%s) %v, want the source's %v", what, list, got, want)
	}
}

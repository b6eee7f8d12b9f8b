package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// jsonPathSession is a writer's session whose settings change the text
// forms of floats, intervals, dates, bytea and time zones.
const jsonPathSession = `SET extra_float_digits = 0; SET IntervalStyle = sql_standard; SET DateStyle = 'German, DMY'; SET bytea_output = escape; SET TimeZone = 'America/St_Johns'; `

// TestTypeMatrixJSONPath sends the type matrix's values along every path
// (pushed down in one database, PostgreSQL → PostgreSQL, PostgreSQL →
// SQLite) after DDL on the source table, when its capture logs each row
// as its record text until the next run (issue #15: every value arrives
// exactly). Rounds: the typed path; then an ADD COLUMN and writes from a
// session with other text settings — every value of row 2 replaced by row
// 3's, row 4's JSON values set to JSON's null and its array given a lower
// bound, row 5 a copy of row 4, rows 8 and 9 with json text that keeps
// its spaces and escapes and JSON's nulls, row 1 deleted — which the run
// brings into the change log; then a type change of the added column and
// more such writes, which enabling tracking again brings in. After each
// round every target holds the source's text of every value (json byte
// for byte, JSON's null apart from SQL NULL, an array's bounds), compared
// with pgText; the SQLite target its "TEXT:" columns' text and the other
// columns' NULLs.
func TestTypeMatrixJSONPath(t *testing.T) {
	src := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	pgExec(t, src, matrixDDL("src"))
	pgExec(t, other, matrixDDL(""))
	e.sql(src, `ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s_push ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s_pg ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s_lite ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	pgExec(t, src, matrixInsert("src"))
	lite := e.conn("lite.db")
	order := []string{"pushdown", "postgres → postgres", "postgres → sqlite"}
	jobs := map[string]string{
		"pushdown":            "connection: '" + src + "'\nsource: s_push\nsink: {table: t_push, mode: merge, keys: [id]}\n",
		"postgres → postgres": "connection: '" + src + "'\nsource: s_pg\nsink: {table: t_pg, mode: merge, keys: [id], connection: '" + other + "'}\n",
		"postgres → sqlite":   "connection: '" + src + "'\nsource: s_lite\nsink: {table: t_lite, mode: merge, keys: [id], connection: '" + lite + "'}\n",
	}
	var names []string
	for _, m := range matrixColumns {
		names = append(names, fmt.Sprintf("%q", m.name))
	}
	list := strings.Join(names, ", ")
	var sets []string
	for _, n := range names {
		sets = append(sets, fmt.Sprintf("%s = s3.%s", n, n))
	}
	runAll := func(round string) {
		t.Helper()
		for _, name := range order {
			j := e.job(strings.NewReplacer(" ", "_", "→", "to").Replace(name)+".yaml", jobs[name])
			if _, err := e.run(j); err != nil {
				t.Fatalf("%s, %s: %v", round, name, err)
			}
		}
		want := pgText(t, src, "src")
		compareMatrix(t, round+", pushdown", pgText(t, src, "t_push"), want)
		compareMatrix(t, round+", postgres → postgres", pgText(t, other, "t_pg"), want)
		compareSQLiteText(t, round+", postgres → sqlite", openSQLite(t, lite), "t_lite", want)
	}
	runAll("typed path")

	pgExec(t, src, `ALTER TABLE src ADD COLUMN extra int`)
	pgExec(t, src, jsonPathSession+fmt.Sprintf(`UPDATE src SET %s, extra = 1 FROM (SELECT * FROM src WHERE id = 3) s3 WHERE src.id = 2;
UPDATE src SET j = 'null', js = 'null', ai = '[0:1]={7,8}', at = '[2:2]={"x y"}' WHERE id = 4;
INSERT INTO src (id, %[2]s) SELECT 5, %[2]s FROM src WHERE id = 4;
INSERT INTO src (id, j, js) VALUES (8, 'null', ' "a\u0041" ');
INSERT INTO src (id, j, js, ai) VALUES (9, NULL, '  {"a" :  null}  ', '[-1:0][1:1]={{1},{NULL}}');
DELETE FROM src WHERE id = 1;`, strings.Join(sets, ", "), list))
	runAll("after ADD COLUMN, the run brings the JSON rows in")

	pgExec(t, src, `ALTER TABLE src ALTER COLUMN extra TYPE bigint`)
	pgExec(t, src, jsonPathSession+`UPDATE src SET j = '[null]', js = ' null ', at = '[0:0]={NULL}', extra = 2 WHERE id = 2;
UPDATE src SET j = NULL, js = NULL WHERE id = 8;
INSERT INTO src (id, j, js, ai, at) VALUES (10, 'null', '"\u00fc" ', '[5:5]={5}', '{}');`)
	e.sql(src, `ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true')`)
	runAll("after ALTER COLUMN TYPE, enabling tracking again brings the JSON rows in")
}

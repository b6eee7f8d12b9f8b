package runner_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/internal/sqlitex"
	"github.com/sluicedata/sluice/plan"
)

// typeColumn is one column of the type matrix: its PostgreSQL type and
// one SQL literal per row (NULL allowed).
type typeColumn struct {
	name, typ string
	vals      [4]string
}

// toast is a 20 kB value: stored out of line (TOAST) by PostgreSQL.
var toast = strings.Repeat("ü€𝄞x", 2048)

// matrixColumns are the types of issue 15 with edge values: row 1 NULL in
// every column, row 2 ordinary values, rows 3 and 4 the empty, the
// largest and smallest, infinities, NaN, unicode, 2-D arrays with NULL
// elements and 20 kB TOASTed values.
var matrixColumns = []typeColumn{
	{"j", "jsonb", [4]string{"NULL", `'{"a": 1, "b": [true, null]}'`, `'{"pi": 3.14159265358979323846264338327950288419716939937510, "big": 1e400, "s": "` + toast + `"}'`, `'{}'`}},
	{"js", "json", [4]string{"NULL", `'{"b":2,  "b":1}'`, `'[]'`, `'"\u00fc"'`}},
	{"u", "uuid", [4]string{"NULL", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "'00000000-0000-0000-0000-000000000000'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'"}},
	{"ai", "integer[]", [4]string{"NULL", "'{1,2,3}'", "'{{1,NULL},{NULL,-2147483648}}'", "'{}'"}},
	{"at", "text[]", [4]string{"NULL", `'{"a,b","NULL",NULL,""}'`, `ARRAY['` + toast + `']`, `'{{"ü","x"},{"y",NULL}}'`}},
	{"an", "numeric[]", [4]string{"NULL", "'{1.50,NaN}'", "'{Infinity,-Infinity}'", "'{}'"}},
	{"iv", "interval", [4]string{"NULL", "'1 year 2 mons 3 days 04:05:06.789'", "'-178000000 years'", "'0'"}},
	{"ip", "inet", [4]string{"NULL", "'192.168.0.1/24'", "'::1'", "'2001:db8::ff00:42:8329/128'"}},
	{"cn", "cidr", [4]string{"NULL", "'10.0.0.0/8'", "'::/0'", "'192.168.1.0/24'"}},
	{"mac", "macaddr", [4]string{"NULL", "'08:00:2b:01:02:03'", "'ff:ff:ff:ff:ff:ff'", "'00:00:00:00:00:00'"}},
	{"m", "mood", [4]string{"NULL", "'happy'", "'sad ü'", "'1'"}},
	{"d", "posint", [4]string{"NULL", "1", "2147483647", "42"}},
	{"b", "bit(4)", [4]string{"NULL", "B'0101'", "B'0000'", "B'1111'"}},
	{"vb", "bit varying", [4]string{"NULL", "B'1'", "B''", "B'0000000001'"}},
	{"tm", "time without time zone", [4]string{"NULL", "'10:11:12.123456'", "'24:00:00'", "'00:00:00'"}},
	{"ttz", "time with time zone", [4]string{"NULL", "'10:00:00+05:30'", "'23:59:59.999999-15:59'", "'00:00:00+15:59'"}},
	{"n", "numeric", [4]string{"NULL", "'1234567890123456789012345678901234567890.0123456789012345678901234567890'", "'NaN'", "'-Infinity'"}},
	{"n2", "numeric(10,2)", [4]string{"NULL", "'12345678.90'", "'NaN'", "'-0.01'"}},
	{"mo", "money", [4]string{"NULL", "'1234.56'", "'-92233720368547758.08'", "'0'"}},
	{"x", "xml", [4]string{"NULL", "'<a b=\"1\">ü</a>'", "'text only'", "''"}},
	{"ts", "timestamp without time zone", [4]string{"NULL", "'2024-03-10 02:30:00.123456'", "'infinity'", "'-infinity'"}},
	{"tz", "timestamp with time zone", [4]string{"NULL", "'2024-01-02 03:04:05.123456+05:30'", "'-infinity'", "'infinity'"}},
	{"dt", "date", [4]string{"NULL", "'2024-02-29'", "'infinity'", "'-infinity'"}},
	{"r", "real", [4]string{"NULL", "'0.1'", "'NaN'", "'-Infinity'"}},
	{"dp", "double precision", [4]string{"NULL", "'1.7976931348623157e308'", "'4.9e-324'", "'NaN'"}},
	{"by", "bytea", [4]string{"NULL", `'\x00ff10'`, "''", `decode(repeat('ab', 10240), 'hex')`}},
	{"tx", "text", [4]string{"NULL", "''", "'" + toast + "'", "'naïve \"q\" ✓'"}},
}

// matrixDDL creates the enum and domain the matrix uses and, with table
// set, the table itself.
func matrixDDL(table string) string {
	ddl := `CREATE TYPE mood AS ENUM ('happy', 'sad ü', '1'); CREATE DOMAIN posint AS integer CHECK (VALUE > 0);`
	if table == "" {
		return ddl
	}
	defs := []string{"id integer PRIMARY KEY"}
	for _, c := range matrixColumns {
		defs = append(defs, fmt.Sprintf("%q %s", c.name, c.typ))
	}
	return ddl + fmt.Sprintf(" CREATE TABLE %s (%s);", table, strings.Join(defs, ", "))
}

func matrixInsert(table string) string {
	var rows []string
	for i := range 4 {
		vals := []string{fmt.Sprint(i + 1)}
		for _, c := range matrixColumns {
			vals = append(vals, c.vals[i])
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	return fmt.Sprintf("INSERT INTO %s VALUES %s", table, strings.Join(rows, ", "))
}

// textOrNull is *p quoted, or NULL.
func textOrNull(p *string) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *p)
}

func pgExec(t *testing.T, url, sql string) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql[:min(len(sql), 200)], err)
	}
}

// pgText reads table's rows as PostgreSQL's text of each column (its
// output function's; NULL as the Go nil), ordered by id: the values compared between databases.
// Text equality is stricter than equality (1.0 and 1.00 differ) and works
// for json and xml, which have no equality operator.
func pgText(t *testing.T, url, table string) [][]*string {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var cols []string
	for _, m := range matrixColumns {
		// The type's output function (format's %s), as psql prints it:
		// inet's ::text cast differs ('::1' is "::1/128").
		cols = append(cols, fmt.Sprintf("CASE WHEN %q IS NOT NULL THEN format('%%s', %q) END", m.name, m.name))
	}
	rows, err := c.Query(context.Background(), fmt.Sprintf("SELECT %s FROM %s ORDER BY id", strings.Join(cols, ", "), table))
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]*string, error) {
		v := make([]*string, len(matrixColumns))
		ptrs := make([]any, len(v))
		for i := range v {
			ptrs[i] = &v[i]
		}
		return v, r.Scan(ptrs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pgTypes returns format_type of table's matrix columns.
func pgTypes(t *testing.T, url, table string) []string {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var out []string
	for _, m := range matrixColumns {
		var s string
		if err := c.QueryRow(context.Background(), `SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2`, table, m.name).Scan(&s); err != nil {
			t.Fatalf("type of %s.%s: %v", table, m.name, err)
		}
		out = append(out, s)
	}
	return out
}

// compareMatrix reports every value of got that differs from want
// (PostgreSQL's text, pgText), by row id and column.
func compareMatrix(t *testing.T, path string, got, want [][]*string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", path, len(got), len(want))
		return
	}
	show := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		s := *p
		if len(s) > 60 {
			s = s[:60] + fmt.Sprintf("…(%d bytes)", len(*p))
		}
		return fmt.Sprintf("%q", s)
	}
	for i := range want {
		for j, m := range matrixColumns {
			g, w := got[i][j], want[i][j]
			if (g == nil) != (w == nil) || g != nil && *g != *w {
				t.Errorf("%s: id %d column %s (%s) = %s, want %s", path, i+1, m.name, m.typ, show(g), show(w))
			}
		}
	}
}

// TestTypeMatrix sends every PostgreSQL type of issue 15, with edge
// values, along every path: pushed down in one database (into a target
// created LIKE the source, and into one sluice creates), PostgreSQL →
// PostgreSQL (a target sluice creates in another database), PostgreSQL →
// SQLite, and that SQLite table → PostgreSQL again. Each arrival is
// compared with the source's own text of every value, and every target
// sluice creates on PostgreSQL with the source's column types. Then the
// rows change (an update of every value, a delete) and the next runs
// carry that too.
func TestTypeMatrix(t *testing.T) {
	src := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	back := pgtest.NewDatabase(t)
	e := newEnv(t)
	pgExec(t, src, matrixDDL("src")+" CREATE TABLE t_like (LIKE src INCLUDING ALL); CREATE TABLE t_sql (LIKE src INCLUDING ALL);")
	pgExec(t, other, matrixDDL(""))
	pgExec(t, back, matrixDDL(""))
	e.sql(src, `ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s_push ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s_new ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s_pg ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s_lite ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s_sql ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	pgExec(t, src, matrixInsert("src"))

	lite := e.conn("lite.db")
	jobs := map[string]string{
		"pushdown into LIKE":  "connection: '" + src + "'\nsource: s_push\nsink: {table: t_like, mode: merge, keys: [id]}\n",
		"pushdown, created":   "connection: '" + src + "'\nsource: s_new\nsink: {table: t_new, mode: merge, keys: [id]}\n",
		"postgres → postgres": "connection: '" + src + "'\nsource: s_pg\nsink: {table: t_pg, mode: merge, keys: [id], connection: '" + other + "'}\n",
		"postgres → sqlite":   "connection: '" + src + "'\nsource: s_lite\nsink: {table: t_lite, mode: merge, keys: [id], connection: '" + lite + "'}\n",
		"sqlite → postgres":   "connection: '" + lite + "'\nsource: s_back\nsink: {table: t_back, mode: merge, keys: [id], connection: '" + back + "'}\n",
	}
	var names, sets, vals []string
	for _, m := range matrixColumns {
		q := "`" + m.name + "`"
		names = append(names, q)
		sets = append(sets, fmt.Sprintf("t.%s = s.%s", q, q))
		vals = append(vals, "s."+q)
	}
	// The SQL job: MERGE INTO a LIKE target USING the stream.
	sqlJob := fmt.Sprintf(`-- name: sql_merge
-- connection: %s
MERGE INTO t_sql AS t
USING (SELECT id, %s, __change_type AS ct FROM s_sql WHERE __change_type <> 'UPDATE_BEFORE') AS s
ON t.id = s.id
WHEN MATCHED AND s.ct = 'DELETE' THEN DELETE
WHEN MATCHED THEN UPDATE SET %s
WHEN NOT MATCHED AND s.ct <> 'DELETE' THEN INSERT (id, %s) VALUES (s.id, %s);
`, src, strings.Join(names, ", "), strings.Join(sets, ", "), strings.Join(names, ", "), strings.Join(vals, ", "))
	order := []string{"sql MERGE pushdown", "pushdown into LIKE", "pushdown, created", "postgres → postgres", "postgres → sqlite", "sqlite → postgres"}
	targets := map[string][2]string{ // path → database, table
		"pushdown into LIKE":  {src, "t_like"},
		"sql MERGE pushdown":  {src, "t_sql"},
		"pushdown, created":   {src, "t_new"},
		"postgres → postgres": {other, "t_pg"},
		"sqlite → postgres":   {back, "t_back"},
	}
	runAll := func(round string) {
		t.Helper()
		for _, name := range order {
			var j *plan.Job
			if name == "sql MERGE pushdown" {
				j = e.job("sql_merge.sql", sqlJob)
			} else {
				j = e.job(strings.NewReplacer(" ", "_", "→", "to", ",", "").Replace(name)+".yaml", jobs[name])
			}
			if _, err := e.run(j); err != nil {
				t.Fatalf("%s, %s: %v", round, name, err)
			}
			if name == "postgres → sqlite" && round == "first run" {
				e.sql(lite, `ALTER TABLE t_lite SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s_back ON TABLE t_lite WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
			}
		}
		want := pgText(t, src, "src")
		for _, name := range order {
			if tg, ok := targets[name]; ok {
				compareMatrix(t, round+", "+name, pgText(t, tg[0], tg[1]), want)
			}
		}
	}
	runAll("first run")

	// Append (no merge) across databases: the staged text is cast too.
	e.sql(src, `CREATE TABLE STREAM s_app ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	if _, err := e.run(e.job("append.yaml", "connection: '"+src+"'\nsource: s_app\nsink: {table: t_app, mode: append, connection: '"+other+"'}\n")); err != nil {
		t.Fatalf("append: %v", err)
	}
	compareMatrix(t, "postgres → postgres append", pgText(t, other, "t_app"), pgText(t, src, "src"))

	// Targets sluice created on PostgreSQL have the source's types.
	srcTypes := pgTypes(t, src, "src")
	for _, tg := range [][2]string{{src, "t_new"}, {other, "t_pg"}, {back, "t_back"}} {
		got := pgTypes(t, tg[0], tg[1])
		for i, m := range matrixColumns {
			if tg[1] == "t_back" && m.typ == "posint" && got[i] == "integer" {
				continue // SQLite keeps a domain's base type (docs/types.md)
			}
			if got[i] != srcTypes[i] {
				t.Errorf("%s column %s: type %s, want the source's %s", tg[1], m.name, got[i], srcTypes[i])
			}
		}
	}

	// SQLite stores PostgreSQL's text of each value without a SQLite form,
	// byte for byte, under a declared type naming the PostgreSQL type.
	compareSQLiteText(t, "sqlite t_lite", openSQLite(t, lite), "t_lite", pgText(t, src, "src"))

	// Changes: every value of row 2 takes row 3's, row 4 is deleted, row
	// 5 is inserted with row 4's values.
	sets = nil
	for _, m := range matrixColumns {
		sets = append(sets, fmt.Sprintf("%q = s3.%q", m.name, m.name))
	}
	pgExec(t, src, fmt.Sprintf(`UPDATE src SET %s FROM (SELECT * FROM src WHERE id = 3) s3 WHERE src.id = 2;
INSERT INTO src SELECT 5, %s FROM src WHERE id = 4; DELETE FROM src WHERE id = 4;`,
		strings.Join(sets, ", "), strings.Join(func() []string {
			var c []string
			for _, m := range matrixColumns {
				c = append(c, fmt.Sprintf("%q", m.name))
			}
			return c
		}(), ", ")))
	runAll("second run")
}

// compareSQLiteText checks table of the SQLite database db against want
// (pgText of the source, by id): every value of a column declared
// "TEXT:<type>" is PostgreSQL's text byte for byte, stored as text, and
// every other column is NULL exactly where the source's is.
func compareSQLiteText(t *testing.T, what string, db *sql.DB, table string, want [][]*string) {
	t.Helper()
	declared := map[string]string{}
	rows, err := db.Query(fmt.Sprintf("SELECT name, type FROM pragma_table_info('%s') ORDER BY cid", table))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n, d string
		if err := rows.Scan(&n, &d); err != nil {
			t.Fatal(err)
		}
		declared[n] = d
	}
	rows.Close()
	for j, m := range matrixColumns {
		rows, err := db.Query(fmt.Sprintf(`SELECT %q, typeof(%q) FROM %q ORDER BY id`, m.name, m.name, table))
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for ; rows.Next(); i++ {
			var v *string
			var typ string
			if err := rows.Scan(&v, &typ); err != nil {
				t.Fatal(err)
			}
			if i >= len(want) {
				continue
			}
			if !strings.HasPrefix(declared[m.name], "TEXT:") {
				if (v == nil) != (want[i][j] == nil) {
					t.Errorf("%s row %d column %s (declared %s) = %s, want NULL exactly where the source's %s is", what, i+1, m.name, declared[m.name], textOrNull(v), textOrNull(want[i][j]))
				}
				continue
			}
			if (v == nil) != (want[i][j] == nil) || v != nil && (*v != *want[i][j] || typ != "text") {
				t.Errorf("%s row %d column %s (declared %s) = %s (%s), want PostgreSQL's text %s", what, i+1, m.name, declared[m.name], textOrNull(v), typ, textOrNull(want[i][j]))
			}
		}
		rows.Close()
		if i != len(want) {
			t.Errorf("%s: %d rows, want %d", what, i, len(want))
			return
		}
	}
}

func openSQLite(t *testing.T, url string) *sql.DB {
	t.Helper()
	loc, err := sqlitex.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlitex.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestTypeValueErrorInWords: a value that cannot go where it is sent
// stops the run with an error that names the job, the row's key, the
// column, the value and the type in words (never a Go type name), and the
// offset does not move.
func TestTypeValueErrorInWords(t *testing.T) {
	src := pgtest.NewDatabase(t)
	e := newEnv(t)
	pgExec(t, src, `CREATE TABLE src (id integer PRIMARY KEY, n numeric, at timestamptz)`)
	e.sql(src, `ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	pgExec(t, src, `INSERT INTO src VALUES (1, 1.5, '2024-01-01 00:00:00+00'), (7, 'Infinity', 'infinity')`)
	lite := e.conn("lite.db")
	e.sql(lite, "CREATE TABLE tgt (id INT, n DECIMAL(10,2), at TIMESTAMP, PRIMARY KEY (id))")
	// ignore: the target keeps its DECIMAL(10,2) (evolve would widen it to the source's numeric).
	j := e.job("inf_job.yaml", "connection: '"+src+"'\nsource: s\nsink: {table: tgt, mode: merge, keys: [id], on_schema_change: ignore, connection: '"+lite+"'}\n")
	_, err := e.run(j)
	if err == nil {
		t.Fatal("run succeeded; want the refusal of Infinity into DECIMAL(10,2)")
	}
	msg := err.Error()
	for _, want := range []string{"inf_job", "key (id=7)", `column "n"`, "infinity", "DECIMAL(10,2)", "not a finite number"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	for _, goName := range []string{"pgtype", "cdc.", "float64", "int64", "Modifier", "decimal.Decimal"} {
		if strings.Contains(msg, goName) {
			t.Errorf("error %q names Go's %q", msg, goName)
		}
	}
	if got := e.sql(lite, "SELECT count(*) FROM tgt"); !equalRows(got, [][]string{{"0"}}) {
		t.Errorf("target rows after the failed run: %v, want none", got)
	}
	if got := e.sql(src, "SELECT count(*) FROM s"); !equalRows(got, [][]string{{"2"}}) {
		t.Errorf("pending after the failed run: %v, want both rows", got)
	}
}

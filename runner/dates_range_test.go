package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/runner"
)

// rangeColumns are the columns of the far-dates table and, per row, their
// values: the ends of PostgreSQL's ranges (4713 BC, 294276 AD for the
// timestamps, 5874897 AD for a date), 1 BC and 1 AD around the missing
// year 0, ±infinity, and a negative zero in real and double precision.
var rangeColumns = []struct{ name, typ string }{
	{"tstz", "timestamptz"}, {"ts", "timestamp"}, {"d", "date"}, {"r", "real"}, {"f", "double precision"},
}

var rangeRows = [][5]string{
	{"'4713-01-01 00:00:00+00 BC'", "'4713-01-01 00:00:00 BC'", "'4713-01-01 BC'", "'-0'", "'-0'"},
	{"'0001-12-31 23:59:59.999999+00 BC'", "'0001-01-01 00:00:00 BC'", "'0001-01-01 BC'", "'0'", "'0'"},
	{"'0001-01-01 00:00:00+00'", "'0001-01-01 00:00:00'", "'0001-01-01'", "'1.5'", "'-1.5'"},
	{"'294276-12-31 23:59:59.999999+00'", "'294276-12-31 23:59:59.999999'", "'5874897-12-31'", "'Infinity'", "'-Infinity'"},
	{"'infinity'", "'infinity'", "'infinity'", "'NaN'", "'NaN'"},
	{"'-infinity'", "'-infinity'", "'-infinity'", "NULL", "NULL"},
	{"'2024-02-29 12:34:56.5+05:30'", "'9999-12-31 23:59:59.999999'", "'10000-01-01'", "'-1e-45'", "'-5e-324'"},
	{"'10000-01-01 00:00:00+00'", "'0002-02-28 01:00:00 BC'", "'0005-02-29 BC'", "'1e10'", "'1e300'"},
}

// rangeTable creates table in url with the far-dates columns and, with
// rows, inserts rangeRows (ids from 1).
func rangeTable(t *testing.T, url, table string, rows bool) {
	t.Helper()
	defs := []string{"id integer PRIMARY KEY"}
	for _, c := range rangeColumns {
		defs = append(defs, c.name+" "+c.typ)
	}
	ddl := fmt.Sprintf("CREATE TABLE %s (%s);", table, strings.Join(defs, ", "))
	if rows {
		var vals []string
		for i, r := range rangeRows {
			vals = append(vals, fmt.Sprintf("(%d, %s)", i+1, strings.Join(r[:], ", ")))
		}
		ddl += fmt.Sprintf(" INSERT INTO %s VALUES %s;", table, strings.Join(vals, ", "))
	}
	pgExec(t, url, ddl)
}

// rangeMismatches returns, for each row of src, the columns where dst
// differs from the value src holds (viaSQLite, a real or double precision
// -0 as 0, the form it takes through SQLite): IS DISTINCT FROM (the types'
// equality) or a different text (which tells -0 from 0, equal under =).
// Both tables are in url.
func rangeMismatches(t *testing.T, url, src, dst string, viaSQLite bool) []string {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var conds []string
	for _, col := range rangeColumns {
		want := "s." + col.name
		if viaSQLite && (col.typ == "real" || col.typ == "double precision") {
			// SQLite stores -0.0 as 0 (docs/types.md): -0 arrives as 0.
			want = fmt.Sprintf("CASE WHEN s.%[1]s = 0 THEN abs(s.%[1]s) ELSE s.%[1]s END", col.name)
		}
		conds = append(conds, fmt.Sprintf(`CASE WHEN %[2]s IS DISTINCT FROM d.%[1]s OR (%[2]s)::text IS DISTINCT FROM d.%[1]s::text
THEN format('id %%s %[1]s: %%s, want %%s', s.id, coalesce(d.%[1]s::text, 'NULL'), coalesce((%[2]s)::text, 'NULL')) END`, col.name, want))
	}
	q := fmt.Sprintf(`SELECT m FROM %s s LEFT JOIN %s d USING (id), LATERAL unnest(ARRAY[%s, CASE WHEN d.id IS NULL THEN format('id %%s missing', s.id) END]) m
WHERE m IS NOT NULL ORDER BY m`, src, dst, strings.Join(conds, ", "))
	rows, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFarDatesRoundTrip: dates and timestamps outside the common range
// (BC years, years of 5 and more digits) and ±infinity go PostgreSQL →
// SQLite → PostgreSQL and PostgreSQL → PostgreSQL and arrive as the
// source holds them, a real or double precision -0 as 0 through SQLite
// (docs/types.md) (a fresh user saw the SQLite → PostgreSQL job fail for
// good on "-4712-01-01 00:00:00+00:00"), through initial rows and through
// changes; what `sluice sql` reads from the SQLite copy is the source's
// value; `sluice diff` finds each copy equal (it failed with "date out of
// range for timestamp"), and shows a BC date as PostgreSQL writes it.
func TestFarDatesRoundTrip(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	rangeTable(t, pg, "src", true)
	e.sql(pg, `ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
CREATE TABLE STREAM s_pg ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	lite := e.conn("lite.db")
	there := "connection: '" + pg + "'\nsource: s\nsink: {table: t_lite, mode: merge, keys: [id], connection: '" + lite + "'}\n"
	back := "connection: '" + lite + "'\nsource: s_back\nsink: {table: t_back, mode: merge, keys: [id], connection: '" + pg + "'}\n"
	pgpg := "connection: '" + pg + "'\nsource: s_pg\nsink: {table: t_pg, mode: merge, keys: [id], connection: '" + other + "'}\n"
	for round := range 2 {
		if round == 1 {
			// Changes: each row takes the next row's values (rows go
			// through the change path, not only the initial rows).
			pgExec(t, pg, `UPDATE src SET tstz = n.tstz, ts = n.ts, d = n.d, r = n.r, f = n.f
FROM src n WHERE n.id = src.id % 8 + 1`)
		}
		for _, j := range []string{there, back, pgpg} {
			if round == 0 && j == back {
				e.sql(lite, `ALTER TABLE t_lite SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s_back ON TABLE t_lite WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
			}
			if _, err := e.run(e.job("job.yaml", j)); err != nil {
				t.Fatalf("round %d, %s: %v", round, j, err)
			}
		}
		for _, m := range rangeMismatches(t, pg, "src", "t_back", true) {
			t.Errorf("round %d, postgres → sqlite → postgres: %s", round, m)
		}
		pgExec(t, pg, "DROP TABLE IF EXISTS t_pg_copy")
		rangeTable(t, pg, "t_pg_copy", false)
		pgExec(t, pg, "INSERT INTO t_pg_copy VALUES "+strings.Join(rangeRowsText(t, other, "t_pg"), ", "))
		for _, m := range rangeMismatches(t, pg, "src", "t_pg_copy", false) {
			t.Errorf("round %d, postgres → postgres: %s", round, m)
		}
		// sluice sql on the SQLite copy reads the source's values.
		got := e.sql(lite, "SELECT id, tstz, ts, d FROM t_lite ORDER BY id")
		want := rangeTimes(t, pg)
		if len(got) != len(want) {
			t.Fatalf("round %d: sluice sql read %d rows of the SQLite copy, want %d", round, len(got), len(want))
		}
		for i, row := range got {
			for j, cell := range row[1:] {
				if !sameTime(cell, want[i][j]) {
					t.Errorf("round %d: sluice sql on the SQLite copy, id %s column %s = %q, want %v", round, row[0], rangeColumns[j].name, cell, want[i][j])
				}
			}
		}
		for _, j := range []string{there, back, pgpg} {
			res, err := e.diff(j, 10)
			if err != nil {
				t.Fatalf("round %d, diff %s: %v", round, j, err)
			}
			checkDiff(t, res, diffOutcome{})
		}
	}
	// Backfills, whose chunks pass as COPY text where the values allow:
	// PostgreSQL → SQLite, and that SQLite table → PostgreSQL.
	e.sql(pg, `CREATE TABLE STREAM s_bf ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`)
	bfThere := "connection: '" + pg + "'\nsource: s_bf\nsink: {table: t_bf, mode: merge, keys: [id], connection: '" + lite + "'}\n"
	if _, err := e.backfill(t.Context(), e.job("bf_there.yaml", bfThere), runner.BackfillOptions{Chunk: 3}); err != nil {
		t.Fatalf("backfill postgres → sqlite: %v", err)
	}
	e.sql(lite, `ALTER TABLE t_bf SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s_bf_back ON TABLE t_bf WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`)
	if _, err := e.backfill(t.Context(), e.job("bf_back.yaml", "connection: '"+lite+"'\nsource: s_bf_back\nsink: {table: t_bf_back, mode: merge, keys: [id], connection: '"+pg+"'}\n"), runner.BackfillOptions{Chunk: 3}); err != nil {
		t.Fatalf("backfill sqlite → postgres: %v", err)
	}
	for _, m := range rangeMismatches(t, pg, "src", "t_bf_back", true) {
		t.Errorf("backfill postgres → sqlite → postgres: %s", m)
	}

	// A difference in a BC date shows it as PostgreSQL writes it, on both
	// sides.
	var id int
	c, err := pgx.Connect(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(context.Background(), "SELECT id FROM t_pg WHERE d = '0001-01-01 BC'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(context.Background(), "UPDATE t_pg SET d = '0002-01-01 BC' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	if _, err := openSQLite(t, lite).ExecContext(context.Background(), "UPDATE t_lite SET d = '-0001-01-01' WHERE id = ?", id); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{there, pgpg} {
		res, err := e.diff(j, 10)
		if err != nil {
			t.Fatalf("diff after the change: %v", err)
		}
		checkDiff(t, res, diffOutcome{different: 1, examples: []string{fmt.Sprintf("different '%d' d:'0001-01-01 BC'→'0002-01-01 BC'", id)}})
	}
}

// rangeRowsText returns table's rows (of url) as SQL row literals of
// PostgreSQL's text of each value, cast to the column's type.
func rangeRowsText(t *testing.T, url, table string) []string {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var cols []string
	for _, col := range rangeColumns {
		cols = append(cols, fmt.Sprintf("coalesce(quote_literal(%s::text) || '::%s', 'NULL')", col.name, col.typ))
	}
	rows, err := c.Query(context.Background(), fmt.Sprintf("SELECT '(' || id || ', ' || concat_ws(', ', %s) || ')' FROM %s ORDER BY id", strings.Join(cols, ", "), table))
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rangeTimes returns src's tstz, ts and d of each row (by id) as pgx
// reads them: a time.Time, or the text of an infinity.
func rangeTimes(t *testing.T, url string) [][3]any {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(context.Background(), `SELECT CASE WHEN isfinite(tstz) THEN NULL ELSE tstz::text END, CASE WHEN isfinite(tstz) THEN tstz END,
CASE WHEN isfinite(ts) THEN NULL ELSE ts::text END, CASE WHEN isfinite(ts) THEN ts END,
CASE WHEN isfinite(d) THEN NULL ELSE d::text END, CASE WHEN isfinite(d) THEN d END FROM src ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var out [][3]any
	for rows.Next() {
		var inf [3]*string
		var tm [3]*time.Time
		if err := rows.Scan(&inf[0], &tm[0], &inf[1], &tm[1], &inf[2], &tm[2]); err != nil {
			t.Fatal(err)
		}
		var r [3]any
		for i := range r {
			switch {
			case inf[i] != nil:
				r[i] = *inf[i]
			case tm[i] != nil:
				r[i] = *tm[i]
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTime reports whether the text cell (cdc.FormatValue) is want: the
// same instant (a timestamp without time zone read as UTC), the same
// infinity, or NULL for nil.
func sameTime(cell string, want any) bool {
	switch w := want.(type) {
	case nil:
		return cell == "NULL"
	case string:
		return cell == w
	case time.Time:
		got, err := cdc.ParseTimestamp(cell)
		return err == nil && got.Equal(time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), time.UTC).Add(-zoneOffset(w)))
	}
	return false
}

func zoneOffset(t time.Time) time.Duration {
	_, off := t.Zone()
	return time.Duration(off) * time.Second
}

// TestFarDatesIntoDomain: a BC date or timestamp goes PostgreSQL →
// PostgreSQL into a column of a domain over date or timestamptz (staged
// as text and cast), as the source holds it.
func TestFarDatesIntoDomain(t *testing.T) {
	src := pgtest.NewDatabase(t)
	dst := pgtest.NewDatabase(t)
	e := newEnv(t)
	pgExec(t, src, `CREATE TABLE src (id int PRIMARY KEY, d date, ts timestamptz);
INSERT INTO src VALUES (1, '4713-01-01 BC', '4713-01-01 00:00:00+00 BC'), (2, '0001-12-31 BC', '0001-12-31 23:59:59.5+00 BC'), (3, '5874897-12-31', '294276-12-31 23:59:59.999999+00')`)
	pgExec(t, dst, `CREATE DOMAIN bcdate AS date; CREATE DOMAIN bcts AS timestamptz; CREATE TABLE tgt (id int PRIMARY KEY, d bcdate, ts bcts)`)
	e.sql(src, `ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	if _, err := e.run(e.job("dom.yaml", "connection: '"+src+"'\nsource: s\nsink: {table: tgt, mode: merge, keys: [id], connection: '"+dst+"'}\n")); err != nil {
		t.Fatal(err)
	}
	read := func(url, table string) [][]string {
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "SET TimeZone = 'UTC'"); err != nil {
			t.Fatal(err)
		}
		rows, err := c.Query(context.Background(), "SELECT id::text, d::text, ts::text FROM "+table+" ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
			var a, b, c string
			err := r.Scan(&a, &b, &c)
			return []string{a, b, c}, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := read(dst, "tgt"), read(src, "src"); len(want) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("target %v, want the source's %v", got, want)
	}
}

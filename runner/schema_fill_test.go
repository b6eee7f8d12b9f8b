package runner_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/runner"
)

// TestAddColumnFillsTarget: after ALTER TABLE … ADD COLUMN on a tracked
// table, a merge job under evolve adds the column to its target, and the
// target's rows that no change touches since hold what the source's rows
// hold — the DEFAULT's value (PostgreSQL's missing value, SQLite's
// constant DEFAULT), NULL without one — not NULL (issue #15). Every path:
// PostgreSQL → PostgreSQL (another database), pushed down, → SQLite;
// SQLite → PostgreSQL, pushed down, → another file. The application's
// statements come from a plain client; the check compares every row of
// the target with the source table's own rows, every current column
// (sameRows: IS NOT DISTINCT FROM in one PostgreSQL database, text
// otherwise). Then, on PostgreSQL, columns with a value per row (a
// volatile DEFAULT, serial): the pushed-down job fills them by key from
// the table; a job into another database refuses (ErrColumnUnfillable,
// nothing written, offset unmoved) until the column is in its target.
func TestAddColumnFillsTarget(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	lite := e.conn("t.db")
	paths := []schemaPath{
		{name: "postgres → postgres", src: pg, dst: other, prefix: "f_pg", pg: true},
		{name: "postgres pushdown", src: pg, dst: pg, prefix: "f_pp", pg: true},
		{name: "postgres → sqlite", src: pg, dst: lite, prefix: "f_pl", pg: true},
		{name: "sqlite → postgres", dst: other, prefix: "f_lg"},
		{name: "sqlite pushdown", prefix: "f_lp"},
		{name: "sqlite → sqlite", dst: lite, prefix: "f_ll"},
	}
	alter := map[string][]string{
		pg: {
			"UPDATE ac SET v = 'b2' WHERE id = 2",
			"ALTER TABLE ac ADD COLUMN score int DEFAULT 7",
			"ALTER TABLE ac ADD COLUMN label text DEFAULT 'it''s'",
			"ALTER TABLE ac ADD COLUMN amt numeric(10,2) DEFAULT 7.5",
			"ALTER TABLE ac ADD COLUMN tags text[] DEFAULT '{a,NULL,\"b c\"}'",
			"ALTER TABLE ac ADD COLUMN doc jsonb DEFAULT '{\"k\": [1.50, null]}'",
			"ALTER TABLE ac ADD COLUMN flag boolean DEFAULT true",
			"ALTER TABLE ac ADD COLUMN none int",
			"ALTER TABLE ac ALTER COLUMN score SET DEFAULT 8",
			"UPDATE ac SET score = 9, none = 1 WHERE id = 3",
			"INSERT INTO ac (id, v) VALUES (7, 'g')",
		},
		"": {
			"UPDATE ac SET v = 'b2' WHERE id = 2",
			"ALTER TABLE ac ADD COLUMN score INT DEFAULT 7",
			"ALTER TABLE ac ADD COLUMN label TEXT DEFAULT 'it''s'",
			"ALTER TABLE ac ADD COLUMN amt DECIMAL(10,2) DEFAULT '7.50'",
			"ALTER TABLE ac ADD COLUMN ratio DOUBLE DEFAULT 0.1",
			"ALTER TABLE ac ADD COLUMN neg INT DEFAULT -3",
			"ALTER TABLE ac ADD COLUMN none INT",
			"UPDATE ac SET score = 9, none = 1 WHERE id = 3",
			"INSERT INTO ac (id, v) VALUES (7, 'g')",
		},
	}
	job := func(p schemaPath) string {
		j := fmt.Sprintf("name: %s\nsource: s_%s\nsink: {table: %s_t, mode: merge, keys: [id]", p.prefix, p.prefix, p.prefix)
		if p.dst != p.src {
			j += ", connection: '" + p.dst + "'"
		}
		j += "}\n"
		if p.src != "" {
			j = "connection: '" + p.src + "'\n" + j
		}
		return j
	}
	run := func(p schemaPath) error {
		_, err := e.run(e.job(p.prefix+".yaml", job(p)))
		return err
	}
	pgExec(t, pg, "CREATE TABLE ac (id integer PRIMARY KEY, v text)")
	pgExec(t, pg, "INSERT INTO ac SELECT g, 'v' || g FROM generate_series(1, 6) g")
	e.sql("", "CREATE TABLE ac (id INT, v TEXT, PRIMARY KEY (id))")
	e.native("", "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 6) INSERT INTO ac SELECT n, 'v' || n FROM g")
	for _, c := range []string{pg, ""} {
		e.sql(c, "ALTER TABLE ac SET PROPERTIES ('change_tracking' = 'true')")
	}
	for _, p := range paths {
		e.sql(p.src, fmt.Sprintf("CREATE TABLE STREAM s_%s ON TABLE ac WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD', 'SHOW_INITIAL_ROWS' = 'true')", p.prefix))
		if err := run(p); err != nil {
			t.Fatalf("%s, first run: %v", p.name, err)
		}
	}
	all := []int{1, 2, 3, 4, 5, 6, 7}
	for _, src := range []string{pg, ""} {
		for _, q := range alter[src] {
			e.native(src, q)
		}
		var cols []string
		for _, c := range e.columns(src, "ac") {
			cols = append(cols, strings.Fields(c)[0])
		}
		for _, p := range paths {
			if p.src != src {
				continue
			}
			if err := run(p); err != nil {
				t.Fatalf("%s, run after ADD COLUMN: %v", p.name, err)
			}
			sameRows(t, e, p.name+", after ADD COLUMN with constant DEFAULTs", p, p.prefix+"_t", cols, all, 1)
		}
	}

	// Columns with a value per row.
	e.native(pg, "ALTER TABLE ac ADD COLUMN r float8 DEFAULT random()")
	e.native(pg, "ALTER TABLE ac ADD COLUMN u serial")
	e.native(pg, "UPDATE ac SET v = 'c2' WHERE id = 3")
	var cols []string
	for _, c := range e.columns(pg, "ac") {
		cols = append(cols, strings.Fields(c)[0])
	}
	for _, p := range paths {
		if p.src != pg {
			continue
		}
		err := run(p)
		if p.dst == pg {
			if err != nil {
				t.Fatalf("%s, run after ADD COLUMN with a volatile DEFAULT: %v", p.name, err)
			}
			sameRows(t, e, p.name+", after ADD COLUMN with a volatile DEFAULT and serial", p, p.prefix+"_t", cols, all, 2)
			continue
		}
		if !errors.Is(err, runner.ErrColumnUnfillable) || !errors.Is(err, runner.ErrSourceSchema) {
			t.Fatalf("%s, run after ADD COLUMN with a volatile DEFAULT: %v, want ErrColumnUnfillable", p.name, err)
		}
		for _, want := range []string{"column r", "random()", p.prefix + "_t", "offset did not move"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %q", p.name, err, want)
			}
		}
		if got := e.sql(p.dst, fmt.Sprintf("SELECT v FROM %s_t WHERE id = 3", p.prefix)); len(got) != 1 || got[0][0] != "b2" && got[0][0] != "v3" {
			t.Errorf("%s: refused run wrote row 3: %v", p.name, got)
		}
	}
	// The way on for the other database: the columns added to the target
	// and filled by hand from the source's values; the next run goes on.
	p := paths[0]
	vals := e.sql(pg, "SELECT id, r, u FROM ac ORDER BY id")
	e.native(other, "ALTER TABLE f_pg_t ADD COLUMN r float8, ADD COLUMN u integer")
	for _, row := range vals {
		e.native(other, fmt.Sprintf("UPDATE f_pg_t SET r = %s, u = %s WHERE id = %s", row[1], row[2], row[0]))
	}
	if err := run(p); err != nil {
		t.Fatalf("%s, run after the columns were added by hand: %v", p.name, err)
	}
	sameRows(t, e, p.name+", after the columns were added by hand", p, "f_pg_t", cols, all, 3)
}

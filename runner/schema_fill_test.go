package runner_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// volatile DEFAULT, serial): every merge job fills them by key from the
// table (pushed down by SQL, into another database through the run), and
// an append job keeps NULL in the rows it delivered before, with a plan
// warning.
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
		if err := run(p); err != nil {
			t.Fatalf("%s, run after ADD COLUMN with a volatile DEFAULT and serial: %v", p.name, err)
		}
		sameRows(t, e, p.name+", after ADD COLUMN with a volatile DEFAULT and serial", p, p.prefix+"_t", cols, all, 2)
	}

	// An append target holds images of changes delivered before the
	// column existed: they keep NULL (a plan warning says so), and every
	// change after the ALTER carries its value.
	e.sql(pg, "CREATE TABLE STREAM s_f_app ON TABLE ac WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY')")
	app := fmt.Sprintf("connection: '%s'\nname: f_app\nsource: s_f_app\nsink: {table: f_app_t, connection: '%s'}\n", pg, other)
	e.native(pg, "INSERT INTO ac (id, v) VALUES (8, 'h')")
	if _, err := e.run(e.job("app.yaml", app)); err != nil {
		t.Fatalf("append job, first run: %v", err)
	}
	e.native(pg, "ALTER TABLE ac ADD COLUMN w uuid DEFAULT gen_random_uuid()")
	e.native(pg, "INSERT INTO ac (id, v) VALUES (9, 'i')")
	prep, err := e.r.Plan(context.Background(), e.job("app.yaml", app))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(prep.Plan.Warnings, func(w string) bool { return strings.Contains(w, "column w") && strings.Contains(w, "keep NULL") }) {
		t.Errorf("plan warnings %q do not say that f_app_t's rows keep NULL in w", prep.Plan.Warnings)
	}
	if _, err := e.run(e.job("app.yaml", app)); err != nil {
		t.Fatalf("append job after ADD COLUMN w … DEFAULT gen_random_uuid(): %v", err)
	}
	want := e.sql(pg, "SELECT id, v, w FROM ac WHERE id = 9")
	if got := e.sql(other, "SELECT id, v, w FROM f_app_t WHERE id = 9"); !equalRows(got, want) || want[0][2] == "NULL" {
		t.Errorf("append target row 9 %v, want the source's %v", got, want)
	}
	if got := e.sql(other, "SELECT count(*) FROM f_app_t WHERE id = 8 AND w IS NULL"); got[0][0] != "1" {
		t.Errorf("append target row 8: %v rows with w NULL, want 1", got)
	}

	// A merge on keys that are not the source's primary key cannot find
	// its rows' source rows: the run refuses, nothing written, offset
	// unmoved, until the column is in the target.
	e.sql(pg, "CREATE TABLE STREAM s_f_k ON TABLE ac WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	kj := fmt.Sprintf("connection: '%s'\nname: f_k\nsource: s_f_k\nsink: {table: f_k_t, mode: merge, keys: [id, v], connection: '%s'}\n", pg, other)
	e.native(pg, "UPDATE ac SET v = 'h2' WHERE id = 8")
	if _, err := e.run(e.job("k.yaml", kj)); err != nil {
		t.Fatalf("merge on (id, v), first run: %v", err)
	}
	e.native(pg, "ALTER TABLE ac ADD COLUMN z float8 DEFAULT random()")
	e.native(pg, "UPDATE ac SET v = 'h3' WHERE id = 8")
	_, err = e.run(e.job("k.yaml", kj))
	if !errors.Is(err, runner.ErrColumnUnfillable) || !errors.Is(err, runner.ErrSourceSchema) {
		t.Fatalf("merge on (id, v) after ADD COLUMN z … DEFAULT random(): %v, want ErrColumnUnfillable", err)
	}
	for _, want := range []string{"column z", "random()", "f_k_t", "not the primary key", "offset did not move", "ADD COLUMN z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("merge on (id, v): error %q does not name %q", err, want)
		}
	}
	if got := e.sql(other, "SELECT count(*) FROM f_k_t WHERE v = 'h3'"); got[0][0] != "0" {
		t.Errorf("refused run wrote the update: %v", got)
	}
	e.native(other, "ALTER TABLE f_k_t ADD COLUMN z float8")
	if _, err := e.run(e.job("k.yaml", kj)); err != nil {
		t.Fatalf("merge on (id, v) after the column was added by hand: %v", err)
	}
	if got := e.sql(other, "SELECT count(*) FROM f_k_t WHERE v = 'h3' AND z IS NOT NULL"); got[0][0] != "1" {
		t.Errorf("merge on (id, v): %v rows h3 with z, want 1", got)
	}
}

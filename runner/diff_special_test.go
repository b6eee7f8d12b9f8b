package runner_test

import (
	"context"
	"testing"

	"github.com/sluicedata/sluice/internal/pgtest"
)

// TestDiffSpecialValues: PostgreSQL's infinity and -infinity (timestamptz,
// date) and NaN (numeric, double precision; -Infinity of the latter)
// copied to SQLite or PostgreSQL are equal to what
// the target stores (a fresh user saw `sluice diff` read the source's as
// NULL and report a correct copy DIFFERENT), and a real difference in such
// a row is still reported. The changes are written to the target's own
// storage (raw SQL), and the expected texts are PostgreSQL's own output
// for the values inserted. An inet host address ('::1', stored in SQLite
// as psql prints it) is equal to its copy, not '::1/128' against '::1'.
func TestDiffSpecialValues(t *testing.T) {
	cases := []struct {
		name   string
		change string // raw SQL on the target after the run
		want   diffOutcome
	}{
		{name: "equal", want: diffOutcome{}},
		{name: "infinity vs a time", change: "UPDATE tgt SET ts = '2024-01-15 10:00:00+00:00' WHERE id = 1",
			want: diffOutcome{different: 1, examples: []string{"different '1' ts:'infinity'→'2024-01-15 10:00:00+00:00'"}}},
		{name: "-infinity vs infinity", change: "UPDATE tgt SET d = 'infinity' WHERE id = 1",
			want: diffOutcome{different: 1, examples: []string{"different '1' d:'-infinity'→'infinity'"}}},
		{name: "a time vs infinity", change: "UPDATE tgt SET ts = 'infinity' WHERE id = 2",
			want: diffOutcome{different: 1, examples: []string{"different '2' ts:'2024-01-15 10:00:00+00:00'→'infinity'"}}},
		{name: "NaN vs a number", change: "UPDATE tgt SET n = 1 WHERE id = 1",
			want: diffOutcome{different: 1, examples: []string{"different '1' n:'NaN'→'1'"}}},
		{name: "inet host vs another", change: "UPDATE tgt SET ip = '10.1.2.4' WHERE id = 2",
			want: diffOutcome{different: 1, examples: []string{"different '2' ip:'10.1.2.3'→'10.1.2.4'"}}},
		{name: "NULL vs infinity", change: "UPDATE tgt SET d = NULL WHERE id = 2; UPDATE tgt SET d = 'infinity' WHERE id = 3",
			want: diffOutcome{different: 2, examples: []string{"different '2' d:'infinity'→NULL", "different '3' d:NULL→'infinity'"}}},
	}
	for _, p := range []struct{ name, tgt string }{
		{"postgres to sqlite", "tgt.db"},
		{"postgres to postgres", "pg"},
	} {
		t.Run(p.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					e := newEnv(t)
					src := pgtest.NewDatabase(t)
					tgt := e.conn(p.tgt)
					if p.tgt == "pg" {
						tgt = src
					}
					pgExec(t, src, `CREATE TABLE src (id int PRIMARY KEY, ts timestamptz, d date, n numeric, f float8, ip inet);
INSERT INTO src VALUES (1, 'infinity', '-infinity', 'NaN', 'NaN', '::1'), (2, '2024-01-15 10:00:00+00', 'infinity', 1.50, '-Infinity', '10.1.2.3'), (3, NULL, NULL, NULL, NULL, '10.0.0.0/8')`)
					e.sql(src, `ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
					j := "connection: '" + src + "'\nsource: src_s\nsink: {table: tgt, mode: merge, keys: [id], connection: '" + tgt + "'}\n"
					if _, err := e.run(e.job("diff.yaml", j)); err != nil {
						t.Fatal(err)
					}
					if tc.change != "" {
						if p.tgt == "pg" {
							pgExec(t, tgt, tc.change)
						} else if _, err := openSQLite(t, tgt).ExecContext(context.Background(), tc.change); err != nil {
							t.Fatal(err)
						}
					}
					res, err := e.diff(j, 4)
					if err != nil {
						t.Fatal(err)
					}
					if res.SourceRows != 3 || res.TargetRows != 3 {
						t.Errorf("rows compared: source %d, target %d, want 3 and 3", res.SourceRows, res.TargetRows)
					}
					checkDiff(t, res, tc.want)
				})
			}
		})
	}
}

// TestDiffJSON: a JSON column copied from SQLite (the application's
// compact text) into PostgreSQL (jsonb, which writes it spaced and with
// its keys ordered) and back is equal to its copy — a fresh user saw
// every row of such a job reported different — and a real difference in
// the document is still reported, with jsonb's text on both sides.
func TestDiffJSON(t *testing.T) {
	for _, p := range []struct{ name, src, tgt string }{
		{"sqlite to postgres", "sqlite", "pg"},
		{"postgres to sqlite", "pg", "sqlite"},
	} {
		t.Run(p.name, func(t *testing.T) {
			e := newEnv(t)
			pg := pgtest.NewDatabase(t)
			src, tgt := e.conn("src.db"), pg
			if p.src == "pg" {
				src, tgt = pg, e.conn("tgt.db")
			}
			e.sql(src, `CREATE TABLE js (id INT, doc JSON, PRIMARY KEY (id));
ALTER TABLE js SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM js_s ON TABLE js WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
INSERT INTO js VALUES (1, '{"b":[1.50,null,"x"],"a":{"z":1,"y":true}}'), (2, '{"a":1,"n":null}'), (3, NULL);`)
			j := "connection: '" + src + "'\nsource: js_s\nsink: {table: js_copy, mode: merge, keys: [id], connection: '" + tgt + "'}\n"
			if _, err := e.run(e.job("j.yaml", j)); err != nil {
				t.Fatal(err)
			}
			res, err := e.diff(j, 4)
			if err != nil {
				t.Fatal(err)
			}
			if res.SourceRows != 3 || res.TargetRows != 3 {
				t.Errorf("rows compared: source %d, target %d, want 3 and 3", res.SourceRows, res.TargetRows)
			}
			checkDiff(t, res, diffOutcome{})
			change := `UPDATE js_copy SET doc = '{"a":2,"n":null}' WHERE id = 2`
			if p.tgt == "pg" {
				pgExec(t, tgt, change)
			} else if _, err := openSQLite(t, tgt).ExecContext(context.Background(), change); err != nil {
				t.Fatal(err)
			}
			res, err = e.diff(j, 4)
			if err != nil {
				t.Fatal(err)
			}
			checkDiff(t, res, diffOutcome{different: 1, examples: []string{`different '2' doc:'{"a": 1, "n": null}'→'{"a": 2, "n": null}'`}})
		})
	}
}

package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/internal/pgtest"
	_ "github.com/sluicedata/sluice/sources/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Rows cross backends exactly: SQLite → PostgreSQL, then PostgreSQL →
// SQLite, each a merge with the checkpoint in the sink database. DECIMAL
// values, NULLs and a reserved-word column survive both hops.
func TestSQLiteToPostgresToSQLite(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	e := newEnv(t)
	e.sql("", `
CREATE TABLE src (id INT, `+"`user`"+` STRING, amount DECIMAL(38,10), PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');
INSERT INTO src VALUES (1, 'ann', 1234567890123456789012345678.0123456789), (2, NULL, 0.5), (3, 'cy', -7);
`)
	toPG := e.job("to_pg.yaml", "source: src_s\nsink: {table: mid, mode: merge, keys: [id], connection: '"+pg+"'}\n")
	if _, err := e.run(toPG); err != nil {
		t.Fatal(err)
	}
	e.sql(pg, `ALTER TABLE mid SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM mid_s ON TABLE mid WITH PROPERTIES ('SHOW_INITIAL_ROWS' = 'TRUE');`)
	back := e.conn("back.db")
	toSQLite := e.job("to_sqlite.yaml", "connection: '"+pg+"'\nsource: mid_s\nsink: {table: back, mode: merge, keys: [id], connection: '"+back+"'}\n")
	if _, err := e.run(toSQLite); err != nil {
		t.Fatal(err)
	}
	// Changes flow through both hops too.
	e.sql("", "UPDATE src SET amount = 2.5 WHERE id = 2; DELETE FROM src WHERE id = 3; INSERT INTO src VALUES (4, 'dee', 99.0000000001);")
	for _, j := range []string{"to_pg", "to_sqlite"} {
		job := toPG
		if j == "to_sqlite" {
			job = toSQLite
		}
		if _, err := e.run(job); err != nil {
			t.Fatalf("%s: %v", j, err)
		}
	}
	want := [][]string{
		{"1", "ann", "1234567890123456789012345678.0123456789"},
		{"2", "NULL", "2.5000000000"},
		{"4", "dee", "99.0000000001"},
	}
	for name, got := range map[string][][]string{
		"postgres mid": e.sql(pg, "SELECT id, `user`, amount FROM mid ORDER BY id"),
		"sqlite back":  e.sql(back, "SELECT id, `user`, amount FROM back ORDER BY id"),
	} {
		if !equalRows(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// TestPushdownValueErrorNamesRow: a pushed-down run that fails on a row's
// value (a DECIMAL that overflows the target's column, a NULL into a NOT
// NULL column) is replayed through sluice without committing, so the error
// names the row's key and the column; nothing is written, the offset does
// not move, and once the target or the data is fixed the next run applies
// every pending change.
func TestPushdownValueErrorNamesRow(t *testing.T) {
	for _, tc := range []struct {
		name, target, rows, column string
		setup, fix                 string // SQL (PostgreSQL's) before the first run and after its failure
		after                      [][]string
	}{
		{"overflow", "CREATE TABLE tgt (id INT, amount DECIMAL(4,2), PRIMARY KEY (id));", "(1, 1.50), (2, 200.00), (3, 3.00)", "amount",
			"", `ALTER TABLE tgt ALTER COLUMN amount TYPE numeric(10,2)`, [][]string{{"1", "1.50"}, {"2", "200.00"}, {"3", "3.00"}}},
		{"NOT NULL", "CREATE TABLE tgt (id INT, amount DECIMAL(10,2), PRIMARY KEY (id));", "(1, 1.50), (2, NULL), (3, 3.00)", "amount",
			`ALTER TABLE tgt ALTER COLUMN amount SET NOT NULL`, `UPDATE src SET amount = 2 WHERE id = 2`, [][]string{{"1", "1.50"}, {"2", "2.00"}, {"3", "3.00"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := pgtest.NewDatabase(t)
			e := newEnv(t)
			e.sql(pg, `
CREATE TABLE src (id INT, amount DECIMAL(10,2), PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`+tc.target+`
INSERT INTO src VALUES `+tc.rows+`;
`)
			c, err := pgx.Connect(context.Background(), pg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			if tc.setup != "" {
				if _, err := c.Exec(context.Background(), tc.setup); err != nil {
					t.Fatal(err)
				}
			}
			// ignore: the target keeps its narrower column (evolve would widen it).
			job := e.job("push.yaml", "connection: '"+pg+"'\nsource: src_s\nsink: {table: tgt, mode: merge, keys: [id], on_schema_change: ignore}\n")
			_, err = e.run(job)
			if err == nil {
				t.Fatal("run succeeded; want the failure of id 2")
			}
			for _, want := range []string{"key (id=2)", `column "` + tc.column + `"`, "pushed-down run failed", "nothing committed"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if got := e.sql(pg, "SELECT count(*) FROM tgt"); !equalRows(got, [][]string{{"0"}}) {
				t.Errorf("target rows after the failed run: %v, want none", got)
			}
			// Fix the target or the data: the next run applies every pending change.
			if _, err := c.Exec(context.Background(), tc.fix); err != nil {
				t.Fatal(err)
			}
			if _, err := e.run(job); err != nil {
				t.Fatal(err)
			}
			if got := e.sql(pg, "SELECT id, amount FROM tgt ORDER BY id"); !equalRows(got, tc.after) {
				t.Errorf("target after the fix: %v", got)
			}
		})
	}
}

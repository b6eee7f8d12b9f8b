package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// pgDeadLetters reads job's dead letters from table of the PostgreSQL
// database url, in id order: the key as text, the change type, the row's
// price and name as the JSON holds them, the error.
func pgDeadLetters(t *testing.T, url, table, job string) []dlRow {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(context.Background(), `SELECT "key"::text, "change_type", "row"::text, "error" FROM "`+table+`" WHERE "job" = $1 ORDER BY "id"`, job)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []dlRow
	for rows.Next() {
		var d dlRow
		if err := rows.Scan(&d.Key, &d.Op, &d.Row, &d.Err); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// pgScalar returns the first column of the first row of query as text.
func pgScalar(t *testing.T, url, query string) string {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var s string
	if err := c.QueryRow(context.Background(), query).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s
}

const dlSourceRows = `INSERT INTO src VALUES
 (1, 'ok1', 1, 1.00, 'a@x'),
 (2, 'neg', -1, 1.00, 'b@x'),
 (3, NULL, 1, 1.00, 'c@x'),
 (4, 'toolongname', 1, 1.00, 'd@x'),
 (5, 'wide', 1, 123.45, 'e@x'),
 (6, 'dup', 1, 1.00, 'taken@x'),
 (7, 'ok7', 7, 7.00, 'g@x')`

// dlPGTarget refuses ids 2 (CHECK), 3 (NOT NULL), 4 (length), 5 (numeric
// overflow) and 6 (UNIQUE email held by id 100) of dlSourceRows.
const dlPGTarget = `CREATE TABLE %s (id integer PRIMARY KEY, name varchar(5) NOT NULL, qty integer CHECK (qty >= 0), price numeric(4,2), email text UNIQUE);
INSERT INTO %s VALUES (100, 'old', 1, 1.00, 'taken@x')`

// TestPostgresDeadLetterKinds: on every path into a PostgreSQL target —
// pushed down in one database, PostgreSQL → PostgreSQL, SQLite →
// PostgreSQL — each kind of rejected row (CHECK, NOT NULL, varchar
// length, numeric overflow, a UNIQUE value another target row holds) goes
// to the dead-letter table with its key, change type and reason, and
// its row exactly (the DECIMAL as a string); the good rows land, the
// offset moves, and a second run delivers nothing again. The jobs set
// on_schema_change: ignore, so that the narrower target columns stay as
// they are (evolve would widen them).
func TestPostgresDeadLetterKinds(t *testing.T) {
	pg := pgtest.NewDatabase(t)
	other := pgtest.NewDatabase(t)
	e := newEnv(t)
	lite := ""
	for _, c := range []string{pg, lite} {
		e.sql(c, `CREATE TABLE src (id INT, name STRING, qty INT, price DECIMAL(10,2), email STRING, PRIMARY KEY (id));
ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM s1 ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
CREATE TABLE STREAM s2 ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`)
		e.sql(c, dlSourceRows)
	}
	pgExec(t, pg, strings.ReplaceAll(dlPGTarget, "%s", "t_push"))
	pgExec(t, other, strings.ReplaceAll(dlPGTarget, "%s", "t_pg")+";"+strings.ReplaceAll(dlPGTarget, "%s", "t_back"))
	type path struct{ name, job, src, dst, table, stream string }
	paths := []path{
		{"postgres pushdown", "name: push\nconnection: '" + pg + "'\nsource: s1\nsink: {table: t_push, mode: merge, keys: [id], dead_letter: rejects, on_schema_change: ignore}\n", pg, pg, "t_push", "s1"},
		{"postgres → postgres", "name: pgpg\nconnection: '" + pg + "'\nsource: s2\nsink: {table: t_pg, mode: merge, keys: [id], dead_letter: rejects, on_schema_change: ignore, connection: '" + other + "'}\n", pg, other, "t_pg", "s2"},
		{"sqlite → postgres", "name: litepg\nsource: s1\nsink: {table: t_back, mode: append, dead_letter: rejects, on_schema_change: ignore, connection: '" + other + "'}\n", lite, other, "t_back", "s1"},
	}
	reasons := []struct{ key, reason string }{
		{`{"id": 2}`, "check constraint"},
		{`{"id": 3}`, "null"},
		{`{"id": 4}`, "too long"},
		{`{"id": 5}`, "price"},
		{`{"id": 6}`, "duplicate key"},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			job := e.job(p.name+".yaml", p.job)
			res, err := e.run(job)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.DeadLettered != 5 {
				t.Errorf("dead-lettered %d, want 5", res.Stats.DeadLettered)
			}
			got := pgDeadLetters(t, p.dst, "rejects", job.Name)
			if len(got) != len(reasons) {
				t.Fatalf("dead letters %+v, want %d", got, len(reasons))
			}
			for i, w := range reasons {
				if got[i].Key != w.key || got[i].Op != "INSERT" || !strings.Contains(strings.ToLower(got[i].Err), w.reason) {
					t.Errorf("dead letter %d = %+v, want key %s, INSERT, error containing %q", i, got[i], w.key, w.reason)
				}
			}
			if price := pgScalar(t, p.dst, `SELECT "row"->>'price' FROM rejects WHERE job = '`+job.Name+`' AND "key"->>'id' = '5'`); price != "123.45" {
				t.Errorf("row of id 5 holds price %s, want the string 123.45", price)
			}
			if ids := pgScalar(t, p.dst, "SELECT string_agg(id::text, ',' ORDER BY id) FROM "+p.table); ids != "1,7,100" {
				t.Errorf("target ids %s, want 1,7,100", ids)
			}
			if n := pendingOn(t, e, p.src, p.stream); n != 0 {
				t.Errorf("%d changes pending after the run, want none (the offset moved)", n)
			}
			res, err = e.run(job)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stats.DeadLettered != 0 || sum(res.Stats.Read) != 0 {
				t.Errorf("second run read %v, dead-lettered %d; want nothing", res.Stats.Read, res.Stats.DeadLettered)
			}
			if got := pgDeadLetters(t, p.dst, "rejects", job.Name); len(got) != 5 {
				t.Errorf("dead letters after the second run: %d, want 5", len(got))
			}
		})
	}
}

// pendingOn counts the pending changes of stream on conn.
func pendingOn(t *testing.T, e *env, conn, stream string) int {
	t.Helper()
	b, err := e.r.Backend(context.Background(), conn)
	if err != nil {
		t.Fatal(err)
	}
	src := b.(runner.Source)
	info, err := src.Stream(context.Background(), plan.Source{Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := src.Changes(context.Background(), info, info.Offset, runner.ReadOptions{BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	n := 0
	for {
		batch, err := rd.Next(context.Background())
		if err != nil {
			return n
		}
		n += len(batch)
	}
}

package runner_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// The SQLite → SQLite backfill copies its chunks inside SQLite
// (runner.EngineCopier; sources/sqlite backfill_pushdown.go): into the
// source's own file, or another file with the source attached.

// engineSinks are the two placements of the target: "" is the source's
// file.
var engineSinks = []struct{ name, file string }{{"same file", ""}, {"other file", "sink.db"}}

// logTo makes e's runner log into a buffer, returned.
func logTo(e *env) *bytes.Buffer {
	var buf bytes.Buffer
	e.r.Log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &buf
}

// quoted returns SQLite's quote() of every column of q's rows, as the
// stored values are (storage class and text), one row per line.
func quoted(e *env, conn, table, cols, order string) string {
	e.t.Helper()
	if conn == "" {
		conn = e.r.Conn
	}
	var parts []string
	for _, c := range strings.Split(cols, ",") {
		parts = append(parts, "quote("+strings.TrimSpace(c)+")")
	}
	rows, err := openSQLite(e.t, conn).Query("SELECT " + strings.Join(parts, " || ' ' || ") + " FROM " + table + " ORDER BY " + order)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// TestBackfillEngineValues copies every column type sluice stores in
// SQLite, stored the way sluice writes them and the way an application
// may (a REAL in a DECIMAL column of NUMERIC affinity, '2' for 2.00, an
// ISO timestamp with 'T' and 'Z', 'true' for a boolean), and NULLs, from a
// table named order with a column named user: the target holds what a
// copy through sluice writes (sqlitex.Encode's forms), listed here by
// hand — except that a value of the right storage class in a column
// declared as sluice declares its type (big DECIMAL_TEXT(30,10), at
// TIMESTAMP, ntz TIMESTAMP_NTZ) is copied as stored ('5', the 'T' forms),
// as a run's pushdown copies it; a value of another class (the text
// 'false' in b BOOLEAN) and every value of a column declared otherwise
// (amount DECIMAL(12,2)) are converted.
func TestBackfillEngineValues(t *testing.T) {
	const want = `1 'ann' 7 1 1.5 '12.50' '123.0000000001' '2024-01-15' '2024-01-15 10:00:00.5+08:00' '2024-01-15 10:00:00.25' X'00FF'
2 'bob' 8 0 2.0 '2.00' '5' '2024-01-16' '2024-01-16T10:00:00Z' '2024-01-16T10:00:00' X'01'
3 NULL NULL NULL NULL NULL NULL NULL NULL NULL NULL
4 'naïve ✓ ''q''' -2147483648 1 -0.25 '-0.05' '-0.0000000001' '1999-12-31' '1999-12-31 23:59:59.999999-05:30' '1999-12-31 23:59:59.000001' X''`
	for _, s := range engineSinks {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t)
			logs := logTo(e)
			e.native("", `CREATE TABLE "order" (id BIGINT NOT NULL PRIMARY KEY, "user" TEXT, i INT, b BOOLEAN, d DOUBLE, amount DECIMAL(12,2), big DECIMAL_TEXT(30,10), dt DATE, at TIMESTAMP, ntz TIMESTAMP_NTZ, bin BLOB);
INSERT INTO "order" VALUES (1, 'ann', 7, 1, 1.5, 12.5, '123.0000000001', '2024-01-15', '2024-01-15 10:00:00.5+08:00', '2024-01-15 10:00:00.25', X'00ff');
INSERT INTO "order" VALUES (2, 'bob', 8, 'false', 2, '2', '5', '2024-01-16', '2024-01-16T10:00:00Z', '2024-01-16T10:00:00', X'01');
INSERT INTO "order" VALUES (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO "order" VALUES (4, 'naïve ✓ ''q''', -2147483648, 'true', -0.25, '-0.05', '-0.0000000001', '1999-12-31', '1999-12-31 23:59:59.999999-05:30', '1999-12-31 23:59:59.000001', X'');`)
			e.sql("", "ALTER TABLE `order` SET PROPERTIES ('change_tracking' = 'true');\nCREATE TABLE STREAM s ON TABLE `order` WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');")
			conn := ""
			if s.file != "" {
				conn = e.conn(s.file)
			}
			sink := "table: copy, mode: append"
			if conn != "" {
				sink += ", connection: " + conn
			}
			j := e.job("j.yaml", "source: s\nsink: {"+sink+"}\n")
			res, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 3})
			if err != nil {
				t.Fatal(err)
			}
			if res.Rows != 4 || res.Chunks != 2 || res.Written[1] != 4 && res.Written[0]+res.Written[1] != 4 {
				t.Errorf("result: %d rows, %d chunks, written %v; want 4 rows in 2 chunks", res.Rows, res.Chunks, res.Written)
			}
			got := quoted(e, conn, "copy", `id, "user", i, b, d, amount, big, dt, at, ntz, bin`, "id")
			if got != want {
				t.Errorf("target:\n%s\nwant:\n%s", got, want)
			}
			if strings.Contains(logs.String(), "through sluice") {
				t.Errorf("the copy went through sluice:\n%s", logs)
			}
			if p := e.pending("s"); len(p) != 0 {
				t.Errorf("pending after the backfill = %v", p)
			}
		})
	}
}

// TestBackfillEngineFilterProjection: the job's filter and projection run
// as SQL in the copy, with the values a copy through sluice produces.
func TestBackfillEngineFilterProjection(t *testing.T) {
	var want []string
	for i := 1; i <= 30; i++ {
		if i%3 == 0 || i == 10 {
			continue
		}
		want = append(want, fmt.Sprintf("[%d N%d %d.%02d INSERT]", i, i, i*100, i))
	}
	for _, s := range engineSinks {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t)
			logs := logTo(e)
			e.items(30)
			conn := ""
			sink := "table: copy, mode: append"
			if s.file != "" {
				conn = e.conn(s.file)
				sink += ", connection: " + conn
			}
			j := e.job("j.yaml", "source: items_s\nfilter: \"id % 3 <> 0 AND name <> 'n10'\"\nselect: [id, \"upper(name) AS uname\", amount, \"`__change_type` AS op\"]\nsink: {"+sink+"}\n")
			if _, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 7}); err != nil {
				t.Fatal(err)
			}
			got := e.rows(conn, "SELECT id, uname, amount, op FROM copy ORDER BY id")
			if w := "[" + strings.Join(want, " ") + "]"; got != w {
				t.Errorf("target = %s\nwant %s", got, w)
			}
			if strings.Contains(logs.String(), "through sluice") {
				t.Errorf("the copy went through sluice:\n%s", logs)
			}
		})
	}
}

// TestBackfillEngineChangesAndResume: changes to the source between chunks
// make the rest of the copy read the snapshot through sluice; an
// interrupted merge backfill resumes; afterwards a run brings the
// changes, and the target equals the source — on the same file and on
// another.
func TestBackfillEngineChangesAndResume(t *testing.T) {
	for _, s := range engineSinks {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t)
			logs := logTo(e)
			e.items(30)
			conn := ""
			sink := "table: copy, mode: merge, keys: [id]"
			if s.file != "" {
				conn = e.conn(s.file)
				sink += ", connection: " + conn
			}
			j := e.job("j.yaml", "source: items_s\nsink: {"+sink+"}\n")
			// Interrupted after two chunks copied inside SQLite.
			e.interrupt(j, 2)
			if got := e.rows(conn, "SELECT count(*), max(id) FROM copy"); got != "[[8 8]]" {
				t.Fatalf("after the interruption: %s, want 8 rows", got)
			}
			e.sql("", `UPDATE items SET name = 'upd-copied' WHERE id = 3;
UPDATE items SET name = 'upd-later' WHERE id = 20;
DELETE FROM items WHERE id = 5;`)
			// Resumed: the catch-up, then chunks; a change between two of
			// them sends the rest through the snapshot.
			res, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 4, Progress: func(_ context.Context, p runner.BackfillProgress) {
				if p.Phase == "copy" && p.Chunks == 2 {
					e.sql("", `INSERT INTO items VALUES (100, 'new', 1.00);
UPDATE items SET name = 'upd-during' WHERE id = 28;
DELETE FROM items WHERE id = 4;`)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Resumed || res.CaughtUp == 0 {
				t.Errorf("result = %+v, want a resumed backfill with a catch-up", res)
			}
			if !strings.Contains(logs.String(), "the source table changed since the snapshot") {
				t.Errorf("no fallback to the snapshot was logged:\n%s", logs)
			}
			if _, err := e.run(j); err != nil {
				t.Fatal(err)
			}
			if src, dst := e.rows("", itemsQuery), e.rows(conn, "SELECT id, name, amount FROM copy ORDER BY id"); src != dst {
				t.Fatalf("target differs from source:\n src %s\n dst %s", src, dst)
			}
		})
	}
}

// TestBackfillEngineValueError: a value that does not fit fails the
// backfill with an error naming the row's key and the column (the chunk
// is copied again through sluice to name it); earlier chunks stay.
func TestBackfillEngineValueError(t *testing.T) {
	for _, s := range engineSinks {
		// DECIMAL(5,2) (NUMERIC affinity) is normalized in SQL, whose
		// sluice_sink_fit refuses 'abc'; DECIMAL_TEXT(5,2), as sluice
		// declares it, is copied as stored and the target's CHECK refuses
		// it: either way the chunk is copied again through sluice.
		for _, tc := range []struct{ name, decl, want string }{
			{"decimal", "DECIMAL(5,2)", "1 '1.50'\n2 '2.50'"},
			{"decimal_text", "DECIMAL_TEXT(5,2)", "1 '1.50'\n2 '2.5'"}, // as stored (TEXT affinity)
		} {
			t.Run(s.name+" "+tc.name, func(t *testing.T) {
				e := newEnv(t)
				e.native("", `CREATE TABLE t (id INTEGER PRIMARY KEY, amount `+tc.decl+`);
INSERT INTO t VALUES (1, '1.50'), (2, 2.5), (3, 'abc'), (4, 4);`)
				e.sql("", "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true');\nCREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');")
				conn := ""
				sink := "table: copy, mode: append"
				if s.file != "" {
					conn = e.conn(s.file)
					sink += ", connection: " + conn
				}
				j := e.job("j.yaml", "source: s\nsink: {"+sink+"}\n")
				_, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 2})
				if err == nil || !strings.Contains(err.Error(), "id=3") || !strings.Contains(err.Error(), "amount") {
					t.Fatalf("err = %v, want one naming key id=3 and column amount", err)
				}
				if got := quoted(e, conn, "copy", "id, amount", "id"); got != tc.want {
					t.Errorf("target = %q, want the first chunk only, %q", got, tc.want)
				}
			})
		}
	}
}

// TestBackfillEngineDryRun: the plan shows the SQL of a chunk copied
// inside SQLite.
func TestBackfillEngineDryRun(t *testing.T) {
	e := newEnv(t)
	e.items(30)
	sink := e.conn("sink.db")
	j := e.job("j.yaml", "source: items_s\nsink: {table: copy, mode: append, connection: "+sink+"}\n")
	prep, err := e.r.Plan(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := e.r.PlanBackfill(t.Context(), prep, runner.BackfillOptions{Chunk: 7})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := plan.Format(&text, bp.Plan); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"ATTACH DATABASE 'file:", "?mode=ro' AS sluice_src", `INSERT INTO "copy" ("id", "name", "amount") SELECT`, `FROM sluice_src."items" AS __t WHERE (__t."id") > (?) ORDER BY __t."id" LIMIT ?`, "sluice_checkpoints", "COMMIT"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("plan lacks %q:\n%s", w, text.String())
		}
	}
	if _, err := e.r.Backfill(t.Context(), prep, runner.BackfillOptions{Chunk: 7}); err != nil {
		t.Fatal(err)
	}
	if src, dst := e.rows("", itemsQuery), e.rows(sink, "SELECT id, name, amount FROM copy ORDER BY id"); src != dst {
		t.Fatalf("target differs from source:\n src %s\n dst %s", src, dst)
	}
}

// TestBackfillEngineClasses: in columns whose stored form is a storage
// class alone (BIGINT integer, TEXT text, DOUBLE real, BLOB blob), a value
// of another class is converted as a copy through sluice converts it
// (sluice_sink_fit: a BLOB in a TEXT column arrives as its text, a TEXT in
// a BLOB column as its bytes), NULL stays NULL and a value of the class is
// copied as stored.
func TestBackfillEngineClasses(t *testing.T) {
	const want = `1 'ann' 1.5 X'00FF'
2 'hi' 2.5 X'6162'
3 NULL NULL NULL
4 '' -0.25 X''`
	for _, s := range engineSinks {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t)
			logs := logTo(e)
			e.native("", `CREATE TABLE c (id BIGINT NOT NULL PRIMARY KEY, "user" TEXT, d DOUBLE, bin BLOB);
INSERT INTO c VALUES (1, 'ann', 1.5, X'00ff'), (2, X'6869', X'322e35', 'ab'), (3, NULL, NULL, NULL), (4, '', -0.25, X'');`)
			e.sql("", "ALTER TABLE c SET PROPERTIES ('change_tracking' = 'true');\nCREATE TABLE STREAM s ON TABLE c WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');")
			conn := ""
			sink := "table: copy, mode: append"
			if s.file != "" {
				conn = e.conn(s.file)
				sink += ", connection: " + conn
			}
			j := e.job("j.yaml", "source: s\nsink: {"+sink+"}\n")
			if _, err := e.backfill(t.Context(), j, runner.BackfillOptions{Chunk: 3}); err != nil {
				t.Fatal(err)
			}
			if got := quoted(e, conn, "copy", `id, "user", d, bin`, "id"); got != want {
				t.Errorf("target:\n%s\nwant:\n%s", got, want)
			}
			if strings.Contains(logs.String(), "through sluice") {
				t.Errorf("the copy went through sluice:\n%s", logs)
			}
		})
	}
}

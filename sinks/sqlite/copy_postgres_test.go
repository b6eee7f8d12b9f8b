package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/sources/postgres"
	_ "github.com/sluicedata/sluice/sources/sqlite" // the sqlite: sink
)

// pgSource is a fresh PostgreSQL database (its URL) and a session on it.
func pgSource(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	u := pgtest.NewDatabase(t)
	c, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.WithoutCancel(t.Context())) })
	return u, c
}

func pgExec(t *testing.T, c *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.Exec(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// backfillJob plans job text on r and backfills it.
func backfillJob(ctx context.Context, t *testing.T, r *runner.Runner, text string, opt runner.BackfillOptions) (*runner.BackfillResult, error) {
	t.Helper()
	job, err := dsl.ParseJob("copy.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	prep, err := r.Plan(ctx, job)
	if err != nil {
		return nil, err
	}
	return r.Backfill(ctx, prep, opt)
}

// sqliteFormTable creates "mixed" (n rows, every type the SQLite
// pass-through reads, NULLs in every nullable column, text with tabs,
// newlines, backslashes and non-ASCII, instants in several zones and
// fractions, jsonb, uuid, interval, an array and bytea) with change tracking and a STANDARD stream s.
func sqliteFormTable(t *testing.T, u string, c *pgx.Conn, n int) {
	t.Helper()
	pgExec(t, c, `CREATE TABLE mixed (id bigint PRIMARY KEY, i int, s smallint, ok boolean, d double precision, price numeric(12,2), whole numeric(9,0),
			name text, code varchar(20), day date, at timestamptz, at3 timestamptz(3), local timestamp,
			doc jsonb, ref uuid, span interval, tags text[], raw bytea)`,
		fmt.Sprintf(`INSERT INTO mixed SELECT i,
			CASE WHEN i %% 9 = 0 THEN NULL ELSE i * 1000 - 2147483 END,
			CASE WHEN i %% 8 = 0 THEN NULL ELSE (i %% 300) - 150 END,
			CASE WHEN i %% 7 = 0 THEN NULL ELSE i %% 2 = 0 END,
			CASE WHEN i %% 6 = 0 THEN NULL ELSE (i - 20) * 0.5 + 0.25 END,
			CASE WHEN i %% 5 = 0 THEN NULL ELSE (i - 20) * 1.25 END,
			CASE WHEN i %% 4 = 0 THEN NULL ELSE (i - 20) * 1000003 END,
			CASE WHEN i %% 3 = 0 THEN NULL ELSE 'n' || i || E'\t"tab"\nline\\back''q ✓ \\N' END,
			CASE WHEN i %% 11 = 0 THEN NULL ELSE 'c' || i END,
			CASE WHEN i %% 10 = 0 THEN NULL ELSE date '0999-12-31' + i * 3001 END,
			CASE WHEN i %% 12 = 0 THEN NULL ELSE timestamptz '1850-03-10 01:59:59.123456+05:30' + i * interval '1234 days 1 hour 1.5 second' END,
			CASE WHEN i %% 13 = 0 THEN NULL ELSE timestamptz '2024-03-10 01:59:59.5-03:00' + i * interval '1 day 7 minutes' END,
			CASE WHEN i %% 14 = 0 THEN NULL ELSE timestamp '1999-12-31 23:59:59.999999' + i * interval '1 day 0.25 second' END,
			CASE WHEN i %% 15 = 0 THEN NULL ELSE jsonb_build_object('i', i, 's', E'a\tb\nc\\d ✓', 'n', NULL, 'a', jsonb_build_array(1.50, 'x', NULL)) END,
			CASE WHEN i %% 16 = 0 THEN NULL ELSE md5(i::text)::uuid END,
			CASE WHEN i %% 17 = 0 THEN NULL ELSE i * interval '1 day 2 hours 3.5 seconds' - interval '40 days' END,
			CASE WHEN i %% 18 = 0 THEN NULL ELSE ARRAY['a' || i, NULL, E'q"\\,{}\t', ''] END,
			CASE WHEN i %% 19 = 0 THEN NULL ELSE decode(md5(i::text) || '00ff5c0a09', 'hex') END
			FROM generate_series(1, %d) i`, n))
	b, err := postgres.Open(t.Context(), u, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.EnableTracking(t.Context(), "mixed"); err != nil {
		t.Fatal(err)
	}
	if err := b.CreateStream(t.Context(), &dsl.CreateStream{Stream: "s", Table: "mixed"}); err != nil {
		t.Fatal(err)
	}
}

// sqliteFormSQL renders each row of mixed (in id order) as the SQLite sink
// stores it, each column as its storage class and text (typeof(x) || ':'
// || x, NULL as 'null:'), separated by U+001F, computed by PostgreSQL (not
// by sluice): integers and booleans as integers, doubles as REAL (the
// values have short exact forms), DECIMAL and DATE as text, TIMESTAMP as
// the instant at UTC with '+00:00', TIMESTAMP_NTZ as PostgreSQL prints it,
// BINARY as a BLOB (its hex here), and the types sluice stores as
// PostgreSQL's text (timestamptz(3), jsonb, uuid, interval, text[]) as that
// text in the reading session's TimeZone.
const sqliteFormSQL = `SELECT concat_ws(E'\x1f', 'integer:' || id, coalesce('integer:' || i, 'null:'), coalesce('integer:' || s, 'null:'),
	coalesce('integer:' || ok::int, 'null:'), coalesce('real:' || d, 'null:'), coalesce('text:' || price, 'null:'), coalesce('text:' || whole, 'null:'),
	coalesce('text:' || name, 'null:'), coalesce('text:' || code, 'null:'), coalesce('text:' || day, 'null:'),
	coalesce('text:' || rtrim(rtrim(to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), '0'), '.') || '+00:00', 'null:'),
	coalesce('text:' || at3::text, 'null:'), coalesce('text:' || local, 'null:'), coalesce('text:' || doc::text, 'null:'), coalesce('text:' || ref::text, 'null:'),
	coalesce('text:' || span::text, 'null:'), coalesce('text:' || tags::text, 'null:'), coalesce('blob:' || upper(encode(raw, 'hex')), 'null:')) FROM mixed ORDER BY id`

// sqliteFormRead is sqliteFormSQL's rendering of the SQLite target.
const sqliteFormRead = `SELECT concat_ws(char(31), ` + "{cols}" + `) FROM mixed ORDER BY id`

// TestBackfillPassThroughIntoSQLite copies a PostgreSQL table into a SQLite
// file as COPY text (append, and a merge into a new target), read in a
// session whose TimeZone is not UTC: every column of every row is stored
// as sluice stores it, as PostgreSQL itself renders that form. A chunk
// with a value the pass-through does not read (a numeric NaN) goes
// through sluice, which stores it as a run does.
func TestBackfillPassThroughIntoSQLite(t *testing.T) {
	srcURL, c := pgSource(t)
	sqliteFormTable(t, srcURL, c, 60)
	pgExec(t, c, `INSERT INTO mixed (id, price, d) VALUES (1000, 'NaN', 'NaN')`)
	var want []string
	tx, err := c.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := tx.Exec(t.Context(), "SET LOCAL TimeZone = 'Asia/Kathmandu'"); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(t.Context(), sqliteFormSQL)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(s, "integer:1000\x1f") {
			// what a run stores for NaN: the text 'NaN' (SQLite has no REAL NaN)
			s = strings.Join([]string{"integer:1000", "null:", "null:", "null:", "text:NaN", "text:NaN", "null:", "null:", "null:", "null:", "null:", "null:", "null:", "null:", "null:", "null:", "null:", "null:"}, "\x1f")
		}
		want = append(want, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(srcURL, "?") {
		sep = "&"
	}
	zoned := srcURL + sep + "timezone=Asia%2FKathmandu" // +05:45, and +05:41:16 before 1920
	for _, tc := range []struct{ name, sink string }{
		{"append", "mode: append"},
		{"merge", "mode: merge\n  keys: [id]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "t.db")
			r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: zoned}
			t.Cleanup(func() { r.Close() })
			res, err := backfillJob(t.Context(), t, r, "name: j\nsource: s\nsink:\n  table: mixed\n  "+tc.sink+"\n  connection: 'sqlite:"+file+"'\n", runner.BackfillOptions{Chunk: 13})
			if err != nil {
				t.Fatal(err)
			}
			// 61 rows in chunks of 13: 5 chunks; the last one (with the
			// NaN) through sluice.
			if res.Chunks != 5 || res.PassThrough != 4 || res.Rows != 61 {
				t.Errorf("chunks %d (%d passed through), rows %d; want 5 chunks, the 4 without NaN passed through, 61 rows", res.Chunks, res.PassThrough, res.Rows)
			}
			db, err := sql.Open("sqlite", file)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var cols []string
			for _, c := range []string{"id", "i", "s", "ok", "d", "price", "whole", "name", "code", "day", "at", "at3", "local", "doc", "ref", "span", "tags", "hex(raw)"} {
				cols = append(cols, "typeof("+strings.TrimSuffix(strings.TrimPrefix(c, "hex("), ")")+") || ':' || coalesce("+c+", '')")
			}
			got, err := db.QueryContext(t.Context(), strings.Replace(sqliteFormRead, "{cols}", strings.Join(cols, ", "), 1))
			if err != nil {
				t.Fatal(err)
			}
			defer got.Close()
			n := 0
			for ; got.Next(); n++ {
				var s string
				if err := got.Scan(&s); err != nil {
					t.Fatal(err)
				}
				if n < len(want) && s != want[n] {
					t.Errorf("row %d:\n got %s\nwant %s", n+1, s, want[n])
				}
			}
			if err := got.Err(); err != nil {
				t.Fatal(err)
			}
			if n != len(want) {
				t.Errorf("%d rows, want %d", n, len(want))
			}
		})
	}
}

// TestBackfillDryRunIntoSQLite: the dry run of a PostgreSQL → SQLite
// backfill describes what the SQLite sink does with the COPY text (INSERTs
// into the target), not PostgreSQL's COPY FROM STDIN.
func TestBackfillDryRunIntoSQLite(t *testing.T) {
	srcURL, c := pgSource(t)
	sqliteFormTable(t, srcURL, c, 3)
	file := filepath.Join(t.TempDir(), "t.db")
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: srcURL}
	t.Cleanup(func() { r.Close() })
	job, err := dsl.ParseJob("copy.yaml", []byte("name: j\nsource: s\nsink:\n  table: mixed\n  mode: append\n  connection: 'sqlite:"+file+"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	prep, err := r.Plan(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := r.PlanBackfill(t.Context(), prep, runner.BackfillOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sink []string
	for _, s := range bp.Plan.Steps {
		if s.Where == "sink" {
			sink = append(sink, s.What)
		}
	}
	all := strings.Join(sink, "\n")
	if strings.Contains(all, "COPY target FROM STDIN") || !strings.Contains(all, "INSERT INTO target") {
		t.Errorf("the sink steps of a SQLite target should name its INSERTs, not COPY FROM STDIN:\n%s", all)
	}
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// prodTable creates "order" (id bigint key, a column "user") with the
// types production tables have — numeric without precision, timestamptz
// and timestamp, jsonb, uuid, arrays with NULL elements, bytea, text with
// tabs, newlines, backslashes and quotes, NULLs in every nullable column —
// n rows, change tracking and a STANDARD stream s.
func prodTable(t *testing.T, b *Backend, n int) {
	t.Helper()
	sqlExec(t, b, `CREATE TABLE "order" (id bigint PRIMARY KEY, "user" text, amount numeric, price numeric(12,2), at timestamptz, local timestamp,
			doc jsonb, ref uuid, tags text[], nums int[], raw bytea, note text)`,
		fmt.Sprintf(`INSERT INTO "order" SELECT i,
			CASE WHEN i %% 9 = 0 THEN NULL ELSE 'u' || i || E'\t"tab"\nline\\back''q ✓' END,
			CASE WHEN i %% 8 = 0 THEN NULL ELSE (i * 12345.678901234567890123)::numeric / 7 END,
			CASE WHEN i %% 7 = 0 THEN NULL ELSE (i * 1.25)::numeric(12,2) END,
			CASE WHEN i %% 6 = 0 THEN NULL ELSE timestamptz '2024-03-10 01:59:59.123456+05:30' + i * interval '1 hour 1 second' END,
			CASE WHEN i %% 5 = 0 THEN NULL ELSE timestamp '1999-12-31 23:59:59.999999' + i * interval '1 day' END,
			CASE WHEN i %% 4 = 0 THEN NULL ELSE jsonb_build_object('i', i, 's', E'a\tb\nc\\d', 'n', NULL, 'a', jsonb_build_array(1, 'x', NULL)) END,
			CASE WHEN i %% 3 = 0 THEN NULL ELSE md5(i::text)::uuid END,
			CASE WHEN i %% 11 = 0 THEN NULL ELSE ARRAY['a' || i, NULL, E'q"\\,{}', ''] END,
			CASE WHEN i %% 10 = 0 THEN NULL ELSE ARRAY[i, NULL, -i] END,
			CASE WHEN i %% 12 = 0 THEN NULL ELSE decode(md5(i::text) || '00ff5c0a09', 'hex') END,
			CASE WHEN i %% 2 = 0 THEN NULL ELSE E'\\N not null\\\\' || i END
			FROM generate_series(1, %d) i`, n))
	track(t, b, "order")
	mkStream(t, b, "s", "order", "", false)
}

// rowsHash is a hash of every column of every row of query's relation rel
// (its rows' text, in key order) and their count.
func rowsHash(t *testing.T, u, rel string) string {
	t.Helper()
	b, err := Open(context.Background(), u, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var s string
	if err := b.pool.QueryRow(context.Background(), `SELECT count(*) || ' ' || coalesce(md5(string_agg(r::text, E'\n' ORDER BY r.id)), '') FROM `+rel+` r`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// backfillJob plans job text (with the sink's connection appended) on r and
// backfills it.
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

// TestBackfillPassThroughTypes copies a production-shaped table into
// another database as COPY text, append and merge, fresh targets and a
// merge into a target with rows: every column of every row arrives as
// the source has it.
func TestBackfillPassThroughTypes(t *testing.T) {
	b, srcURL := openDB(t)
	prodTable(t, b, 100)
	want := rowsHash(t, srcURL, `"order"`)
	for _, tc := range []struct {
		name, sink string
		prefill    []string // statements run in the target database first
		direct     int      // chunks loaded straight into a target with rows (runner.BackfillResult.Direct)
	}{
		{name: "append", sink: "mode: append"},
		{name: "merge", sink: "mode: merge\n  keys: [id]"},
		{name: "merge into rows", sink: "mode: merge\n  keys: [id]", prefill: []string{
			`CREATE TABLE "order" (id bigint PRIMARY KEY, "user" text, amount numeric, price numeric(12,2), at timestamptz, local timestamp,
				doc jsonb, ref uuid, tags text[], nums int[], raw bytea, note text)`,
			// keys the source has, with other values, and one it has not
			`INSERT INTO "order" (id, "user", note) SELECT i, 'old', 'old' FROM generate_series(-1, 100, 3) i`,
		}}, // a key of the target in every chunk of 13: each is staged and merged
		{name: "merge into rows of other keys", sink: "mode: merge\n  keys: [id]", prefill: []string{
			`CREATE TABLE "order" (id bigint PRIMARY KEY, "user" text, amount numeric, price numeric(12,2), at timestamptz, local timestamp,
				doc jsonb, ref uuid, tags text[], nums int[], raw bytea, note text)`,
			// keys 40..45 of the source's chunk (39, 52], and keys after
			// the source's, in the range of the last chunk (91, ∞)
			`INSERT INTO "order" (id, "user", note) SELECT i, 'old', 'old' FROM generate_series(40, 45) i`,
			`INSERT INTO "order" (id, "user", note) SELECT i, 'old', 'old' FROM generate_series(200, 210) i`,
		}, direct: 6}, // chunks (…, 13], (13, 26], (26, 39], (52, 65], (65, 78], (78, 91]
	} {
		t.Run(tc.name, func(t *testing.T) {
			sinkURL := pgtest.NewDatabase(t)
			if len(tc.prefill) > 0 {
				sb, err := Open(t.Context(), sinkURL, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				sqlExec(t, sb, tc.prefill...)
				sb.Close()
			}
			r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: srcURL}
			t.Cleanup(func() { r.Close() })
			res, err := backfillJob(t.Context(), t, r, "name: j\nsource: s\nsink:\n  table: order\n  "+tc.sink+"\n  connection: '"+sinkURL+"'\n", runner.BackfillOptions{Chunk: 13})
			if err != nil {
				t.Fatal(err)
			}
			if res.PassThrough != res.Chunks || res.Chunks != 8 || res.Rows != 100 {
				t.Errorf("chunks %d (%d passed through), rows %d; want 8 chunks of 13 rows, all passed through", res.Chunks, res.PassThrough, res.Rows)
			}
			if len(tc.prefill) > 0 && res.Direct != tc.direct {
				t.Errorf("%d chunks loaded straight into the target, want %d", res.Direct, tc.direct)
			}
			rel := `"order"`
			if tc.direct > 0 {
				rel = `(SELECT * FROM "order" WHERE id <= 100)`
				if got := rowsHash(t, sinkURL, `(SELECT * FROM "order" WHERE id > 100)`); got != rowsHash(t, srcURL, `(SELECT i::bigint AS id, 'old'::text AS "user", NULL::numeric AS amount, NULL::numeric(12,2) AS price, NULL::timestamptz AS at, NULL::timestamp AS local,
					NULL::jsonb AS doc, NULL::uuid AS ref, NULL::text[] AS tags, NULL::int[] AS nums, NULL::bytea AS raw, 'old'::text AS note FROM generate_series(200, 210) i)`) {
					t.Errorf("the target's own rows 200..210 changed: %s", got)
				}
			} else if len(tc.prefill) > 0 {
				rel = `(SELECT * FROM "order" WHERE id > 0)`
				if got := rowsHash(t, sinkURL, `(SELECT * FROM "order" WHERE id <= 0)`); got != rowsHash(t, srcURL, `(SELECT -1::bigint AS id, 'old'::text AS "user", NULL::numeric AS amount, NULL::numeric(12,2) AS price, NULL::timestamptz AS at, NULL::timestamp AS local,
					NULL::jsonb AS doc, NULL::uuid AS ref, NULL::text[] AS tags, NULL::int[] AS nums, NULL::bytea AS raw, 'old'::text AS note)`) {
					t.Errorf("the target's own row -1 changed: %s", got)
				}
			}
			if got := rowsHash(t, sinkURL, rel); got != want {
				t.Errorf("target %s, source %s", got, want)
			}
		})
	}
}

// TestBackfillPassThroughFilterProjection: the filter and projection run
// in the source's COPY, as they do in sluice.
func TestBackfillPassThroughFilterProjection(t *testing.T) {
	b, srcURL := openDB(t)
	prodTable(t, b, 60)
	sinkURL := pgtest.NewDatabase(t)
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: srcURL}
	t.Cleanup(func() { r.Close() })
	job := "name: j\nsource: s\nfilter: \"price > 10 OR `user` IS NULL\"\nselect: [id, \"`user`\", \"price * 2 AS double\", \"upper(note) AS loud\", \"__change_type AS op\"]\nsink:\n  table: out\n  mode: append\n  connection: '" + sinkURL + "'\n"
	res, err := backfillJob(t.Context(), t, r, job, runner.BackfillOptions{Chunk: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.PassThrough != res.Chunks || res.Rows != 60 {
		t.Errorf("chunks %d (%d passed through), rows %d; want all 60 rows passed through", res.Chunks, res.PassThrough, res.Rows)
	}
	want := rowsHash(t, srcURL, `(SELECT id, "user", price * 2 AS double, upper(note) AS loud, 'INSERT' AS op FROM "order" WHERE price > 10 OR "user" IS NULL)`)
	if got := rowsHash(t, sinkURL, "out"); got != want || strings.HasPrefix(got, "0 ") {
		t.Errorf("target %s, want %s", got, want)
	}
}

// TestBackfillPassThroughResume: an interrupted pass-through backfill into
// a merge target resumes, catches up the changes made meanwhile, and the
// job's next run brings the rest: the target equals the source.
func TestBackfillPassThroughResume(t *testing.T) {
	b, srcURL := openDB(t)
	prodTable(t, b, 50)
	sinkURL := pgtest.NewDatabase(t)
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: srcURL}
	t.Cleanup(func() { r.Close() })
	job := "name: j\nsource: s\nsink:\n  table: order\n  mode: merge\n  keys: [id]\n  connection: '" + sinkURL + "'\n"
	ctx, cancel := context.WithCancel(t.Context())
	res, err := backfillJob(ctx, t, r, job, runner.BackfillOptions{Chunk: 8, Progress: func(_ context.Context, p runner.BackfillProgress) {
		if p.Phase == "copy" && p.Chunks == 1 {
			sqlExec(t, b, `UPDATE "order" SET note = E'during\t' WHERE id IN (2, 40)`, `INSERT INTO "order" (id, "user") VALUES (1000, 'new')`)
		}
		if p.Phase == "copy" && p.Chunks == 3 {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, context.Canceled) || res.PassThrough != 3 {
		t.Fatalf("interrupted backfill: %v, %d chunks passed through (want 3)", err, res.PassThrough)
	}
	sqlExec(t, b, `DELETE FROM "order" WHERE id IN (3, 45)`, `UPDATE "order" SET amount = -amount, tags = ARRAY[NULL] WHERE id = 4`,
		`INSERT INTO "order" (id, doc) VALUES (-5, '{"k": [null]}')`)
	res, err = backfillJob(t.Context(), t, r, job, runner.BackfillOptions{Chunk: 8})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.CaughtUp == 0 || res.PassThrough == 0 {
		t.Errorf("resume = %+v", res)
	}
	sqlExec(t, b, `UPDATE "order" SET "user" = 'after' WHERE id = 1`)
	if _, err := r.RunJob(t.Context(), mustJob(t, job)); err != nil {
		t.Fatal(err)
	}
	if got, want := rowsHash(t, sinkURL, `"order"`), rowsHash(t, srcURL, `"order"`); got != want {
		t.Errorf("target %s, source %s", got, want)
	}
}

func mustJob(t *testing.T, text string) *plan.Job {
	t.Helper()
	job, err := dsl.ParseJob("copy.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// TestBackfillPassThroughValueError: a row the target refuses fails the
// chunk's COPY; the chunk is done again through sluice, whose error names
// the row's key and the column, and nothing of the chunk is committed.
func TestBackfillPassThroughValueError(t *testing.T) {
	b, srcURL := openDB(t)
	prodTable(t, b, 30)
	sinkURL := pgtest.NewDatabase(t)
	sb, err := Open(t.Context(), sinkURL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// "user" is NULL in rows 9, 18 and 27.
	sqlExec(t, sb, `CREATE TABLE "order" (id bigint PRIMARY KEY, "user" text NOT NULL, amount numeric, price numeric(12,2), at timestamptz, local timestamp,
		doc jsonb, ref uuid, tags text[], nums int[], raw bytea, note text)`)
	sb.Close()
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: srcURL}
	t.Cleanup(func() { r.Close() })
	res, err := backfillJob(t.Context(), t, r, "name: j\nsource: s\nsink:\n  table: order\n  mode: merge\n  keys: [id]\n  connection: '"+sinkURL+"'\n", runner.BackfillOptions{Chunk: 5})
	if err == nil {
		t.Fatal("backfill of a NULL into a NOT NULL column succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "id=9") || !strings.Contains(msg, "user") {
		t.Errorf("error does not name key id=9 and column user: %v", err)
	}
	if res.Rows != 5 || res.PassThrough != 1 {
		t.Errorf("copied %d rows (%d chunks passed through); want the first chunk of 5, passed through", res.Rows, res.PassThrough)
	}
	if got := rowsHash(t, sinkURL, `"order"`); !strings.HasPrefix(got, "5 ") {
		t.Errorf("target holds %s rows, want the first chunk's 5", got)
	}
}

// TestBackfillPassThroughDryRun: --dry-run shows the COPY statements.
func TestBackfillPassThroughDryRun(t *testing.T) {
	b, srcURL := openDB(t)
	prodTable(t, b, 3)
	sinkURL := pgtest.NewDatabase(t)
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: srcURL}
	t.Cleanup(func() { r.Close() })
	prep, err := r.Plan(t.Context(), mustJob(t, "name: j\nsource: s\nsink:\n  table: order\n  mode: append\n  connection: '"+sinkURL+"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	bp, err := r.PlanBackfill(t.Context(), prep, runner.BackfillOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sql []string
	for _, s := range bp.Plan.Steps {
		sql = append(sql, s.SQL)
	}
	all := strings.Join(sql, "\n")
	for _, want := range []string{`COPY (SELECT c."id" AS "id", c."user" AS "user"`, `FROM "order" WHERE ("id") > (<last key>) AND ("id") <= (<chunk's end key>)`, `ORDER BY c."id") TO STDOUT`, `OFFSET <chunk - 1> LIMIT 1`} {
		if !strings.Contains(all, want) {
			t.Errorf("dry run lacks %q:\n%s", want, all)
		}
	}
	if bp.Chunk != runner.DefaultPassThroughChunk {
		t.Errorf("chunk %d, want %d", bp.Chunk, runner.DefaultPassThroughChunk)
	}
}

// TestBackfillPassThroughMergeOtherKeyOrder: a merge into a target with
// rows whose key column orders text otherwise than the source's (ICU
// against "C"): the target's range check misses a key a chunk holds, the
// COPY straight into the target fails on its unique key, and the chunk
// and the rest are staged and merged instead — the target ends equal to
// the source, no key twice, no chunk through sluice.
func TestBackfillPassThroughMergeOtherKeyOrder(t *testing.T) {
	b, srcURL := openDB(t)
	sinkURL := pgtest.NewDatabase(t)
	sb, err := Open(t.Context(), sinkURL, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	var icu bool
	if err := sb.pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_collation WHERE collname = 'und-x-icu')`).Scan(&icu); err != nil {
		t.Fatal(err)
	}
	if !icu {
		t.Skip("this PostgreSQL has no ICU collation und-x-icu: the test needs a text order other than the source's \"C\"")
	}
	// Source order ("C"): A B C D a b c d. Chunks of 2: (…, B], (B, D],
	// (D, b], (b, d] and the empty last one (d, …). In ICU order 'a' sorts before 'B': the target's
	// range check of (…, B] sees its 'a' (staged), of (B, D] nothing
	// (straight), of (D, b] nothing either — 'D' sorts after 'b' — but
	// the chunk holds 'a': its COPY fails, and it is staged.
	sqlExec(t, b, `CREATE TABLE kv (k text COLLATE "C" PRIMARY KEY, v int)`,
		`INSERT INTO kv VALUES ('A', 1), ('B', 2), ('C', 3), ('D', 4), ('a', 5), ('b', 6), ('c', 7), ('d', 8)`)
	track(t, b, "kv")
	mkStream(t, b, "s", "kv", "", false)
	sqlExec(t, sb, `CREATE TABLE kv (k text COLLATE "und-x-icu" PRIMARY KEY, v int)`, `INSERT INTO kv VALUES ('a', 0)`)
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: srcURL}
	t.Cleanup(func() { r.Close() })
	res, err := backfillJob(t.Context(), t, r, "name: j\nsource: s\nsink:\n  table: kv\n  mode: merge\n  keys: [k]\n  connection: '"+sinkURL+"'\n", runner.BackfillOptions{Chunk: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Chunks != 5 || res.PassThrough != 5 || res.Direct != 1 {
		t.Errorf("chunks %d, passed through %d, straight into the target %d; want 5, 5, 1", res.Chunks, res.PassThrough, res.Direct)
	}
	src := `(SELECT k COLLATE "C" AS id, v FROM kv)`
	if got, want := rowsHash(t, sinkURL, src), rowsHash(t, srcURL, src); got != want {
		t.Errorf("target %s, source %s", got, want)
	}
}

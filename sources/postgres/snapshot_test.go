package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/pgtest"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
)

// orderTable creates "order" with a composite key of reserved names, a
// unicode text key part, numeric and timestamptz columns, n rows, change
// tracking and a STANDARD stream s.
func orderTable(t *testing.T, b *Backend, n int) {
	t.Helper()
	sqlExec(t, b, `CREATE TABLE "order" ("group" text, "select" int, amount numeric(20,4), note text, at timestamptz, PRIMARY KEY ("group", "select"))`,
		fmt.Sprintf(`INSERT INTO "order" SELECT (ARRAY['東京','b','Ünï ''q''','a'])[1 + i %% 4], i, (i * 1234567.0001 - 5e6)::numeric(20,4),
			CASE WHEN i %% 5 = 0 THEN NULL ELSE 'naïve ✓ ' || i END, timestamptz '2024-01-15 10:00:00.123456+08' + i * interval '1 hour'
			FROM generate_series(1, %d) i`, n))
	track(t, b, "order")
	mkStream(t, b, "s", "order", "", false)
}

const orderDump = `SELECT "group", "select", amount::text, coalesce(note, 'NULL'), (extract(epoch FROM at) * 1e6)::bigint::text FROM "%s" ORDER BY "group", "select"`

func dumpRows(t *testing.T, b *Backend, q string) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	return out
}

func TestSnapshotKeysetScanPostgres(t *testing.T) {
	b, _ := openDB(t)
	orderTable(t, b, 23)
	ctx := t.Context()
	info, err := b.Stream(ctx, plan.Source{Stream: "s"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Snapshot(ctx, info, info.Offset)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sqlExec(t, b, `INSERT INTO "order" VALUES ('late', 1, 1, 'x', now())`, `UPDATE "order" SET note = 'changed' WHERE "select" = 7`)
	if n, err := s.Count(ctx); err != nil || n != 23 {
		t.Fatalf("count = %d, %v", n, err)
	}
	want := dumpRows(t, b, `SELECT "group", "select" FROM "order" WHERE "group" <> 'late' ORDER BY 1, 2`)
	for _, n := range []int{1, 4, 23, 100} {
		var got []string
		var after []any
		for {
			rows, err := s.Chunk(ctx, after, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.Op != cdc.OpInsert || r.Row[3] == "changed" {
					t.Fatalf("row %v (%s): not the snapshot's", r.Row, r.Op)
				}
				got = append(got, fmt.Sprint(r.Row[0], r.Row[1]))
			}
			if len(rows) < n {
				break
			}
			after = []any{rows[len(rows)-1].Row[0], rows[len(rows)-1].Row[1]}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("chunks of %d:\n got  %v\n want %v", n, got, want)
		}
	}
	off := s.Offset()
	s.Close()
	rd, err := b.Changes(ctx, info, off, runner.ReadOptions{BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got, err := rd.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, c := range got {
		ops = append(ops, c.Op.String())
	}
	if slices.Sort(ops); fmt.Sprint(ops) != "[INSERT UPDATE_AFTER UPDATE_BEFORE]" {
		t.Fatalf("changes after the snapshot offset: %v", ops)
	}
}

func TestSnapshotCatchupByKeyPostgres(t *testing.T) {
	b, _ := openDB(t)
	sqlExec(t, b, `CREATE TABLE k (id uuid PRIMARY KEY, v int)`,
		`INSERT INTO k SELECT ('00000000-0000-0000-0000-0000000000' || lpad(i::text, 2, '0'))::uuid, i FROM generate_series(10, 30) i`)
	track(t, b, "k")
	mkStream(t, b, "s", "k", "", false)
	ctx := t.Context()
	info, _ := b.Stream(ctx, plan.Source{Stream: "s"})
	s1, err := b.Snapshot(ctx, info, info.Offset)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s1.Chunk(ctx, nil, 5) // ids …10 to …14, uuid (non-native) keys
	if err != nil || len(rows) != 5 {
		t.Fatalf("chunk: %v %v", rows, err)
	}
	o1, upTo := s1.Offset(), []any{rows[4].Row[0]}
	s1.Close()
	sqlExec(t, b, `UPDATE k SET v = -v WHERE v IN (11, 25)`, `DELETE FROM k WHERE v IN (12, 26)`)
	s2, err := b.Snapshot(ctx, info, o1)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	rd, err := s2.Catchup(ctx, upTo, runner.ReadOptions{BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		batch, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range batch {
			got = append(got, fmt.Sprint(c.Op, " ", c.Row[1]))
		}
	}
	rd.Close()
	if want := []string{"UPDATE_BEFORE 11", "UPDATE_AFTER -11", "DELETE 12"}; !slices.Equal(got, want) {
		t.Fatalf("catch-up = %q, want %q", got, want)
	}
	if more, err := s2.Chunk(ctx, upTo, 100); err != nil || len(more) != 15 {
		t.Fatalf("rows after %v: %d, %v (want 15: 16 minus the deleted one)", upTo, len(more), err)
	}
}

// TestBackfillPostgresToPostgres backfills into another database with
// changes between chunks and an interruption, then runs the job: the
// target equals the source.
func TestBackfillPostgresToPostgres(t *testing.T) {
	b, srcURL := openDB(t)
	orderTable(t, b, 40)
	sinkURL := pgtest.NewDatabase(t)
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler), Conn: srcURL}
	t.Cleanup(func() { r.Close() })
	job, err := dsl.ParseJob("copy.yaml", []byte("source: s\nsink:\n  table: order\n  mode: merge\n  keys: [group, select]\n  connection: '"+sinkURL+"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	backfill := func(ctx context.Context, opt runner.BackfillOptions) (*runner.BackfillResult, error) {
		prep, err := r.Plan(ctx, job)
		if err != nil {
			return nil, err
		}
		return r.Backfill(ctx, prep, opt)
	}
	ctx, cancel := context.WithCancel(t.Context())
	_, err = backfill(ctx, runner.BackfillOptions{Chunk: 6, Progress: func(_ context.Context, p runner.BackfillProgress) {
		if p.Phase == "copy" && p.Chunks == 1 {
			sqlExec(t, b, `UPDATE "order" SET note = 'during' WHERE "select" IN (1, 39)`, `INSERT INTO "order" VALUES ('a', 1000, 1.5, 'new', now())`)
		}
		if p.Phase == "copy" && p.Chunks == 3 {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted backfill: %v", err)
	}
	sqlExec(t, b, `DELETE FROM "order" WHERE "select" IN (2, 38)`, `UPDATE "order" SET amount = -amount WHERE "select" = 3`,
		`INSERT INTO "order" VALUES ('zz', 1, 1, 'temp', now())`)
	res, err := backfill(t.Context(), runner.BackfillOptions{Chunk: 6, Progress: func(_ context.Context, p runner.BackfillProgress) {
		if p.Phase == "copy" && p.Chunks == 1 {
			sqlExec(t, b, `DELETE FROM "order" WHERE "group" = 'zz'`, `INSERT INTO "order" VALUES ('東京', 0, 0, 'new2', now())`)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.CaughtUp == 0 {
		t.Errorf("resume = %+v", res)
	}
	if _, err := r.RunJob(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	sb, err := r.Backend(t.Context(), sinkURL)
	if err != nil {
		t.Fatal(err)
	}
	src, dst := dumpRows(t, b, fmt.Sprintf(orderDump, "order")), dumpRows(t, sb.(*Backend), fmt.Sprintf(orderDump, "order"))
	if !slices.Equal(src, dst) {
		t.Fatalf("target differs from source:\n src %s\n dst %s", strings.Join(src, "\n     "), strings.Join(dst, "\n     "))
	}
	if len(src) != 40-2+1+1 {
		t.Errorf("source has %d rows", len(src))
	}
}

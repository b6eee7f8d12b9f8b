package main

// The PostgreSQL parts of the benchmark: PostgreSQL → PostgreSQL (append,
// merge into a new target, merge into a target with rows) against the
// psql pipeline, and SQLite → PostgreSQL against its one-sided baselines.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/bench/internal/machine"
	"github.com/sluicedata/sluice/sources/sqlite"
)

// pgColumns is the column list of items on both sides.
const pgColumns = "id, name, amount, at, note"

// loadAvg returns /proc/loadavg's first three fields.

// contenderRun is one child's result in one round.
type contenderRun struct {
	res result
	rss int64 // KiB
}

func (c contenderRun) rate() float64 { return float64(c.res.Rows) / c.res.Seconds }

// stats returns median, min and max.
func stats(v []float64) (float64, float64, float64) {
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0, 0, 0
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}

// summary is one goal row for the collector.
type summary struct {
	path, baseline string
	ratios         []float64
	rssMB          int64
}

func (s summary) print() {
	med, lo, hi := stats(s.ratios)
	fmt.Printf("SUMMARY\t%s\t%.2f\t%.2f\t%.2f\t%s\t%d\n", s.path, med, lo, hi, s.baseline, s.rssMB)
}

// report prints each contender's rows/s (median, min–max), peak RSS and
// ratio to the first contender, per round.
func report(title string, names []string, runs [][]contenderRun) {
	fmt.Printf("\n%s (%d rounds, contenders alternating)\n", title, len(runs))
	fmt.Printf("%-70s %12s %22s %9s %18s\n", "contender", "rows/s", "min–max", "peak RSS", "ratio to first")
	for j, n := range names {
		var rates, ratios []float64
		var rss int64
		for _, r := range runs {
			rates = append(rates, r[j].rate())
			ratios = append(ratios, r[j].rate()/r[0].rate())
			rss = max(rss, r[j].rss)
		}
		m, lo, hi := stats(rates)
		rm, rlo, rhi := stats(ratios)
		fmt.Printf("%-70s %12.0f %10.0f–%-11.0f %7dMB %6.2f× (%.2f–%.2f)\n", n, m, lo, hi, rss/1024, rm, rlo, rhi)
	}
}

// ratios returns, per round, contender a's rate over b's.
func ratios(runs [][]contenderRun, a, b int) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r[a].rate()/r[b].rate())
	}
	return out
}

func maxRSS(runs [][]contenderRun, j int) int64 {
	var m int64
	for _, r := range runs {
		m = max(m, r[j].rss)
	}
	return m / 1024
}

// newDB creates a database and returns its URL and a drop function.
func newDB(ctx context.Context, admin *pgx.Conn, prefix string) (string, func(), error) {
	n := randName(prefix)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+n); err != nil {
		return "", nil, err
	}
	u, err := withDB(*pgURL, n)
	return u, func() { _, _ = admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)") }, err
}

// pgHash is the row count and an md5 of every column of every row of
// items (each row's text, in key order).
func pgHash(ctx context.Context, u string) (string, error) {
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	var s string
	err = c.QueryRow(ctx, `SELECT count(*) || ' ' || coalesce(md5(string_agg(t::text, E'\n' ORDER BY id)), '') FROM (SELECT `+pgColumns+` FROM items WHERE id > 0) t`).Scan(&s)
	return s, err
}

func pgExec(ctx context.Context, u string, stmts ...string) error {
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// psqlPipe is the baseline a competent user writes: two psql processes,
// COPY text through a shell pipe.
func psqlPipe(ctx context.Context, s, d string) (int64, error) {
	if err := pgExec(ctx, d, pgDDL); err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", `psql -X -q -v ON_ERROR_STOP=1 "$1" -c "\copy (SELECT `+pgColumns+` FROM items) TO STDOUT" | psql -X -q -v ON_ERROR_STOP=1 "$2" -c "\copy items FROM STDIN"`, "sh", s, d)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("psql pipeline: %w", err)
	}
	return int64(*rows), nil
}

// benchPG alternates the PostgreSQL → PostgreSQL contenders over rounds.
func benchPG(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, *pgURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	src, drop, err := newDB(ctx, admin, "bench_src_")
	if err != nil {
		return err
	}
	defer drop()
	t0 := time.Now()
	if err := pgExec(ctx, src, pgDDL, fmt.Sprintf(`INSERT INTO items SELECT i, 'name ' || i || E' ✓\t"q"', (i %% 100000) * 1.25, timestamptz '2024-01-01 00:00:00+00' + i * interval '1.5 second', CASE WHEN i %% 7 = 0 THEN NULL ELSE md5(i::text) END FROM generate_series(1, %d) i`, *rows), "VACUUM ANALYZE items"); err != nil {
		return err
	}
	if err := execSluice(ctx, src, tracking); err != nil {
		return err
	}
	want, err := pgHash(ctx, src)
	if err != nil {
		return err
	}
	fmt.Printf("prepared %d PostgreSQL rows in %s; load average %s\n", *rows, time.Since(t0).Round(time.Millisecond), machine.LoadAvg())
	modes := []struct{ mode, name string }{
		{"psql-pipe", "psql \\copy (SELECT …) TO STDOUT | psql \\copy items FROM STDIN"},
		{"pg-sluice", "sluice backfill PostgreSQL → PostgreSQL, append (into items as above)"},
		{"pg-sluice-merge", "sluice backfill, merge (new target, primary key)"},
		{"pg-sluice-merge-rows", "sluice backfill, merge into a target with a row of another key (no key of any chunk there: COPY into the target)"},
		{"pg-sluice-merge-overlap", "sluice backfill, merge into a target holding a key of every chunk (stage + ON CONFLICT)"},
	}
	var runs [][]contenderRun
	for round := 0; round < *rounds; round++ {
		var rr []contenderRun
		// Alternate the order too: A B C D, then D C B A, …
		order := []int{0, 1, 2, 3, 4}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		rr = make([]contenderRun, len(modes))
		for _, j := range order {
			m := modes[j]
			dst, dropDst, err := newDB(ctx, admin, "bench_dst_")
			if err != nil {
				return err
			}
			var setup []string
			switch m.mode {
			case "pg-sluice":
				// The table the psql pipeline writes, primary key
				// included (sluice would create one without).
				setup = []string{pgDDL}
			case "pg-sluice-merge-rows":
				// One row of another key: the target is not empty.
				setup = []string{pgDDL, "INSERT INTO items VALUES (0, 'before', 0, now(), NULL)"}
			case "pg-sluice-merge-overlap":
				// A key every 1,000 (other values): each chunk meets
				// one, so each is staged and merged.
				setup = []string{pgDDL, fmt.Sprintf("INSERT INTO items SELECT i, 'before', 0, now(), NULL FROM generate_series(1, %d, 1000) i", *rows)}
			}
			if err := pgExec(ctx, dst, setup...); err != nil {
				dropDst()
				return err
			}
			res, rss, err := child(m.mode, src, dst)
			if err == nil {
				var got string
				if got, err = pgHash(ctx, dst); err == nil && got != want {
					err = fmt.Errorf("%s: target differs from the source: %q vs %q", m.mode, got, want)
				}
			}
			dropDst()
			if err != nil {
				return err
			}
			rr[j] = contenderRun{res, rss}
			if res.FirstChunkMS > 0 {
				fmt.Printf("round %d %-22s %8.0f rows/s, %d chunks: first %.0f ms, last %.0f ms (%.2f× the first)\n", round+1, m.mode, contenderRun{res, rss}.rate(), res.Chunks, res.FirstChunkMS, res.LastChunkMS, res.LastChunkMS/res.FirstChunkMS)
			} else {
				fmt.Printf("round %d %-22s %8.0f rows/s\n", round+1, m.mode, contenderRun{res, rss}.rate())
			}
		}
		runs = append(runs, rr)
	}
	var names []string
	for _, m := range modes {
		names = append(names, m.name)
	}
	report(fmt.Sprintf("PostgreSQL → PostgreSQL backfill, %d rows, two databases on one server; load average %s", *rows, machine.LoadAvg()), names, runs)
	base := "psql \\copy TO STDOUT | psql \\copy FROM STDIN"
	summaries = append(summaries,
		summary{"PostgreSQL → PostgreSQL backfill, append", base, ratios(runs, 1, 0), maxRSS(runs, 1)},
		summary{"PostgreSQL backfill, merge target (new)", base, ratios(runs, 2, 0), maxRSS(runs, 2)},
		summary{"PostgreSQL backfill, merge target (new) vs append", "sluice append backfill", ratios(runs, 2, 1), maxRSS(runs, 2)},
		summary{"PostgreSQL backfill, merge into a target with rows vs append", "sluice append backfill", ratios(runs, 3, 1), maxRSS(runs, 3)},
		summary{"PostgreSQL backfill, merge into a target holding keys of every chunk vs append", "sluice append backfill", ratios(runs, 4, 1), maxRSS(runs, 4)},
	)
	var lin []float64
	for _, r := range runs {
		if r[4].res.FirstChunkMS > 0 {
			lin = append(lin, r[4].res.LastChunkMS/r[4].res.FirstChunkMS)
		}
	}
	if len(lin) > 0 {
		med, lo, hi := stats(lin)
		fmt.Printf("merge into a target holding keys of every chunk: last chunk / first chunk time %.2f× (%.2f–%.2f): 1 = linear\n", med, lo, hi)
	}
	return nil
}

// sqliteSource makes the SQLite source of SQLite → PostgreSQL in dir.
func sqliteSource(ctx context.Context, dir string, n int) (string, error) {
	s := "sqlite:" + filepath.Join(dir, "src_pg.db")
	if err := execSluice(ctx, s, `CREATE TABLE items (id BIGINT, name STRING, amount DECIMAL(12,2), at TIMESTAMP, note STRING, PRIMARY KEY (id))`); err != nil {
		return "", err
	}
	b, err := sqlite.Open(ctx, s, nil)
	if err != nil {
		return "", err
	}
	_, err = b.DB().ExecContext(ctx, fmt.Sprintf(`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < %d)
		INSERT INTO items SELECT i, 'name ' || i || ' ✓', printf('%%.2f', (i %% 100000) * 1.25), strftime('%%Y-%%m-%%d %%H:%%M:%%S', 1704067200 + i, 'unixepoch') || '+00:00',
		CASE WHEN i %% 7 = 0 THEN NULL ELSE hex(randomblob(16)) END FROM g`, n))
	b.Close()
	if err != nil {
		return "", err
	}
	return s, execSluice(ctx, s, tracking)
}

// sqliteDump is the source-side baseline: the sqlite3 CLI writing the
// table as CSV (what a user pipes into psql) to /dev/null.
func sqliteDump(ctx context.Context, s string) (int64, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", `sqlite3 -csv "$1" "SELECT `+pgColumns+` FROM items" > /dev/null`, "sh", strings.TrimPrefix(s, "sqlite:"))
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("sqlite3: %w", err)
	}
	return int64(*sqlitePGRows), nil
}

// psqlLoad is the target-side baseline: psql \copy of the CSV file the
// sqlite3 CLI wrote into a new table.
func psqlLoad(ctx context.Context, csv, d string) (int64, error) {
	if err := pgExec(ctx, d, pgDDL); err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", d, "-c", `\copy items FROM '`+csv+`' (FORMAT csv)`)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("psql: %w", err)
	}
	return int64(*sqlitePGRows), nil
}

// benchSQLitePG alternates SQLite → PostgreSQL: sluice against the two
// one-sided baselines (the better — faster — one is the ratio's base).
func benchSQLitePG(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, *pgURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	dir, err := os.MkdirTemp("", "sluice-bench-sqlite-pg-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	s, err := sqliteSource(ctx, dir, *sqlitePGRows)
	if err != nil {
		return err
	}
	csv := filepath.Join(dir, "items.csv")
	f, err := os.Create(csv)
	if err != nil {
		return err
	}
	dump := exec.CommandContext(ctx, "sqlite3", "-csv", strings.TrimPrefix(s, "sqlite:"), "SELECT "+pgColumns+" FROM items")
	dump.Stdout, dump.Stderr = f, os.Stderr
	err = dump.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlite3: %w", err)
	}
	// The reference: the CSV loaded by psql (every column, as PostgreSQL
	// reads the SQLite values).
	ref, dropRef, err := newDB(ctx, admin, "bench_ref_")
	if err != nil {
		return err
	}
	defer dropRef()
	if _, err := psqlLoad(ctx, csv, ref); err != nil {
		return err
	}
	want, err := pgHash(ctx, ref)
	if err != nil {
		return err
	}
	fmt.Printf("prepared %d SQLite rows in %s; load average %s\n", *sqlitePGRows, time.Since(t0).Round(time.Millisecond), machine.LoadAvg())
	modes := []struct{ mode, name string }{
		{"sqlite-dump", "sqlite3 -csv \"SELECT … FROM items\" > /dev/null (source side alone)"},
		{"pg-load", "psql \\copy items FROM 'items.csv' (FORMAT csv) (target side alone)"},
		{"sqlite-pg-sluice", "sluice backfill SQLite → PostgreSQL, append"},
	}
	var runs [][]contenderRun
	for round := 0; round < *rounds; round++ {
		order := []int{0, 1, 2}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		rr := make([]contenderRun, len(modes))
		for _, j := range order {
			m := modes[j]
			dst, dropDst, err := newDB(ctx, admin, "bench_dst_")
			if err != nil {
				return err
			}
			srcArg := s
			if m.mode == "pg-load" {
				srcArg = csv
			}
			res, rss, err := child(m.mode, srcArg, dst)
			if err == nil && m.mode != "sqlite-dump" {
				var got string
				if got, err = pgHash(ctx, dst); err == nil && got != want {
					err = fmt.Errorf("%s: target differs from the source: %q vs %q", m.mode, got, want)
				}
			}
			dropDst()
			if err != nil {
				return err
			}
			rr[j] = contenderRun{res, rss}
			fmt.Printf("round %d %-18s %8.0f rows/s\n", round+1, m.mode, rr[j].rate())
		}
		runs = append(runs, rr)
	}
	var names []string
	for _, m := range modes {
		names = append(names, m.name)
	}
	report(fmt.Sprintf("SQLite → PostgreSQL backfill, %d rows; load average %s", *sqlitePGRows, machine.LoadAvg()), names, runs)
	// Per round, against the slower side (which bounds any pipeline of
	// the two: sqlite3 … | psql \copy) and against the faster one.
	var slow, fast []float64
	for _, r := range runs {
		lo, hi := min(r[0].rate(), r[1].rate()), max(r[0].rate(), r[1].rate())
		slow, fast = append(slow, r[2].rate()/lo), append(fast, r[2].rate()/hi)
	}
	dumpMed, _, _ := stats(ratios(runs, 0, 1))
	slowName, fastName := "psql \\copy FROM csv alone (the slower side)", "sqlite3 -csv dump alone (the faster side)"
	if dumpMed < 1 {
		slowName, fastName = "sqlite3 -csv dump alone (the slower side)", "psql \\copy FROM csv alone (the faster side)"
	}
	summaries = append(summaries,
		summary{"SQLite → PostgreSQL backfill", slowName, slow, maxRSS(runs, 2)},
		summary{"SQLite → PostgreSQL backfill vs the faster side", fastName, fast, maxRSS(runs, 2)})
	return nil
}

// chunkClock records when each chunk of a backfill committed.
type chunkClock struct {
	last  time.Time
	times []float64 // ms per chunk
}

func (c *chunkClock) tick() {
	now := time.Now()
	if !c.last.IsZero() {
		c.times = append(c.times, float64(now.Sub(c.last).Microseconds())/1000)
	}
	c.last = now
}

// firstLast returns the time of the first and the last full chunk.
func (c *chunkClock) firstLast() (float64, float64) {
	if len(c.times) < 2 {
		return 0, 0
	}
	return c.times[0], c.times[len(c.times)-1]
}

// Command diff measures `sluice diff` (runner.Runner.Diff) against a full
// sorted dump-and-compare of both tables, on 1,000,000 equal rows and on
// 1,000,000 rows with 100 scattered differences, PostgreSQL → PostgreSQL
// and SQLite → SQLite, and prints time and peak RSS.
//
//	go run ./bench/diff                    # 1,000,000 rows, 3 rounds
//	go run ./bench/diff -quick             # 50,000 rows
//	go run ./bench/diff -rows 200000 -rounds 5 -skip sqlite
//	go run ./bench/diff -pg postgres://…   # on an existing server (a database of its own, dropped after)
//
// The tables: src (id BIGINT primary key, name STRING, amount
// DECIMAL(12,2), ts TIMESTAMP, status STRING) with change tracking and a
// STANDARD stream created after the rows were loaded (nothing pending), and
// its replica tgt (a copy). PostgreSQL: both in one database of a
// throw-away cluster (initdb/pg_ctl) unless -pg is given. SQLite: src.db
// and tgt.db, two files. The job is a merge of src's stream into tgt by id;
// with -diffs N the replica gets N scattered differences: a third of the
// keys deleted, a third changed (name), a third added (new keys).
//
// The contenders, each in child processes of its own, with their peak RSS
// (VmHWM; GNU time's %M):
//
//   - sluice diff: this program re-executed, running runner.Plan and
//     runner.Diff on the job (which also finds the differing rows);
//   - dump and compare: bash dumping both tables sorted by key, at the same time,
//     each piped to md5sum, and the two sums compared (it says only whether
//     the tables are equal): PostgreSQL `psql -c "COPY (SELECT * FROM t
//     ORDER BY id) TO STDOUT" | md5sum` (COPY streams; psql's plain SELECT
//     would hold the whole result in memory), SQLite
//     `sqlite3 -readonly FILE "SELECT * FROM t ORDER BY id" | md5sum`.
//
// Every round runs every contender on every case, contenders in turn (A B A
// B …, the first alternating between rounds); the table shows each
// contender's median with its fastest and slowest round, and the load
// average before and after. Each run's answer is checked: sluice diff
// must find exactly the differences made, the dump sums must be equal
// exactly when the tables are.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/bench/internal/machine"
	"github.com/sluicedata/sluice/bench/internal/pgcluster"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/postgres"
	_ "github.com/sluicedata/sluice/sources/sqlite"
)

var (
	rows   = flag.Int("rows", 1_000_000, "rows per table")
	diffs  = flag.Int("diffs", 100, "scattered differences in the second case")
	rounds = flag.Int("rounds", 3, "rounds; the table shows medians")
	quick  = flag.Bool("quick", false, "50,000 rows (overrides -rows)")
	pgURL  = flag.String("pg", "", "an existing PostgreSQL server (default: a throw-away cluster)")
	skip   = flag.String("skip", "", "comma-separated backends to skip: postgres, sqlite")

	// internal: one contender run in a child process
	mode  = flag.String("mode", "", "internal: sluice")
	jobF  = flag.String("job", "", "internal: job file")
	wantD = flag.Int("want", -1, "internal: differences sluice diff must find")
)

// result is one child's answer.
type result struct {
	Seconds float64 `json:"seconds"`
	Equal   bool    `json:"equal"`
	Found   int64   `json:"found"` // differences sluice diff found
	Read    int     `json:"buckets_read"`
	RSS     int64   `json:"rss_kb"` // VmHWM
	CPU     float64 `json:"cpu"`    // user + system seconds
}

func main() {
	flag.Parse()
	ctx := context.Background()
	if *mode != "" {
		r, err := contender(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(r)
		return
	}
	if *quick {
		*rows = 50_000
	}
	if err := parent(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// benchCase is one backend and one state of the replica.
type benchCase struct {
	kind     string // postgres or sqlite
	name     string
	src, tgt string // connections
	table    string // target table
	job      string // job file
	diffs    int
}

func parent(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "sluice-bench-diff-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var cases []benchCase
	if !strings.Contains(*skip, "postgres") {
		url := *pgURL
		if url == "" {
			u, stop, err := pgcluster.Start(ctx, []string{"shared_buffers=256MB", "fsync=off"})
			if err != nil {
				return err
			}
			defer stop()
			url = u
		}
		cs, cleanup, err := preparePG(ctx, url, dir)
		if cleanup != nil {
			defer cleanup()
		}
		if err != nil {
			return fmt.Errorf("prepare postgres: %w", err)
		}
		cases = append(cases, cs...)
	}
	if !strings.Contains(*skip, "sqlite") {
		cs, err := prepareSQLite(ctx, dir)
		if err != nil {
			return fmt.Errorf("prepare sqlite: %w", err)
		}
		cases = append(cases, cs...)
	}
	contenders := []string{"sluice", "dump"}
	type key struct{ c, m string }
	secs := map[key][]float64{}
	rss := map[key][]int64{}
	read := map[key]int{}
	cpus := map[key][]float64{}
	load0 := machine.LoadAvg()
	for round := 0; round < max(*rounds, 1); round++ {
		order := slices.Clone(contenders)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range cases {
			for _, m := range order {
				res, kb, err := child(m, c)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", c.name, m, err)
				}
				if res.Equal != (c.diffs == 0) {
					return fmt.Errorf("%s, %s: answered equal=%v", c.name, m, res.Equal)
				}
				k := key{c.name, m}
				secs[k] = append(secs[k], res.Seconds)
				rss[k] = append(rss[k], kb)
				cpus[k] = append(cpus[k], res.CPU)
				read[k] = res.Read
			}
		}
		fmt.Fprintf(os.Stderr, "round %d done, load %s\n", round+1, machine.LoadAvg())
	}
	fmt.Printf("%s, %d rows per table, %d rounds (contenders alternating), load average before: %s, after: %s\n",
		time.Now().UTC().Format("2006-01-02 15:04Z"), *rows, max(*rounds, 1), load0, machine.LoadAvg())
	fmt.Printf("%-40s %-14s %22s %9s %14s %8s\n", "case", "contender", "seconds median (min–max)", "CPU s", "peak RSS (max)", "ratio")
	for _, c := range cases {
		base := median(secs[key{c.name, "dump"}])
		for _, m := range contenders {
			k := key{c.name, m}
			s := secs[k]
			name := map[string]string{"sluice": "sluice diff", "dump": "dump+md5sum"}[m]
			extra := ""
			if m == "sluice" {
				extra = fmt.Sprintf("  (read the rows of %d buckets)", read[k])
			}
			fmt.Printf("%-40s %-14s %8.2f (%5.2f–%5.2f) %9.2f %12dMB %7.2fx%s\n", c.name, name, median(s), slices.Min(s), slices.Max(s), median(cpus[k]), slices.Max(rss[k])/1024, median(s)/base, extra)
		}
	}
	fmt.Println("CPU s: median user + system seconds of the contender's processes (the database servers' not counted); ratio: time / the dump's median time (below 1: sluice diff is faster)")
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// child runs contender m on c in a child process and returns its result
// and peak RSS in KiB.
func child(m string, c benchCase) (result, int64, error) {
	if m == "dump" {
		return dump(c)
	}
	want := -1
	if m == "sluice" {
		want = c.diffs
	}
	cmd := exec.Command(os.Args[0], "-mode", m, "-job", c.job, "-want", fmt.Sprint(want))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, 0, err
	}
	var r result
	if err := json.Unmarshal(out, &r); err != nil {
		return result{}, 0, fmt.Errorf("child output %q: %w", out, err)
	}
	return r, r.RSS, nil
}

// dump runs the dump-and-compare contender: bash dumping both tables at
// once, each dump piped to md5sum. Its peak RSS is the sum of the peaks of
// its four processes (psql or sqlite3, md5sum; GNU time's %M for each):
// they run at the same time.
func dump(c benchCase) (result, int64, error) {
	tmp, err := os.MkdirTemp("", "dump-")
	if err != nil {
		return result{}, 0, err
	}
	defer os.RemoveAll(tmp)
	timed := func(name string) string {
		return fmt.Sprintf("/usr/bin/time -f '%%M %%U %%S' -o %s", filepath.Join(tmp, name))
	}
	var a, b string
	if c.kind == "postgres" {
		a = fmt.Sprintf("%s psql -X %q -c 'COPY (SELECT * FROM src ORDER BY id) TO STDOUT'", timed("rss1"), c.src)
		b = fmt.Sprintf("%s psql -X %q -c 'COPY (SELECT * FROM %s ORDER BY id) TO STDOUT'", timed("rss2"), c.tgt, c.table)
	} else {
		a = fmt.Sprintf("%s sqlite3 -readonly %q 'SELECT * FROM src ORDER BY id'", timed("rss1"), strings.TrimPrefix(c.src, "sqlite:"))
		b = fmt.Sprintf("%s sqlite3 -readonly %q 'SELECT * FROM %s ORDER BY id'", timed("rss2"), strings.TrimPrefix(c.tgt, "sqlite:"), c.table)
	}
	a += " | " + timed("rss3") + " md5sum"
	b += " | " + timed("rss4") + " md5sum"
	fa, fb := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	script := fmt.Sprintf("set -o pipefail; (%s) > %s & p=$!; (%s) > %s; wait $p", a, fa, b, fb)
	t0 := time.Now()
	if out, err := exec.Command("bash", "-c", script).CombinedOutput(); err != nil {
		return result{}, 0, fmt.Errorf("dump: %v: %s", err, out)
	}
	secs := time.Since(t0).Seconds()
	sa, _ := os.ReadFile(fa)
	sb, _ := os.ReadFile(fb)
	if len(sa) < 32 || len(sb) < 32 {
		return result{}, 0, errors.New("dump: no md5sum output")
	}
	var kb int64
	var cpu float64
	for i := 1; i <= 4; i++ {
		t, err := os.ReadFile(filepath.Join(tmp, fmt.Sprintf("rss%d", i)))
		if err != nil {
			return result{}, 0, err
		}
		var n int64
		var u, sy float64
		if _, err := fmt.Sscan(strings.TrimSpace(string(t)), &n, &u, &sy); err != nil {
			return result{}, 0, fmt.Errorf("time output %q: %w", t, err)
		}
		kb += n
		cpu += u + sy
	}
	return result{Seconds: secs, Equal: string(sa) == string(sb), CPU: cpu}, kb, nil
}

// vmHWM returns this process's peak RSS in KiB from /proc/self/status
// (getrusage would report at least the parent's, whose memory a child
// started by os/exec shares until it execs).
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var n int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &n)
			return n
		}
	}
	return 0
}

// contender runs sluice diff (in the child process).
func contender(ctx context.Context) (result, error) {
	t0 := time.Now()
	switch *mode {
	case "sluice":
		b, err := os.ReadFile(*jobF)
		if err != nil {
			return result{}, err
		}
		job, err := dsl.ParseJob(*jobF, b)
		if err != nil {
			return result{}, err
		}
		r := &runner.Runner{Log: slog.New(slog.DiscardHandler)}
		defer r.Close()
		prep, err := r.Plan(runner.WithCreate(ctx, runner.CreateNone), job)
		if err != nil {
			return result{}, err
		}
		d, err := r.Diff(ctx, prep, runner.DiffOptions{Limit: 10})
		if err != nil {
			return result{}, err
		}
		found := d.Missing + d.Extra + d.Different
		if *wantD >= 0 && found != int64(*wantD) {
			return result{}, fmt.Errorf("sluice diff found %d differences (missing %d, extra %d, different %d), want %d", found, d.Missing, d.Extra, d.Different, *wantD)
		}
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		return result{Seconds: time.Since(t0).Seconds(), Equal: d.Equal(), Found: found, Read: d.BucketsDiffer, RSS: vmHWM(), CPU: cpu}, nil
	}
	return result{}, fmt.Errorf("unknown mode %q", *mode)
}

// runSQL runs sluice-dialect statements on conn.
func runSQL(ctx context.Context, conn, text string) error {
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler)}
	defer r.Close()
	return r.ExecScript(ctx, conn, "setup.sql", text, nil)
}

// createSrc and trackSrc make the source table and, once its rows are
// loaded, its change tracking and stream (nothing pending).
const createSrc = `CREATE TABLE src (id BIGINT, name STRING, amount DECIMAL(12,2), ts TIMESTAMP, status STRING, PRIMARY KEY (id));`
const trackSrc = `ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM src_s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`

// scattered returns n keys spread over 1…rows.
func scattered(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1 + int(int64(i)*int64(*rows)/int64(n)) + 7*i%97
	}
	return out
}

// differences returns the statements (PostgreSQL and SQLite alike) that
// make n differences in table t.
func differences(t string, n int) []string {
	var out []string
	for i, k := range scattered(n) {
		switch i % 3 {
		case 0:
			out = append(out, fmt.Sprintf("UPDATE %s SET name = 'changed' WHERE id = %d", t, k))
		case 1:
			out = append(out, fmt.Sprintf("DELETE FROM %s WHERE id = %d", t, k))
		default:
			out = append(out, fmt.Sprintf("INSERT INTO %s SELECT id + %d, name, amount, ts, status FROM %s WHERE id = %d", t, *rows, t, k))
		}
	}
	return out
}

func writeJob(dir, name, src, tgt, table string) (string, error) {
	p := filepath.Join(dir, name+".yaml")
	body := fmt.Sprintf("name: %s\nconnection: '%s'\nsource: src_s\nsink: {table: %s, mode: merge, keys: [id], connection: '%s'}\n", name, src, table, tgt)
	return p, os.WriteFile(p, []byte(body), 0o644)
}

func preparePG(ctx context.Context, url, dir string) ([]benchCase, func(), error) {
	t0 := time.Now()
	db := fmt.Sprintf("sluice_bench_diff_%d", os.Getpid())
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		return nil, nil, err
	}
	cleanup := func() {
		c, err := pgx.Connect(context.Background(), url)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}
	conn := pgcluster.WithDB(url, db)
	if err := runSQL(ctx, conn, createSrc); err != nil {
		return nil, cleanup, err
	}
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		return nil, cleanup, err
	}
	defer c.Close(ctx)
	stmts := []string{
		fmt.Sprintf(`INSERT INTO src SELECT g, 'name ' || g, (g %% 100000) + (g %% 100) / 100.0, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second', CASE WHEN g %% 3 = 0 THEN 'active' ELSE 'closed' END FROM generate_series(1, %d) g`, *rows),
		"CREATE TABLE tgt_equal AS SELECT * FROM src", "ALTER TABLE tgt_equal ADD PRIMARY KEY (id)",
		"CREATE TABLE tgt_diff AS SELECT * FROM src", "ALTER TABLE tgt_diff ADD PRIMARY KEY (id)",
	}
	stmts = append(stmts, differences("tgt_diff", *diffs)...)
	stmts = append(stmts, "VACUUM ANALYZE src", "VACUUM ANALYZE tgt_equal", "VACUUM ANALYZE tgt_diff")
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			return nil, cleanup, fmt.Errorf("%s: %w", s, err)
		}
	}
	if err := runSQL(ctx, conn, trackSrc); err != nil {
		return nil, cleanup, err
	}
	var out []benchCase
	for _, t := range []struct {
		table string
		n     int
	}{{"tgt_equal", 0}, {"tgt_diff", *diffs}} {
		job, err := writeJob(dir, "pg_"+t.table, conn, conn, t.table)
		if err != nil {
			return nil, cleanup, err
		}
		out = append(out, benchCase{kind: "postgres", name: fmt.Sprintf("PostgreSQL → PostgreSQL, %d differences", t.n), src: conn, tgt: conn, table: t.table, job: job, diffs: t.n})
	}
	fmt.Fprintf(os.Stderr, "prepared PostgreSQL (%d rows) in %s\n", *rows, time.Since(t0).Round(time.Millisecond))
	return out, cleanup, nil
}

func prepareSQLite(ctx context.Context, dir string) ([]benchCase, error) {
	t0 := time.Now()
	src := filepath.Join(dir, "src.db")
	if err := runSQL(ctx, "sqlite:"+src, createSrc); err != nil {
		return nil, err
	}
	d, err := sql.Open("sqlite", src+"?_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	// Rows in sluice's SQLite storage forms: DECIMAL text at the column's
	// scale, TIMESTAMP text with its zone (docs/architecture.md).
	load := fmt.Sprintf(`WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < %d)
INSERT INTO src SELECT x, 'name ' || x, printf('%%d.%%02d', x %% 100000, x %% 100),
  strftime('%%Y-%%m-%%d %%H:%%M:%%S', 1704067200 + x, 'unixepoch') || '+00:00',
  CASE WHEN x %% 3 = 0 THEN 'active' ELSE 'closed' END FROM g`, *rows)
	if _, err := d.ExecContext(ctx, load); err != nil {
		return nil, err
	}
	if err := runSQL(ctx, "sqlite:"+src, trackSrc); err != nil {
		return nil, err
	}
	var out []benchCase
	for _, t := range []struct {
		table string
		n     int
	}{{"tgt_equal", 0}, {"tgt_diff", *diffs}} {
		path := filepath.Join(dir, t.table+".db")
		if err := runSQL(ctx, "sqlite:"+path, strings.ReplaceAll(createSrc, "TABLE src", "TABLE "+t.table)); err != nil {
			return nil, err
		}
		stmts := []string{"ATTACH DATABASE '" + path + "' AS t", "INSERT INTO t." + t.table + " SELECT * FROM main.src"}
		stmts = append(stmts, differences("t."+t.table, t.n)...)
		stmts = append(stmts, "DETACH DATABASE t")
		conn, err := d.Conn(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range stmts {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				conn.Close()
				return nil, fmt.Errorf("%s: %w", s, err)
			}
		}
		conn.Close()
		job, err := writeJob(dir, "sqlite_"+t.table, "sqlite:"+src, "sqlite:"+path, t.table)
		if err != nil {
			return nil, err
		}
		out = append(out, benchCase{kind: "sqlite", name: fmt.Sprintf("SQLite → SQLite, %d differences", t.n), src: "sqlite:" + src, tgt: "sqlite:" + path, table: t.table, job: job, diffs: t.n})
	}
	fmt.Fprintf(os.Stderr, "prepared SQLite (%d rows) in %s\n", *rows, time.Since(t0).Round(time.Millisecond))
	return out, nil
}

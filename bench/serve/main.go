// Command serve measures `sluice serve`: the change-to-target latency of a
// continuous job under a steady load, PostgreSQL → PostgreSQL (woken by
// the capture trigger's NOTIFY) side by side with SQLite → SQLite (which
// polls with the idle backoff), and the idle CPU and peak RSS of a server
// with many configured jobs and no changes.
//
//	go run ./bench/serve                          # 1,000 changes/s for 30s; 50 idle jobs for 30s
//	go run ./bench/serve -rate 500 -load 10s -idle 10s -jobs 20
//	go run ./bench/serve -pg 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
//
// Run it from the repository root: it builds ./cmd/sluice into a temporary
// directory and runs `sluice serve` as a child process per phase, so CPU
// time and peak RSS (getrusage of the child) are the server's alone.
//
// Latency phase: a writer inserts rate rows per second in batches every
// 10 ms (a bounded loop), each row carrying its insert time in
// microseconds (PostgreSQL: clock_timestamp() in a column default;
// SQLite: the writer's clock). The job (schedule: continuous, append sink,
// target in another database) copies them; a poller reads the target
// every -poll and records, per row, the time it first saw the row minus
// its insert time. Idle phase: -jobs continuous jobs on SQLite streams (or
// PostgreSQL with -idle-pg) and no changes; the child's (utime + stime) /
// wall time is its idle CPU.
//
// Scale phase (-scale 50,200,1000; scale.go): N tracked tables and N jobs,
// half continuous and half @every 10s, on one `sluice serve` per backend:
// start-up until /readyz, idle CPU, connections held, an application's
// one-row commit latency, and the delivery of one change per table.
//
//	go run ./bench/serve -skip pg,sqlite,idle -scale 50,200,1000
//	go run ./bench/serve -skip pg,sqlite,idle -scale 200 -bin /tmp/sluice-old   # an older build, side by side
//	go run ./bench/serve -skip pg,sqlite,idle -scale 200 -procs 3               # 3 processes, one killed (fleet.go)
//
// bench/serve/statements.sh BIN counts the PostgreSQL statements one delivery of one job costs
// under `BIN serve` (the server's statement log of a database of its own).
//
// Temporary PostgreSQL databases (sluice_bench_*) are dropped at the end.
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicedata/sluice/runner"
	_ "github.com/sluicedata/sluice/sources/postgres"
	_ "github.com/sluicedata/sluice/sources/sqlite"
)

var (
	pgURL  = flag.String("pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server (maintenance database) for the PostgreSQL phases")
	rate   = flag.Int("rate", 1000, "changes per second in the latency phases")
	load   = flag.Duration("load", 30*time.Second, "duration of the load in each latency phase")
	poll   = flag.Duration("poll", 2*time.Millisecond, "how often the poller reads the target")
	jobs   = flag.Int("jobs", 50, "jobs of the idle phase")
	idle   = flag.Duration("idle", 30*time.Second, "duration of the idle phase")
	idlePG = flag.Bool("idle-pg", true, "also measure an idle phase with PostgreSQL continuous jobs (one LISTEN each)")
	skip   = flag.String("skip", "", "comma-separated phases to skip: pg, sqlite, idle")
)

const tick = 10 * time.Millisecond

func main() {
	flag.Parse()
	ctx := context.Background()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type latency struct {
	name      string
	rows      int
	p50, p99  time.Duration
	max       time.Duration
	cpu, wall time.Duration // the child's CPU time and lifetime
	rssKB     int64
}

type idleResult struct {
	name  string
	jobs  int
	wall  time.Duration
	cpu   time.Duration
	rssKB int64
}

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "sluice-bench-serve-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := *binFlag
	if bin == "" {
		bin = filepath.Join(dir, "sluice")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build ./cmd/sluice (run from the repository root): %w", err)
		}
	}
	skipped := map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		skipped[strings.TrimSpace(s)] = true
	}
	var lats []latency
	var idles []idleResult
	if !skipped["pg"] {
		l, err := pgLatency(ctx, bin, dir)
		if err != nil {
			return fmt.Errorf("postgres latency: %w", err)
		}
		lats = append(lats, l)
	}
	if !skipped["sqlite"] {
		l, err := sqliteLatency(ctx, bin, dir)
		if err != nil {
			return fmt.Errorf("sqlite latency: %w", err)
		}
		lats = append(lats, l)
	}
	if !skipped["idle"] {
		r, err := sqliteIdle(ctx, bin, dir)
		if err != nil {
			return fmt.Errorf("idle: %w", err)
		}
		idles = append(idles, r)
		if *idlePG {
			r, err := pgIdle(ctx, bin, dir)
			if err != nil {
				return fmt.Errorf("idle postgres: %w", err)
			}
			idles = append(idles, r)
		}
	}
	var scales []scaleResult
	if *scaleJobs != "" {
		scales, err = runScale(ctx, bin, dir)
		if err != nil {
			printScale(scales)
			printFleet(fleetResults)
			return err
		}
	}
	if len(lats) > 0 {
		fmt.Printf("\nchange-to-target latency, %d changes/s for %s (poller every %s)\n", *rate, *load, *poll)
		fmt.Printf("%-46s %8s %9s %9s %9s %9s %9s\n", "job", "rows", "p50", "p99", "max", "CPU", "peak RSS")
		// CPU: the child's (utime + stime) / its lifetime (warm-up and drain included).
		for _, l := range lats {
			fmt.Printf("%-46s %8d %9s %9s %9s %8.1f%% %7dMB\n", l.name, l.rows, ms(l.p50), ms(l.p99), ms(l.max),
				100*l.cpu.Seconds()/l.wall.Seconds(), l.rssKB/1024)
		}
	}
	if len(idles) > 0 {
		fmt.Printf("\nidle `sluice serve`, no changes\n")
		fmt.Printf("%-46s %6s %8s %10s %9s %9s\n", "jobs", "count", "wall", "CPU time", "CPU", "peak RSS")
		for _, r := range idles {
			fmt.Printf("%-46s %6d %8s %10s %8.2f%% %7dMB\n", r.name, r.jobs, r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond),
				100*r.cpu.Seconds()/r.wall.Seconds(), r.rssKB/1024)
		}
	}
	printScale(scales)
	printFleet(fleetResults)
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

// server is a running `sluice serve` child.
type server struct {
	cmd   *exec.Cmd
	start time.Time
	done  chan error
}

func startServer(ctx context.Context, bin, logFile string, args ...string) (*server, error) {
	lf, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve"}, args...)...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	s := &server{cmd: cmd, start: time.Now(), done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait(); lf.Close() }()
	return s, nil
}

// stop sends SIGTERM, waits (bounded) and returns wall time, CPU time and
// peak RSS in KiB.
func (s *server) stop() (time.Duration, time.Duration, int64, error) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-s.done:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		err = <-s.done
		err = errors.Join(errors.New("sluice serve did not stop within 60s of SIGTERM"), err)
	}
	wall := time.Since(s.start)
	if s.cmd.ProcessState == nil {
		return wall, 0, 0, err
	}
	ru := s.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return wall, cpu, ru.Maxrss, err
}

// --- PostgreSQL ---------------------------------------------------------

func dbURL(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// createDB creates a uniquely named database and returns its URL and a
// drop function.
func createDB(ctx context.Context, what string) (string, func(), error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "sluice_bench_" + what + "_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, *pgURL)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, err
	}
	u, err := dbURL(*pgURL, name)
	if err != nil {
		return "", nil, err
	}
	drop := func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(cctx, *pgURL)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drop", name+":", err)
			return
		}
		defer c.Close(cctx)
		if _, err := c.Exec(cctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "drop", name+":", err)
		}
	}
	return u, drop, nil
}

// sluiceExec runs sluice statements on conn.
func sluiceExec(ctx context.Context, conn, text string) error {
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler)}
	defer r.Close()
	return r.ExecScript(ctx, conn, "setup.sql", text, nil)
}

const jobYAML = `name: %s
connection: %s
source: %s
filter: "` + "`__change_type`" + ` = 'INSERT'"
select: [id, ins]
sink:
  table: %s
  mode: append
  connection: %s
schedule: %s
`

func pgLatency(ctx context.Context, bin, dir string) (latency, error) {
	src, dropSrc, err := createDB(ctx, "src")
	if err != nil {
		return latency{}, err
	}
	defer dropSrc()
	dst, dropDst, err := createDB(ctx, "dst")
	if err != nil {
		return latency{}, err
	}
	defer dropDst()
	sp, err := pgxpool.New(ctx, src)
	if err != nil {
		return latency{}, err
	}
	defer sp.Close()
	dp, err := pgxpool.New(ctx, dst)
	if err != nil {
		return latency{}, err
	}
	defer dp.Close()
	if _, err := sp.Exec(ctx, `CREATE TABLE ev (id bigint PRIMARY KEY, ins bigint NOT NULL DEFAULT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint)`); err != nil {
		return latency{}, err
	}
	if _, err := dp.Exec(ctx, `CREATE TABLE ev_copy (id bigint PRIMARY KEY, ins bigint NOT NULL)`); err != nil {
		return latency{}, err
	}
	if err := sluiceExec(ctx, src, `ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM ev_stream ON TABLE ev WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`); err != nil {
		return latency{}, err
	}
	jobs := filepath.Join(dir, "pg-jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		return latency{}, err
	}
	if err := os.WriteFile(filepath.Join(jobs, "ev.yaml"), fmt.Appendf(nil, jobYAML, "ev_copy", quoteYAML(src), "ev_stream", "ev_copy", quoteYAML(dst), "continuous"), 0o644); err != nil {
		return latency{}, err
	}
	insert := func(ctx context.Context, from, to int64) error {
		_, err := sp.Exec(ctx, `INSERT INTO ev (id) SELECT g FROM generate_series($1::bigint, $2::bigint) g`, from, to)
		return err
	}
	seen := func(ctx context.Context, after int64) ([][2]int64, error) {
		rows, err := dp.Query(ctx, `SELECT id, ins FROM ev_copy WHERE id > $1`, after)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]int64, error) {
			var v [2]int64
			err := r.Scan(&v[0], &v[1])
			return v, err
		})
	}
	l, err := measure(ctx, bin, filepath.Join(dir, "pg-serve.log"), []string{"--conn", src, jobs}, insert, seen)
	l.name = "PostgreSQL → PostgreSQL, continuous, NOTIFY"
	return l, err
}

func quoteYAML(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// --- SQLite -------------------------------------------------------------

func openSQLite(path string) (*sql.DB, error) {
	return sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
}

func sqliteLatency(ctx context.Context, bin, dir string) (latency, error) {
	srcPath, dstPath := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	if err := sluiceExec(ctx, "sqlite:"+srcPath, `CREATE TABLE ev (id BIGINT, ins BIGINT, PRIMARY KEY (id));
ALTER TABLE ev SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM ev_stream ON TABLE ev WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');`); err != nil {
		return latency{}, err
	}
	if err := sluiceExec(ctx, "sqlite:"+dstPath, `CREATE TABLE ev_copy (id BIGINT, ins BIGINT, PRIMARY KEY (id));`); err != nil {
		return latency{}, err
	}
	jobs := filepath.Join(dir, "sqlite-jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		return latency{}, err
	}
	if err := os.WriteFile(filepath.Join(jobs, "ev.yaml"), fmt.Appendf(nil, jobYAML, "ev_copy", quoteYAML("sqlite:"+srcPath), "ev_stream", "ev_copy", quoteYAML("sqlite:"+dstPath), "continuous"), 0o644); err != nil {
		return latency{}, err
	}
	sdb, err := openSQLite(srcPath)
	if err != nil {
		return latency{}, err
	}
	defer sdb.Close()
	ddb, err := openSQLite(dstPath)
	if err != nil {
		return latency{}, err
	}
	defer ddb.Close()
	insert := func(ctx context.Context, from, to int64) error {
		tx, err := sdb.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		st, err := tx.PrepareContext(ctx, `INSERT INTO ev (id, ins) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		for id := from; id <= to; id++ {
			if _, err := st.ExecContext(ctx, id, time.Now().UnixMicro()); err != nil {
				return err
			}
		}
		return tx.Commit()
	}
	seen := func(ctx context.Context, after int64) ([][2]int64, error) {
		rows, err := ddb.QueryContext(ctx, `SELECT id, ins FROM ev_copy WHERE id > ?`, after)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out [][2]int64
		for rows.Next() {
			var v [2]int64
			if err := rows.Scan(&v[0], &v[1]); err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, rows.Err()
	}
	l, err := measure(ctx, bin, filepath.Join(dir, "sqlite-serve.log"), []string{"--conn", "sqlite:" + filepath.Join(dir, "state.db"), jobs}, insert, seen)
	l.name = "SQLite → SQLite, continuous, polling"
	return l, err
}

// --- the latency measurement -------------------------------------------

// measure starts the server, waits until a warm-up row arrives, runs the
// writer and the poller, waits (bounded) for every row and stops the
// server. insert writes ids from..to; seen returns (id, insert µs) of
// target rows with id > after.
func measure(ctx context.Context, bin, logFile string, args []string, insert func(context.Context, int64, int64) error, seen func(context.Context, int64) ([][2]int64, error)) (latency, error) {
	srv, err := startServer(ctx, bin, logFile, args...)
	if err != nil {
		return latency{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _, _, _ = srv.stop()
		}
	}()
	fail := func(err error) (latency, error) {
		log, _ := os.ReadFile(logFile)
		return latency{}, fmt.Errorf("%w\nsluice serve log:\n%s", err, tail(string(log), 2000))
	}
	// Warm-up: row 0 must arrive before the load starts (bounded).
	if err := insert(ctx, 0, 0); err != nil {
		return fail(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	for {
		rows, err := seen(wctx, -1)
		if err == nil && len(rows) > 0 {
			break
		}
		if wctx.Err() != nil {
			cancel()
			return fail(errors.New("the warm-up row did not reach the target within 60s"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()

	perTick := int64(*rate) * int64(tick) / int64(time.Second)
	ticks := int(*load / tick)
	total := perTick * int64(ticks)
	writerErr := make(chan error, 1)
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		next := int64(1)
		for i := 0; i < ticks; i++ {
			<-t.C
			if err := insert(ctx, next, next+perTick-1); err != nil {
				writerErr <- err
				return
			}
			next += perTick
		}
		writerErr <- nil
	}()
	lat := make([]time.Duration, 0, total)
	got := make(map[int64]bool, total)
	var wm int64 // every id ≤ wm was seen
	deadline := time.Now().Add(*load + 60*time.Second)
	var werr error
	writing := true
	for int64(len(got)) < total && time.Now().Before(deadline) {
		if writing {
			select {
			case werr = <-writerErr:
				writing = false
				if werr != nil {
					return fail(fmt.Errorf("writer: %w", werr))
				}
			default:
			}
		}
		rows, err := seen(ctx, wm)
		now := time.Now().UnixMicro()
		if err != nil {
			return fail(fmt.Errorf("poller: %w", err))
		}
		for _, r := range rows {
			if got[r[0]] {
				continue
			}
			got[r[0]] = true
			lat = append(lat, time.Duration(now-r[1])*time.Microsecond)
		}
		for got[wm+1] {
			wm++
		}
		time.Sleep(*poll)
	}
	wall, cpu, rss, err := srv.stop()
	stopped = true
	if err != nil {
		return fail(err)
	}
	if int64(len(lat)) < total {
		return fail(fmt.Errorf("only %d of %d rows reached the target within the deadline", len(lat), total))
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return latency{rows: len(lat), p50: q(0.50), p99: q(0.99), max: lat[len(lat)-1], cpu: cpu, wall: wall, rssKB: rss}, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// --- idle ---------------------------------------------------------------

// idleJobs writes n jobs on n tables of conn: the first half continuous,
// the second @every 10s when mixed, else all continuous.
func idleJobs(ctx context.Context, conn, sinkConn, dir string, n int, mixed bool, pre func(i int) error) error {
	return writeJobs(ctx, conn, sinkConn, dir, n, mixed, pre, true)
}

// writeJobs is idleJobs; with setup false it writes the job files only
// (the tables, their tracking and streams exist: a copy from -scale-cache).
func writeJobs(ctx context.Context, conn, sinkConn, dir string, n int, mixed bool, pre func(i int) error, setup bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var ddl strings.Builder
	for i := range n {
		switch {
		case !setup:
		case pre != nil:
			if err := pre(i); err != nil {
				return err
			}
		default:
			fmt.Fprintf(&ddl, "CREATE TABLE t%d (id BIGINT, ins BIGINT, PRIMARY KEY (id));\n", i)
		}
		fmt.Fprintf(&ddl, "ALTER TABLE t%d SET PROPERTIES ('change_tracking' = 'true');\n", i)
		fmt.Fprintf(&ddl, "CREATE TABLE STREAM s%d ON TABLE t%d WITH PROPERTIES ('TABLE_STREAM_MODE' = 'APPEND_ONLY');\n", i, i)
		sched := "continuous"
		if mixed && i >= n/2 {
			sched = `"@every 10s"`
		}
		name := fmt.Sprintf("j%d", i)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), fmt.Appendf(nil, jobYAML, name, quoteYAML(conn), fmt.Sprintf("s%d", i), fmt.Sprintf("r%d", i), quoteYAML(sinkConn), sched), 0o644); err != nil {
			return err
		}
	}
	if !setup {
		return nil
	}
	return sluiceExec(ctx, conn, ddl.String())
}

func runIdle(ctx context.Context, bin, logFile string, args ...string) (time.Duration, time.Duration, int64, error) {
	srv, err := startServer(ctx, bin, logFile, args...)
	if err != nil {
		return 0, 0, 0, err
	}
	time.Sleep(*idle)
	wall, cpu, rss, err := srv.stop()
	if err != nil {
		log, _ := os.ReadFile(logFile)
		err = fmt.Errorf("%w\nsluice serve log:\n%s", err, tail(string(log), 2000))
	}
	return wall, cpu, rss, err
}

func sqliteIdle(ctx context.Context, bin, dir string) (idleResult, error) {
	db := filepath.Join(dir, "idle.db")
	sink := filepath.Join(dir, "idle-sink.db")
	var targets strings.Builder
	for i := range *jobs {
		fmt.Fprintf(&targets, "CREATE TABLE r%d (id BIGINT, ins BIGINT, PRIMARY KEY (id));\n", i)
	}
	if err := sluiceExec(ctx, "sqlite:"+sink, targets.String()); err != nil {
		return idleResult{}, err
	}
	jd := filepath.Join(dir, "idle-jobs")
	if err := idleJobs(ctx, "sqlite:"+db, "sqlite:"+sink, jd, *jobs, true, nil); err != nil {
		return idleResult{}, err
	}
	wall, cpu, rss, err := runIdle(ctx, bin, filepath.Join(dir, "idle-serve.log"), "--conn", "sqlite:"+db, jd)
	return idleResult{name: fmt.Sprintf("SQLite: %d continuous + %d @every 10s", *jobs/2, *jobs-*jobs/2), jobs: *jobs, wall: wall, cpu: cpu, rssKB: rss}, err
}

func pgIdle(ctx context.Context, bin, dir string) (idleResult, error) {
	src, dropSrc, err := createDB(ctx, "idle")
	if err != nil {
		return idleResult{}, err
	}
	defer dropSrc()
	pool, err := pgxpool.New(ctx, src)
	if err != nil {
		return idleResult{}, err
	}
	defer pool.Close()
	pre := func(i int) error {
		_, err := pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE t%d (id bigint PRIMARY KEY, ins bigint NOT NULL); CREATE TABLE r%d (id bigint PRIMARY KEY, ins bigint NOT NULL)`, i, i))
		return err
	}
	jd := filepath.Join(dir, "idle-pg-jobs")
	if err := idleJobs(ctx, src, src, jd, *jobs, false, pre); err != nil {
		return idleResult{}, err
	}
	wall, cpu, rss, err := runIdle(ctx, bin, filepath.Join(dir, "idle-pg-serve.log"), "--conn", src, jd)
	return idleResult{name: fmt.Sprintf("PostgreSQL: %d continuous (LISTEN each)", *jobs), jobs: *jobs, wall: wall, cpu: cpu, rssKB: rss}, err
}

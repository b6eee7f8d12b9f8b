package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The scale phase (issue #19): N tracked tables and N jobs, half
// continuous and half @every 10s, on one `sluice serve`, per backend. It
// measures the start-up until /readyz says every job is armed, the idle
// CPU over -scale-idle once armed, the connections the server holds
// (PostgreSQL: pg_stat_activity rows with the server's application_name,
// sampled every second, maximum; SQLite: the server's open file
// descriptors on the source and sink files), an application's one-row
// commit into a tracked table while the jobs are configured, and how long
// one change to every table takes to reach its target (continuous jobs:
// p50/p99; @every jobs: the maximum, which the schedule bounds at 10 s plus
// the run). Peak RSS is the server's.
var (
	scaleJobs     = flag.String("scale", "", "comma-separated job counts of the scale phase, e.g. 50,200,1000 (half continuous, half @every 10s); '' skips it")
	scaleBackends = flag.String("scale-backends", "sqlite,postgres", "backends of the scale phase")
	scaleIdle     = flag.Duration("scale-idle", 30*time.Second, "idle window of the scale phase, measured after start-up")
	binFlag       = flag.String("bin", "", "a prebuilt sluice binary to measure instead of building ./cmd/sluice (e.g. an older version, for a side-by-side run)")
	scaleCache    = flag.String("scale-cache", "", "a directory keeping the SQLite scale phase's source and sink files as set up (before serve ran): a later run with the same -scale-cache copies them instead of setting up N tracked tables again (minutes at 1,000)")
)

type scaleResult struct {
	backend           string
	jobs              int
	startup           time.Duration
	idleCPU           float64 // percent of one core
	conns             int
	commitP50         time.Duration
	commitP99         time.Duration
	contP50, contP99  time.Duration
	timedMax          time.Duration
	delivered, tables int
	rssMB             int64
	errors            int
	firstRuns         time.Duration // from the start until every job had run once
}

const appName = "sluice_bench_scale"

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// procCPU returns the CPU time (utime + stime) of pid.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * (time.Second / 100), nil // USER_HZ = 100 on Linux
}

// fdsOn counts pid's open file descriptors on files whose path starts with
// one of prefixes.
func fdsOn(pid int, prefixes ...string) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		t, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err != nil {
			continue
		}
		for _, p := range prefixes {
			if t == p { // the database file itself (not -wal/-shm): one per connection
				n++
			}
		}
	}
	return n
}

func runScale(ctx context.Context, bin, dir string) ([]scaleResult, error) {
	var out []scaleResult
	for _, ns := range strings.Split(*scaleJobs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(ns))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("-scale: %q is not a job count of at least 2", ns)
		}
		for _, b := range strings.Split(*scaleBackends, ",") {
			b = strings.TrimSpace(b)
			fmt.Fprintf(os.Stderr, "scale: %s, %d jobs …\n", b, n)
			var r scaleResult
			switch b {
			case "sqlite":
				r, err = scaleSQLite(ctx, bin, dir, n)
			case "postgres":
				r, err = scalePG(ctx, bin, dir, n)
			default:
				err = fmt.Errorf("-scale-backends: unknown backend %q (sqlite, postgres)", b)
			}
			if err != nil {
				return out, fmt.Errorf("scale %s %d: %w", b, n, err)
			}
			if r.jobs > 0 { // (a fleet's result is in fleetResults)
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// scaleEnv is what one scale run needs from its backend.
type scaleEnv struct {
	backend string
	n       int
	args    []string                                                   // serve's arguments after the job directory is appended
	conns   func(pid int) int                                          // connections the server holds now
	insert  func(ctx context.Context, i int, id, us int64) error       // one application commit of (id, us) into table t<i>
	seen    func(ctx context.Context, id int64) (map[int]int64, error) // per target r<i> that holds row id: its ins value
}

func scaleSQLite(ctx context.Context, bin, dir string, n int) (scaleResult, error) {
	src := filepath.Join(dir, fmt.Sprintf("scale-%d.db", n))
	sink := filepath.Join(dir, fmt.Sprintf("scale-%d-sink.db", n))
	jd := filepath.Join(dir, fmt.Sprintf("scale-%d-sqlite-jobs", n))
	cached := false
	if *scaleCache != "" {
		var err error
		if cached, err = fromCache(src, sink); err != nil {
			return scaleResult{}, err
		}
	}
	if !cached {
		t0 := time.Now()
		var targets strings.Builder
		for i := range n {
			fmt.Fprintf(&targets, "CREATE TABLE r%d (id BIGINT, ins BIGINT, PRIMARY KEY (id));\n", i)
		}
		if err := sluiceExec(ctx, "sqlite:"+sink, targets.String()); err != nil {
			return scaleResult{}, err
		}
		if err := idleJobs(ctx, "sqlite:"+src, "sqlite:"+sink, jd, n, true, nil); err != nil {
			return scaleResult{}, err
		}
		fmt.Fprintf(os.Stderr, "scale: set up %d tracked SQLite tables in %s\n", n, time.Since(t0).Round(100*time.Millisecond))
		if *scaleCache != "" {
			if err := toCache(src, sink); err != nil {
				return scaleResult{}, err
			}
		}
	} else if err := writeJobs(ctx, "sqlite:"+src, "sqlite:"+sink, jd, n, true, nil, false); err != nil {
		return scaleResult{}, err
	}
	app, err := openSQLite(src)
	if err != nil {
		return scaleResult{}, err
	}
	defer app.Close()
	app.SetMaxOpenConns(1)
	rd, err := openSQLite(sink)
	if err != nil {
		return scaleResult{}, err
	}
	defer rd.Close()
	rd.SetMaxOpenConns(1)
	srcAbs, _ := filepath.Abs(src)
	sinkAbs, _ := filepath.Abs(sink)
	return scaleDispatch(ctx, bin, dir, jd, scaleEnv{
		backend: "SQLite", n: n,
		args:  []string{"--conn", "sqlite:" + src, "--state", "sqlite:" + filepath.Join(dir, fmt.Sprintf("scale-%d-state.db", n))},
		conns: func(pid int) int { return fdsOn(pid, srcAbs, sinkAbs) },
		insert: func(ctx context.Context, i int, id, us int64) error {
			_, err := app.ExecContext(ctx, fmt.Sprintf("INSERT INTO t%d VALUES (?, ?)", i), id, us)
			return err
		},
		seen: func(ctx context.Context, id int64) (map[int]int64, error) { return seenRows(ctx, rd, n, id) },
	})
}

// seenRows reads row id of every target r0…r<n-1>, 400 targets per
// statement (SQLite allows 500 terms in a compound SELECT).
func seenRows(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, n int, id int64) (map[int]int64, error) {
	out := map[int]int64{}
	for lo := 0; lo < n; lo += 400 {
		var b strings.Builder
		for i := lo; i < min(n, lo+400); i++ {
			if i > lo {
				b.WriteString(" UNION ALL ")
			}
			fmt.Fprintf(&b, "SELECT %d, ins FROM r%d WHERE id = %d", i, i, id)
		}
		rows, err := q.QueryContext(ctx, b.String())
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var i int
			var ins int64
			if err := rows.Scan(&i, &ins); err != nil {
				rows.Close()
				return nil, err
			}
			out[i] = ins
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scalePG(ctx context.Context, bin, dir string, n int) (scaleResult, error) {
	src, drop, err := createDB(ctx, "scale")
	if err != nil {
		return scaleResult{}, err
	}
	defer drop()
	conn, err := pgx.Connect(ctx, src)
	if err != nil {
		return scaleResult{}, err
	}
	defer conn.Close(ctx)
	var ddl strings.Builder
	for i := range n {
		fmt.Fprintf(&ddl, "CREATE TABLE t%d (id bigint PRIMARY KEY, ins bigint NOT NULL); CREATE TABLE r%d (id bigint PRIMARY KEY, ins bigint NOT NULL);\n", i, i)
	}
	if _, err := conn.Exec(ctx, ddl.String()); err != nil {
		return scaleResult{}, err
	}
	served := src + "&application_name=" + appName
	if !strings.Contains(src, "?") {
		served = src + "?application_name=" + appName
	}
	jd := filepath.Join(dir, fmt.Sprintf("scale-%d-pg-jobs", n))
	if err := idleJobs(ctx, served, served, jd, n, true, func(int) error { return nil }); err != nil {
		return scaleResult{}, err
	}
	mon, err := pgx.Connect(ctx, src)
	if err != nil {
		return scaleResult{}, err
	}
	defer mon.Close(ctx)
	rd, err := pgx.Connect(ctx, src)
	if err != nil {
		return scaleResult{}, err
	}
	defer rd.Close(ctx)
	return scaleDispatch(ctx, bin, dir, jd, scaleEnv{
		backend: "PostgreSQL", n: n,
		args: []string{"--conn", served},
		conns: func(int) int {
			var c int
			_ = mon.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", appName).Scan(&c)
			return c
		},
		insert: func(ctx context.Context, i int, id, us int64) error {
			_, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO t%d VALUES ($1, $2)", i), id, us)
			return err
		},
		seen: func(ctx context.Context, id int64) (map[int]int64, error) {
			var b strings.Builder
			for i := range n {
				if i > 0 {
					b.WriteString(" UNION ALL ")
				}
				fmt.Fprintf(&b, "SELECT %d, ins FROM r%d WHERE id = %d", i, i, id)
			}
			rows, err := rd.Query(ctx, b.String())
			if err != nil {
				return nil, err
			}
			out := map[int]int64{}
			for rows.Next() {
				var i int
				var ins int64
				if err := rows.Scan(&i, &ins); err != nil {
					rows.Close()
					return nil, err
				}
				out[i] = ins
			}
			rows.Close()
			return out, rows.Err()
		},
	})
}

func scaleRun(ctx context.Context, bin, dir, jobDir string, env scaleEnv) (scaleResult, error) {
	r := scaleResult{backend: env.backend, jobs: env.n, tables: env.n}
	addr, err := freePort()
	if err != nil {
		return r, err
	}
	logFile := filepath.Join(dir, fmt.Sprintf("scale-%s-%d.log", env.backend, env.n))
	srv, err := startServer(ctx, bin, logFile, append(append([]string{"--listen", addr}, env.args...), jobDir)...)
	if err != nil {
		return r, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _, _, _ = srv.stop()
		}
	}()
	pid := srv.cmd.Process.Pid
	connsMax := 0
	sample := func() { connsMax = max(connsMax, env.conns(pid)) }
	// Start-up: until /readyz answers 200.
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(srv.start) > 5*time.Minute {
			return r, fmt.Errorf("not ready after 5 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.startup = time.Since(srv.start)
	// Let the first runs (every continuous job at once, the timed ones at
	// their first fire) pass before measuring idle: at least 12 s, and
	// until every job has run once (sluice_runs_total of each job; the
	// total alone counted a continuous job's repeated runs, so the idle
	// window began while hundreds of jobs had not run yet), at most 3
	// minutes.
	for t0 := time.Now(); time.Since(t0) < 3*time.Minute; time.Sleep(time.Second) {
		sample()
		if time.Since(t0) < 12*time.Second {
			continue
		}
		m, err := metricsOf(addr)
		ran := 0
		for k := range m {
			if strings.HasPrefix(k, "ran:") {
				ran++
			}
		}
		if err == nil && ran >= env.n {
			r.firstRuns = time.Since(srv.start)
			break
		}
	}
	if r.firstRuns == 0 {
		fmt.Fprintf(os.Stderr, "scale %s %d: not every job ran within 3 minutes; measuring idle anyway\n", env.backend, env.n)
	}
	cpu0, err := procCPU(pid)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	phase(env, "idle window starts")
	for time.Since(t0) < *scaleIdle {
		sample()
		time.Sleep(time.Second)
	}
	cpu1, _ := procCPU(pid)
	r.idleCPU = 100 * (cpu1 - cpu0).Seconds() / time.Since(t0).Seconds()
	// An application's one-row commits into tracked table t0 while the jobs
	// are configured (t0 is left out of the delivery check below).
	var lat []time.Duration
	for k := range 200 {
		s := time.Now()
		if err := env.insert(ctx, 0, int64(k)+100, 0); err != nil {
			return r, fmt.Errorf("application commit into t0: %w", err)
		}
		lat = append(lat, time.Since(s))
	}
	slices.Sort(lat)
	r.commitP50, r.commitP99 = lat[len(lat)/2], lat[len(lat)*99/100]
	// One change to every table (t0 is left out: it took the commits
	// above); each target is watched while the changes are written.
	phase(env, "delivery round starts")
	arrived, err := deliverRound(ctx, env, 1, 1, 60*time.Second, sample)
	phase(env, "delivery round ends")
	if err != nil {
		return r, err
	}
	var cont, timed []time.Duration
	for i, d := range arrived {
		if i < env.n/2 {
			cont = append(cont, d)
		} else {
			timed = append(timed, d)
		}
	}
	slices.Sort(cont)
	slices.Sort(timed)
	if len(cont) > 0 {
		r.contP50, r.contP99 = cont[len(cont)/2], cont[min(len(cont)-1, len(cont)*99/100)]
	}
	if len(timed) > 0 {
		r.timedMax = timed[len(timed)-1]
	}
	r.delivered, r.tables = len(arrived), env.n-1
	sample()
	r.conns = connsMax
	stopped = true
	_, _, rss, err := srv.stop()
	r.rssMB = rss / 1024
	logb, _ := os.ReadFile(logFile)
	r.errors = strings.Count(string(logb), "level=ERROR")
	if r.delivered < r.tables {
		fmt.Fprintf(os.Stderr, "scale %s %d: %d of %d changes not delivered; serve log:\n%s\n", env.backend, env.n, r.tables-r.delivered, r.tables, tail(string(logb), 3000))
	}
	return r, err
}

// phase prints the start of a phase of a scale run to stderr with the
// wall time, for lining up a profile of the server (perf, the database's
// statement log) with the phases.
func phase(env scaleEnv, what string) {
	fmt.Fprintf(os.Stderr, "scale %s %d: %s at %s\n", env.backend, env.n, what, time.Now().UTC().Format("15:04:05.000"))
}

// deliverRound inserts row id into tables t<first>…t<n-1>, each carrying
// its insert time (µs), in one goroutine while it polls the targets every
// 100 ms, and returns per table the time from the insert to the first
// poll that saw the row. It waits until every row arrived or wait after
// the last insert. The first insert into each table of a session plans
// its statement and the capture trigger (on PostgreSQL about 100 ms per
// table on a loaded machine): polling only after all inserts made the
// early tables' delivery look minutes long.
func deliverRound(ctx context.Context, env scaleEnv, id int64, first int, wait time.Duration, sample func()) (map[int]time.Duration, error) {
	done := make(chan error, 1)
	go func() {
		for i := first; i < env.n; i++ {
			if err := env.insert(ctx, i, id, time.Now().UnixMicro()); err != nil {
				done <- fmt.Errorf("insert into t%d: %w", i, err)
				return
			}
		}
		done <- nil
	}()
	arrived := map[int]time.Duration{}
	var deadline time.Time
	for len(arrived) < env.n-first && (deadline.IsZero() || time.Now().Before(deadline)) {
		if deadline.IsZero() {
			select {
			case err := <-done:
				if err != nil {
					return arrived, err
				}
				deadline = time.Now().Add(wait)
			default:
			}
		}
		sample()
		got, err := env.seen(ctx, id)
		if err != nil {
			fmt.Fprintln(os.Stderr, "read the targets:", err)
		}
		now := time.Now().UnixMicro()
		for i, ins := range got {
			if _, ok := arrived[i]; !ok && i >= first && ins > 0 {
				arrived[i] = time.Duration(now-ins) * time.Microsecond
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if deadline.IsZero() {
		if err := <-done; err != nil {
			return arrived, err
		}
	}
	return arrived, nil
}

func printScale(rs []scaleResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Printf("\nscale: N jobs on one `sluice serve` (half continuous, half @every 10s), idle %s, then one change per table\n", *scaleIdle)
	fmt.Printf("%-11s %6s %9s %10s %9s %6s %16s %18s %10s %10s %9s %7s\n", "backend", "jobs", "armed in", "all ran in", "idle CPU", "conns", "app commit p50/99", "continuous p50/p99", "@every max", "delivered", "peak RSS", "errors")
	for _, r := range rs {
		fmt.Printf("%-11s %6d %9s %10s %8.1f%% %6d %16s %18s %10s %10s %7dMB %7d\n", r.backend, r.jobs, r.startup.Round(10*time.Millisecond), r.firstRuns.Round(100*time.Millisecond), r.idleCPU, r.conns,
			ms(r.commitP50)+"/"+ms(r.commitP99), ms(r.contP50)+"/"+ms(r.contP99), r.timedMax.Round(10*time.Millisecond),
			fmt.Sprintf("%d/%d", r.delivered, r.tables), r.rssMB, r.errors)
	}
}

// fromCache copies the source and sink files of a scale run from
// -scale-cache, if it holds them, to src and sink; ok is false when it
// does not.
func fromCache(src, sink string) (ok bool, err error) {
	for _, p := range []string{src, sink} {
		if _, err := os.Stat(filepath.Join(*scaleCache, filepath.Base(p))); err != nil {
			return false, nil
		}
	}
	for _, p := range []string{src, sink} {
		if err := copyFile(filepath.Join(*scaleCache, filepath.Base(p)), p); err != nil {
			return false, err
		}
	}
	fmt.Fprintf(os.Stderr, "scale: source and sink copied from %s\n", *scaleCache)
	return true, nil
}

// toCache checkpoints src and sink (so that each is one file) and copies
// them into -scale-cache.
func toCache(src, sink string) error {
	if err := os.MkdirAll(*scaleCache, 0o755); err != nil {
		return err
	}
	for _, p := range []string{src, sink} {
		db, err := openSQLite(p)
		if err != nil {
			return err
		}
		_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		db.Close()
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", p, err)
		}
		if err := copyFile(p, filepath.Join(*scaleCache, filepath.Base(p))); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

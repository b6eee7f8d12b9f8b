// Command notify measures what `sluice serve`'s wake-ups cost the
// application: the latency of an application's one-row commit into a
// tracked PostgreSQL table while 0, 100 or 1,000 continuous jobs are
// configured (issue #19).
//
//	go run ./bench/notify                 # 3 rounds, up to 2,000 commits or 15s per measurement
//	go run ./bench/notify -rounds 5 -commits 5000 -jobs 0,100,1000
//
// Two designs are measured side by side, alternating within each round:
//
//   - per job (sluice before issue #19): one LISTEN session per continuous
//     job, each registered on its own table's channel (one of them on the
//     written table's);
//   - shared (now): one serve.PGListener per database with one
//     subscription per job.
//
// PostgreSQL signals every session that listens in the database on each
// NOTIFY, so the first grows with the number of jobs and the second does
// not. The jobs' tables other than the written one are not created: only
// their channels matter (a listener registers on a channel with
// postgres.RegisterListener, exactly as serve does). The capture trigger
// notifies only while a session listens on the table's channel, so the
// 0-job line is the cost of capture alone.
//
// It runs against a throw-away cluster (bench/internal/pgcluster) with
// max_connections = 1200, so that the per-job design can hold 1,000
// sessions; it prints the median and p99 of the commit latency per design
// and job count (median over rounds, min–max across rounds) and the load
// average, and checks that every committed row reached the change log
// (count and sum of ids of the log's rows equal the table's).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicedata/sluice/bench/internal/pgcluster"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/serve"
	"github.com/sluicedata/sluice/sources/postgres"
)

var (
	rounds  = flag.Int("rounds", 3, "rounds; each measures every design and job count once, alternating")
	commits = flag.Int("commits", 2000, "one-row commits per measurement (at most)")
	budget  = flag.Duration("budget", 15*time.Second, "time per measurement: it stops after -commits commits or this long, with at least 50 commits")
	jobList = flag.String("jobs", "0,100,1000", "job counts")
)

func main() {
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "notify:", err)
		os.Exit(1)
	}
}

type key struct {
	design string
	jobs   int
}

type sample struct{ p50, p99 time.Duration }

func run(ctx context.Context) error {
	var counts []int
	for _, s := range strings.Split(*jobList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-jobs: %w", err)
		}
		counts = append(counts, n)
	}
	url, stopPG, err := pgcluster.Start(ctx, []string{"max_connections=1200", "fsync=off", "synchronous_commit=off"})
	if err != nil {
		return err
	}
	defer stopPG()
	r := &runner.Runner{Log: slog.New(slog.DiscardHandler)}
	defer r.Close()
	if err := r.ExecScript(ctx, url, "setup.sql", `CREATE TABLE app (id bigint PRIMARY KEY, v int NOT NULL);
ALTER TABLE app SET PROPERTIES ('change_tracking' = 'true');
CREATE TABLE STREAM app_s ON TABLE app WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');`, nil); err != nil {
		return err
	}
	app, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer app.Close(context.WithoutCancel(ctx))

	results := map[key][]sample{}
	next := int64(0)
	for round := 1; round <= *rounds; round++ {
		for _, n := range counts {
			designs := []string{"per job", "shared"}
			if n == 0 {
				designs = []string{"none"}
			}
			for _, d := range designs {
				release, err := listen(ctx, url, d, n)
				if err != nil {
					return fmt.Errorf("%s, %d jobs: %w", d, n, err)
				}
				s, err := measure(ctx, app, &next)
				release()
				if err != nil {
					return err
				}
				results[key{d, n}] = append(results[key{d, n}], s)
				fmt.Fprintf(os.Stderr, "round %d: %-7s %5d jobs: p50 %s p99 %s\n", round, d, n, ms(s.p50), ms(s.p99))
			}
		}
	}
	if err := check(ctx, app, next); err != nil {
		return err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("application one-row commit latency, up to %d commits or %s per measurement, %d rounds; load average %s\n", *commits, *budget, *rounds, strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Printf("| jobs | design | p50 median (min–max) | p99 median (min–max) |\n|---|---|---|---|\n")
	for _, n := range counts {
		for _, d := range []string{"none", "per job", "shared"} {
			ss := results[key{d, n}]
			if len(ss) == 0 {
				continue
			}
			fmt.Printf("| %d | %s | %s | %s |\n", n, d, stat(ss, func(s sample) time.Duration { return s.p50 }), stat(ss, func(s sample) time.Duration { return s.p99 }))
		}
	}
	return nil
}

// channel is the notify channel of job i's table; job 0 reads app.
func channel(i int) string {
	if i == 0 {
		return postgres.NotifyChannel("app")
	}
	return postgres.NotifyChannel(fmt.Sprintf("t%04d", i))
}

// listen sets up n jobs' listeners in design d and returns their release.
func listen(ctx context.Context, url, d string, n int) (func(), error) {
	switch d {
	case "none":
		return func() {}, nil
	case "shared":
		l := serve.NewPGListener(ctx, url, postgres.RegisterListeners, nil)
		subs := make([]serve.Waker, n)
		for i := range n {
			subs[i] = l.Subscribe(channel(i))
		}
		// Listening once every subscriber was woken by the first LISTEN.
		for _, s := range subs {
			select {
			case <-s.C():
			case <-time.After(time.Minute):
				return nil, fmt.Errorf("listener not ready")
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return func() { _ = l.Close() }, nil
	default: // per job
		conns := make([]*pgx.Conn, 0, n)
		release := func() {
			for _, c := range conns {
				_ = c.Close(context.WithoutCancel(ctx))
			}
		}
		for i := range n {
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				release()
				return nil, err
			}
			conns = append(conns, c)
			if err := postgres.RegisterListener(ctx, c, channel(i)); err != nil {
				release()
				return nil, err
			}
			if _, err := c.Exec(ctx, "LISTEN "+pgx.Identifier{channel(i)}.Sanitize()); err != nil {
				release()
				return nil, err
			}
		}
		return release, nil
	}
}

// measure times one-row autocommit INSERTs into app: *commits of them, or
// fewer when *budget is spent (at least 50).
func measure(ctx context.Context, app *pgx.Conn, next *int64) (sample, error) {
	lat := make([]time.Duration, 0, *commits)
	start := time.Now()
	for i := 0; i < *commits && (i < 50 || time.Since(start) < *budget); i++ {
		*next++
		t := time.Now()
		if _, err := app.Exec(ctx, `INSERT INTO app (id, v) VALUES ($1, 1)`, *next); err != nil {
			return sample{}, err
		}
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	return sample{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}, nil
}

// check verifies that the change log holds every committed row once.
func check(ctx context.Context, app *pgx.Conn, n int64) error {
	var rows, sum, logRows, logSum int64
	if err := app.QueryRow(ctx, `SELECT count(*), coalesce(sum(id), 0) FROM app`).Scan(&rows, &sum); err != nil {
		return err
	}
	want := n * (n + 1) / 2
	if rows != n || sum != want {
		return fmt.Errorf("app holds %d rows (id sum %d), want %d (%d)", rows, sum, n, want)
	}
	var logTable string
	if err := app.QueryRow(ctx, `SELECT format('sluice.%I', log_table) FROM sluice.tracking`).Scan(&logTable); err != nil {
		return fmt.Errorf("find the change log of app: %w", err)
	}
	if err := app.QueryRow(ctx, `SELECT count(*), coalesce(sum(id), 0) FROM `+logTable).Scan(&logRows, &logSum); err != nil {
		return fmt.Errorf("read the change log %s: %w", logTable, err)
	}
	if logRows != n || logSum != want {
		return fmt.Errorf("change log holds %d rows (id sum %d), want %d (%d)", logRows, logSum, n, want)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func stat(ss []sample, f func(sample) time.Duration) string {
	v := make([]time.Duration, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	slices.Sort(v)
	return fmt.Sprintf("%s (%s–%s)", ms(v[len(v)/2]), ms(v[0]), ms(v[len(v)-1]))
}

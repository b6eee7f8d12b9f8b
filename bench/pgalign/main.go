// Command pgalign measures what an application's statements wait while a
// sluice run brings a PostgreSQL change log in line after a column DDL:
// a table of -rows rows is tracked with a STANDARD stream and a merge job
// into a SQLite file, the job runs once, then the application adds a
// column and updates every row three times (-rows × 6 change-log rows
// captured as JSON). One session then UPDATEs and another SELECTs one
// random row every 2 ms while `BIN run` brings the log in line and reads;
// the run's time and each session's statement latency (p50, p99, max)
// are printed. Run it with two sluice binaries, alternating, to compare:
//
//	go build -o /tmp/new ./cmd/sluice; (cd OLD && go build -o /tmp/old ./cmd/sluice)
//	for i in 1 2 3; do go run ./bench/pgalign -sluice /tmp/old; go run ./bench/pgalign -sluice /tmp/new; done
//
// It creates (and drops first) the database pgalign on -pg's server.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/bench/internal/machine"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgalign:", err)
		os.Exit(1)
	}
}

func main() {
	binFlag := flag.String("sluice", "sluice", "the sluice binary to run")
	rowsFlag := flag.Int("rows", 20000, "rows of the table")
	server := flag.String("pg", "postgres://postgres@127.0.0.1:5432/postgres", "server URL (its database is used to create pgalign)")
	flag.Parse()
	bin, rows := *binFlag, *rowsFlag
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, *server)
	must(err)
	_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS pgalign WITH (FORCE)")
	_, err = admin.Exec(ctx, "CREATE DATABASE pgalign")
	must(err)
	cfg := admin.Config()
	admin.Close(ctx)
	u := fmt.Sprintf("postgres://%s@%s:%d/pgalign", cfg.User, cfg.Host, cfg.Port)
	if cfg.Password != "" {
		u = fmt.Sprintf("postgres://%s:%s@%s:%d/pgalign", cfg.User, cfg.Password, cfg.Host, cfg.Port)
	}
	c, err := pgx.Connect(ctx, u)
	must(err)
	for _, q := range []string{
		"CREATE TABLE t (id int PRIMARY KEY, v int, pad text)",
		fmt.Sprintf("INSERT INTO t SELECT i, i, repeat('x', 100) FROM generate_series(1, %d) i", rows),
	} {
		_, err = c.Exec(ctx, q)
		must(err)
	}
	sl := func(args ...string) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			must(fmt.Errorf("%s %s: %w: %s", bin, args[0], err, out))
		}
	}
	sl("sql", "--conn", u, "ALTER TABLE t SET PROPERTIES ('change_tracking' = 'true')")
	sl("sql", "--conn", u, "CREATE TABLE STREAM s ON TABLE t WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD')")
	dir, _ := os.MkdirTemp("", "lat")
	defer os.RemoveAll(dir)
	job := dir + "/j.yaml"
	must(os.WriteFile(job, []byte(fmt.Sprintf("name: j\nconnection: '%s'\nsource: s\nsink: {table: tgt, mode: merge, keys: [id], connection: 'sqlite:%s/t.db'}\n", u, dir)), 0o644))
	sl("run", job)
	for _, q := range []string{"ALTER TABLE t ADD COLUMN a int", "UPDATE t SET v = v + 1, a = id", "UPDATE t SET v = v + 1", "UPDATE t SET v = v + 1"} {
		_, err = c.Exec(ctx, q)
		must(err)
	}
	var stop atomic.Bool
	var mu sync.Mutex
	lat := map[string][]time.Duration{}
	var wg sync.WaitGroup
	for _, kind := range []string{"write", "read"} {
		conn, err := pgx.Connect(ctx, u)
		must(err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				id := rand.Intn(rows) + 1
				q := "UPDATE t SET v = v + 1 WHERE id = $1"
				if kind == "read" {
					q = "SELECT v FROM t WHERE id = $1"
				}
				st := time.Now()
				_, err := conn.Exec(ctx, q, id)
				must(err)
				d := time.Since(st)
				mu.Lock()
				lat[kind] = append(lat[kind], d)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	st := time.Now()
	out, err := exec.Command(bin, "run", job).CombinedOutput()
	runTime := time.Since(st)
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		must(fmt.Errorf("%s run: %w: %s", bin, err, out))
	}
	fmt.Printf("load average %s\n", machine.LoadAvg())
	for _, kind := range []string{"write", "read"} {
		l := lat[kind]
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		fmt.Printf("%s: run %.2fs; %s n=%d p50=%.1fms p99=%.1fms max=%.1fms\n", bin, runTime.Seconds(), kind, len(l),
			ms(l[len(l)/2]), ms(l[len(l)*99/100]), ms(l[len(l)-1]))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
